"""A custom Function's saved tensors are freed by the first backward like any other's:
calling backward again for a second loss term fails."""
import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


w = torch.randn(3, requires_grad=True)
y = Square.apply(w)
loss_a = y.sum()
loss_b = (y * 2).sum()
loss_a.backward()
loss_b.backward()
