"""A 3-D CNN classifying small volumes (as for CT patches): Conv3d, BatchNorm3d,
MaxPool3d, AdaptiveAvgPool3d, AdamW and a cosine schedule."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class VoxelNet(nn.Module):
    def __init__(self, classes=2):
        super().__init__()
        self.conv1 = nn.Conv3d(1, 4, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm3d(4)
        self.conv2 = nn.Conv3d(4, 8, kernel_size=(3, 3, 1), stride=(1, 1, 1), padding=(1, 1, 0))
        self.pool = nn.MaxPool3d(2)
        self.head = nn.Sequential(nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(8, classes))

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        return self.head(F.relu(self.conv2(x)))


volumes = torch.randn(6, 1, 6, 6, 4)
labels = torch.tensor([0, 1, 0, 1, 1, 0])
model = VoxelNet()
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
for step in range(4):
    opt.zero_grad()
    loss = F.cross_entropy(model(volumes), labels)
    loss.backward()
    opt.step()
    sched.step()
print(step, round(loss.item(), 4))
