"""设备：每个设备的全部上限（按计算单元与精度、按存储层级、按互连）及其出处。

新增一个 GPU 只需改 ``data/hardware.toml``。:mod:`.device` 定义设备的类型，
:mod:`.catalog` 读入目录，:mod:`.kernels` 给出与设备有关的 kernel 事实（片上存储、tile）。
"""
