"""decoder-only 语言模型：形状与模型目录，一层的算子，prefill 与 decode，量化，服务。

新增一个模型只需改 ``data/models.toml``。
"""
