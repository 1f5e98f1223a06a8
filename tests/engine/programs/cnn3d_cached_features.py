"""A 3-D segmentation head trained on features a frozen-looking encoder computed once,
outside the loop, but with the encoder's weights still requiring grad: the second
step's backward walks the encoder's freed graph."""
import torch
import torch.nn as nn
import torch.nn.functional as F

encoder = nn.Sequential(nn.Conv3d(1, 4, 3, padding=1), nn.ReLU(), nn.AvgPool3d(2))
decoder = nn.ConvTranspose3d(4, 1, kernel_size=2, stride=2)
opt = torch.optim.SGD(decoder.parameters(), lr=0.1)

volume = torch.randn(2, 1, 4, 4, 4)
mask = (torch.rand(2, 1, 4, 4, 4) > 0.5).float()
features = encoder(volume)
for step in range(3):
    opt.zero_grad()
    logits = decoder(features)
    loss = F.binary_cross_entropy_with_logits(logits, mask)
    loss.backward()
    opt.step()
