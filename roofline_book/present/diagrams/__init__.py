"""示意图：GPU、kernel、推理与多卡切分的结构，由包里的数字画出。

与 :mod:`roofline_book.present.plotting` 的数据图不同，这里的图画的是结构：分块与条带、
SM 与存储层级、KV cache、ring 的每一步。图中的数（SM 个数、带宽、分块数、每个 token 的字节数）
都取自模型与设备目录，数字变了，图也跟着变。每个函数接受一个可选的 ``ax``，
不给就自己建一张大小合适的图，返回所在的 ``Figure``。

模块：:mod:`.hardware` （芯片、SM、存储层级、wave），:mod:`.kernels` （工厂模型、分块、cluster、
融合），:mod:`.flash` （FlashAttention 的分块），:mod:`.inference` （KV cache、prefill 与
decode），:mod:`.parallel` （ring 集合通信、TP/DP/PP/EP 切分），:mod:`.deepseek` （MLA 共用的
latent 缓存、MoE 层的 dispatch 与 combine、部署单元）；共用的画法在 :mod:`._draw`。
"""
