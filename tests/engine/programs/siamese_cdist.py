"""Metric learning: a shared encoder, pairwise distances with cdist, a contrastive
loss, Adagrad, and gradient clipping by value."""
import torch
import torch.nn as nn

encoder = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.Adagrad(encoder.parameters(), lr=0.05)
for step in range(3):
    anchors, others = torch.randn(5, 6), torch.randn(7, 6)
    same = torch.randint(0, 2, (5, 7)).float()
    d = torch.cdist(encoder(anchors), encoder(others))
    loss = (same * d.pow(2) + (1 - same) * torch.clamp(1.0 - d, min=0).pow(2)).mean()
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_value_(encoder.parameters(), 1.0)
    opt.step()
print(loss.item())
