# fixture: two outputs are raised from one shared intermediate (z = 2 * (x + y); y1 = z ** 2; y2 = z ** 3) and backwarded one after the other: the first backward frees the shared part, the second fails
# source: https://devgem.io/posts/understanding-pytorch-s-retain-graph-true-error
# expect: TL002 16 torch strict
# torch: fails 16 node 12
# strict: fails 16 node 12

import torch

x = torch.tensor([2.0], requires_grad=True)
y = torch.tensor([3.0], requires_grad=True)
f = x + y
z = 2 * f
y1 = z ** 2
y2 = z ** 3
y1.backward()
y2.backward()
print(x.grad, y.grad)
