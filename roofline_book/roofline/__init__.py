"""roofline 模型：一个代价在一个设备上的时间下界（:mod:`.bounds`，唯一的 bound 规则），以及
ridge point、可达性能等只看一个上限的量（:mod:`.roofs`）。"""
