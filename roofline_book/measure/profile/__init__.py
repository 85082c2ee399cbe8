"""profiler 的结果按每个 aten op 的 schema 归到本包的算子模型上。"""
