"""Two losses on one forward, with optimizer.step() between their backwards: the
second backward finds the weights modified in place."""
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
out = model(torch.randn(4, 3))
loss_a = out[:, 0].pow(2).mean()
loss_b = out[:, 1].abs().mean()
opt.zero_grad()
loss_a.backward(retain_graph=True)
opt.step()
loss_b.backward()
