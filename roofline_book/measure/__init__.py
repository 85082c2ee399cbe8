"""测量：在真实硬件上计时，把结果写成 run file，与模型对照，并检验书中的结论。

四个子包，自下而上：``bench`` （要测什么、怎么计时）、``runs`` （run file 及其记录）、
``judge`` （从 run file 判断：测得的上限、预测、结论）、``profile`` （profiler 的结果归到
算子模型上）；``run`` 把一次 benchmark 跑完并写下 run file，``collectives`` 测集合通信。

torch 在需要它的函数内部才导入，所以导入这些模块都很轻；包本身什么也不导入。
"""
