# fixture: the fix the maintainer committed: the running totals add `loss.item()` and `MSE.item()`
# source: https://github.com/samuelyu2002/ImVisible/issues/2
# torch: ok
# strict: ok

import torch
import torch.nn as nn
import torch.nn.functional as F


class LYTNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(12, 16), nn.ReLU())
        self.classes = nn.Linear(16, 5)
        self.direction = nn.Linear(16, 4)

    def forward(self, x):
        h = self.features(x)
        return self.classes(h), self.direction(h)


def my_loss(pred_classes, pred_direc, points, mode):
    MSE = F.mse_loss(pred_direc, points)
    cross_entropy = F.cross_entropy(pred_classes, mode)
    loss = 0.5 * MSE + 0.5 * cross_entropy
    return loss, MSE, cross_entropy


torch.manual_seed(0)
BATCH_SIZE = 4
MAX_EPOCHS = 2
train_dataloader = [{"image": torch.randn(BATCH_SIZE, 12), "mode": torch.randint(0, 5, (BATCH_SIZE,)),
                     "points": torch.rand(BATCH_SIZE, 4)} for _ in range(3)]
net = LYTNet()
loss_fn = my_loss
optimizer = torch.optim.Adam(net.parameters(), lr=0.001, weight_decay=0.000005)

for epoch in range(MAX_EPOCHS):
    net.train()
    running_loss = 0.0
    running_loss_MSE = 0.0
    train_correct = 0
    train_total = 0
    for j, data in enumerate(train_dataloader, 0):
        optimizer.zero_grad()
        train_total += 1
        images, mode, points = data["image"], data["mode"], data["points"]
        pred_classes, pred_direc = net(images)
        _, predicted = torch.max(pred_classes, 1)
        train_correct += (predicted == mode).sum().item()
        loss, MSE, cross_entropy = loss_fn(pred_classes, pred_direc, points, mode)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
        running_loss_MSE += MSE.item()
    print("Epoch: " + str(epoch + 1))
    print("Average training loss: " + str(running_loss / (j + 1)))
    print("Average training MSE loss: " + str(running_loss_MSE / (j + 1)))
    print("Training accuracy: " + str(train_correct / train_total / BATCH_SIZE))
