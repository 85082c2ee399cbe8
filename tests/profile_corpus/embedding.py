"""Token and position embeddings looked up, summed and trained a step with SGD."""

import torch
from torch import nn

torch.manual_seed(0)
vocab, dim, seq = 1000, 64, 16
tok = nn.Embedding(vocab, dim)
pos = nn.Embedding(seq, dim)
opt = torch.optim.SGD([*tok.parameters(), *pos.parameters()], lr=0.1)

ids = torch.randint(0, vocab, (4, seq))
h = tok(ids) + pos(torch.arange(seq))
loss = h.pow(2).mean()
loss.backward()
opt.step()
