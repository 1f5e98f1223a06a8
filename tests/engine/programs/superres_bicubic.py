"""Single-image super-resolution in the VDSR style: bicubic upsampling, a residual
convolutional refiner, L1 loss; the low-resolution input is made by area
downsampling."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
refiner = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))
opt = torch.optim.Adam(refiner.parameters(), lr=1e-3)
high = torch.rand(4, 1, 12, 12)
low = F.interpolate(high, scale_factor=0.5, mode="area")
for step in range(3):
    up = F.interpolate(low, scale_factor=2, mode="bicubic", align_corners=False)
    pred = up + refiner(up)
    loss = F.l1_loss(pred, high)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(step, round(loss.item(), 5))
