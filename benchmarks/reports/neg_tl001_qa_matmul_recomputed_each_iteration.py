# fixture: the thread's working variant: t @ a is recomputed inside the loop, so each backward walks only the graph its own iteration built
# source: https://discuss.pytorch.org/t/backpropagation-graph-is-reused-while-it-shouldnt/24554
# torch: ok
# strict: ok

import torch

measure = torch.nn.MSELoss()

x = torch.tensor([1, 0], dtype=torch.float64)
t = torch.eye(2, dtype=torch.float64, requires_grad=True)
a = torch.ones(2, dtype=torch.float64, requires_grad=True)

for __ in range(2):
    x_out = t @ (x + t @ a)
    loss = measure(x_out, x)
    loss.backward()
    print(loss.item(), a.grad)
