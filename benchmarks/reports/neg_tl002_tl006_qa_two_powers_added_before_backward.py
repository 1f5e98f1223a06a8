# fixture: the two powers of one shared intermediate added and backwarded once: the same gradients as the page's retain_graph fix, with one walk of the shared part
# source: https://devgem.io/posts/understanding-pytorch-s-retain-graph-true-error
# torch: ok
# strict: ok

import torch

x = torch.tensor([2.0], requires_grad=True)
y = torch.tensor([3.0], requires_grad=True)
f = x + y
z = 2 * f
y1 = z ** 2
y2 = z ** 3
(y1 + y2).backward()
print(x.grad, y.grad)
