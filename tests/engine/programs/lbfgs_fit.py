"""Curve fitting with L-BFGS and a closure that runs a backward per evaluation."""
import torch

w = torch.zeros(3, requires_grad=True)
x = torch.linspace(-1, 1, 20)
y = 1 + 2 * x - 0.5 * x ** 2
opt = torch.optim.LBFGS([w], lr=0.5, max_iter=10)


def closure():
    opt.zero_grad()
    loss = ((w[0] + w[1] * x + w[2] * x ** 2 - y) ** 2).mean()
    loss.backward()
    return loss


for _ in range(2):
    opt.step(closure)
print(w.detach())
