"""测量：在真实硬件上计时、与模型对照，并检验书中的结论。

每个模块一件事：

- :mod:`~roofline_book.measure.registry`：case 是什么；算子登记表。
- :mod:`~roofline_book.measure.cases`：每个做 benchmark 的算子，各登记一次。
- :mod:`~roofline_book.measure.suites`：一次 run 测哪些尺寸。
- :mod:`~roofline_book.measure.timing`：CPU 与 CUDA 计时；``Timing`` 保留全部样本。
- :mod:`~roofline_book.measure.machine`：设备、cache、内存与软件版本。
- :mod:`~roofline_book.measure.run`：每个 case 先检查结果、再计时，汇成一次 run。
- :mod:`~roofline_book.measure.records`：run file 的内容写成冻结的 dataclass（``Run``、``Entry``）；
  :mod:`~roofline_book.measure.runparts` 是其中描述机器的部分（设备、上限、稳定性），
  :mod:`~roofline_book.measure.schema` 是记录类与 JSON 之间的读写和由它生成的 schema。
- :mod:`~roofline_book.measure.runfile`：run file 的格式，读与写。
- :mod:`~roofline_book.measure.claims`：结论清单，依据一次 run 来判定。
- :mod:`~roofline_book.measure.report`：把一次 run 整理成书中展示的样子。

torch 在需要它的函数内部才导入，所以导入这些模块都很轻。包本身什么也不导入：
``from roofline_book.measure import runfile`` 只加载它点名的模块。
"""
