"""A regression step that imports its model from a sibling module and prints as it goes."""

import torch
from model import batch, make_model

torch.manual_seed(0)
net = make_model(32)
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
x, y = batch(16, 32)
for epoch in range(3):
    loss = torch.nn.functional.mse_loss(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
