"""A small MLP classifier: Linear, GELU, LayerNorm, cross-entropy, AdamW; two training steps."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(
    nn.Linear(64, 128),
    nn.GELU(),
    nn.LayerNorm(128),
    nn.Linear(128, 10),
)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
x = torch.randn(32, 64)
y = torch.randint(0, 10, (32,))

for _ in range(2):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
