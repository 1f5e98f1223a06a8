"""An MLP whose activation is a custom autograd.Function (a clipped ReLU)."""
import torch
import torch.nn as nn


class ClippedReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, cap):
        ctx.save_for_backward(x)
        ctx.cap = cap
        return x.clamp(min=0, max=cap)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        mask = ((x > 0) & (x < ctx.cap)).float()
        return grad_out * mask, None


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(5, 16), nn.Linear(16, 1)

    def forward(self, x):
        return self.l2(ClippedReLU.apply(self.l1(x), 6.0))


model = MLP()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(4):
    x, y = torch.randn(8, 5), torch.randn(8, 1)
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(loss.item())
