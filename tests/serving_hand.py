"""Llama-3-8B on an H100 SXM, worked by hand from its config.json and the datasheet: the
numbers the serving chapter's tests check its steps against."""

P, B = 989.4e12, 3.35e12  # BF16 dense peak, HBM3 bandwidth
PARAMS, VOCAB, HIDDEN = 8_030_261_248, 128_256, 4096
W = 2 * (PARAMS - VOCAB * HIDDEN)  # 15.01e9 B read a step
LINEAR = 32 * (4096 * (4096 + 1024 + 1024 + 4096) + 3 * 4096 * 14336)  # 6.98e9
HEAD = 2 * HIDDEN * VOCAB  # the LM head's FLOPs a token that emits
M_KV = 2 * 32 * 8 * 128 * 2  # 131072 B
ATT = 4 * 32 * 128 * 32  # attention FLOPs a query a key, all layers
CTX = 1000 + 200 // 2  # the chapter's mean context
