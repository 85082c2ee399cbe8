"""设备：每个设备的全部上限（按计算单元与精度、按存储层级、按互连）及其出处。

一块设备的一切事实都在目录的数据文件 ``data/hardware.toml`` 里：新增一个 GPU 只改这个文件。
读入目录、按名称查找设备见 :mod:`roofline_book.devices.catalog`。
"""
