"""A small CNN classifier: Conv2d/BatchNorm2d/MaxPool2d/Dropout, DataLoader, SGD with
momentum and a StepLR schedule."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(16 * 2 * 2, classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.pool(F.relu(self.conv2(x)))
        x = self.drop(torch.flatten(x, 1))
        return self.fc(x)


data = TensorDataset(torch.randn(24, 1, 8, 8), torch.randint(0, 3, (24,)))
loader = DataLoader(data, batch_size=8, shuffle=True)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
for epoch in range(2):
    model.train()
    for xb, yb in loader:
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
    sched.step()
model.eval()
with torch.no_grad():
    acc = (model(data.tensors[0]).argmax(1) == data.tensors[1]).float().mean()
print(epoch, loss.item(), acc.item())
