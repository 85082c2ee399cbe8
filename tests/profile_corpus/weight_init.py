"""A model built and initialised by hand (normal, uniform, zeros), run with RMSNorm and dropout."""

import math

import torch
from torch import nn

torch.manual_seed(0)
dim, hidden = 64, 256
w_in = nn.Parameter(torch.empty(hidden, dim))
w_out = nn.Parameter(torch.empty(dim, hidden))
bias = nn.Parameter(torch.empty(hidden))
nn.init.normal_(w_in, std=0.02)
nn.init.uniform_(w_out, -1 / math.sqrt(hidden), 1 / math.sqrt(hidden))
nn.init.zeros_(bias)
norm = nn.RMSNorm(dim)
drop = nn.Dropout(0.1)

x = torch.randn(8, 16, dim)
h = nn.functional.silu(nn.functional.linear(norm(x), w_in, bias))
y = x + drop(h) @ w_out.t()
y.sum().backward()
