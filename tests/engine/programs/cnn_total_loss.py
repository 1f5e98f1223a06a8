"""Logging the epoch loss with `total_loss += loss` keeps every batch's graph alive
(memory grows, nothing fails)."""
import torch
import torch.nn as nn

model = nn.Sequential(nn.Conv1d(2, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool1d(1),
                      nn.Flatten(), nn.Linear(4, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.MSELoss()
total_loss = 0
for step in range(4):
    xb, yb = torch.randn(8, 2, 10), torch.randn(8, 1)
    loss = loss_fn(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    total_loss += loss
print("epoch loss", total_loss.item() / 4)
