"""One causal self-attention block, forward and backward, with fused AdamW."""

import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))


torch.manual_seed(0)
block = Attention(64, 4)
opt = torch.optim.AdamW(block.parameters(), lr=1e-3, fused=True)
x = torch.randn(2, 32, 64)
for _ in range(2):
    opt.zero_grad(set_to_none=True)
    out = block(x)
    out.square().mean().backward()
    opt.step()
