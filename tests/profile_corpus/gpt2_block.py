"""A GPT-2-style block and LM head, one training step in FP32, as the profiling review wrote it.

LayerNorm -> QKV Linear -> causal SDPA -> proj -> residual -> LayerNorm -> Linear(256, 1024)
-> GELU -> Linear(1024, 256) -> residual -> LayerNorm -> LM head (vocabulary 512, no bias)
-> cross-entropy -> backward; B=2, T=128, d=256, 4 heads. The step runs once to warm up, then
inside record_function("step").
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
B, T, D, H, V = 2, 128, 256, 4, 512


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2, self.ln_f = nn.LayerNorm(D), nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.head = nn.Linear(D, V, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=-1)
        q, k, v = (z.view(B, T, H, D // H).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, D))
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return self.head(self.ln_f(x))


model = Block()
x = torch.randn(B, T, D)
targets = torch.randint(0, V, (B, T))


def step() -> None:
    logits = model(x)
    F.cross_entropy(logits.view(B * T, V), targets.view(-1)).backward()


step()
with torch.profiler.record_function("step"):
    step()
