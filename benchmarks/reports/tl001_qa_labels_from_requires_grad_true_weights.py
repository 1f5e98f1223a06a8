# fixture: a from-scratch linear-regression notebook builds its synthetic labels Y = X @ true_W + true_b with true_W and true_b created requires_grad=True; a hand-written DataLoader slices Y per batch, so every batch's loss hangs off the one MmBackward node of Y and the second batch's backward fails
# source: https://github.com/zhangyu2234/Deep-learning-by-hand
# expect: TL001 17 torch strict
# torch: fails 60 node 17
# strict: fails 60 node 17

import torch

torch.manual_seed(0)
num_samples = 40
num_features = 2
num_hiddens = 2
# train samples
X = torch.randn((num_samples, num_features), dtype=torch.float32)
true_W = torch.randn((num_hiddens, 1), requires_grad=True, dtype=torch.float32)
true_b = torch.randn(1, requires_grad=True, dtype=torch.float32)
Y = torch.mm(X, true_W) + true_b


# what the notebook imports from utils.Common
def relu(x):
    return torch.clamp(x, min=0)


def loss(y_hat, y):
    return ((y_hat - y.reshape(y_hat.shape)) ** 2 / 2).sum()


def sgd(params, lr, batch_size):
    with torch.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()


class DataLoader:
    def __init__(self, features, labels, batch_size, shuffle=False):
        self.features, self.labels = features, labels
        self.batch_size, self.shuffle = batch_size, shuffle

    def __iter__(self):
        n = len(self.features)
        order = torch.randperm(n) if self.shuffle else torch.arange(n)
        for i in range(0, n, self.batch_size):
            idx = order[i : i + self.batch_size]
            yield self.features[idx], self.labels[idx]


def fc(x, w, b):
    return relu(torch.mm(x, w) + b)


W = torch.normal(0, 0.01, size=(num_hiddens, 1), requires_grad=True)
b = torch.zeros(1, requires_grad=True)
batch_size, lr, num_epochs = 20, 0.01, 2
dataloader = DataLoader(X, Y, batch_size, shuffle=True)
for epoch in range(num_epochs):
    for x, y in dataloader:
        l = loss(fc(x, W, b), y)
        l.backward()
        sgd([W, b], lr, batch_size)
    print(epoch, l.item())
