# fixture: the page's own fix for the two powers of one shared intermediate: retain_graph=True on the first backward makes PyTorch run it, but its only purpose is to backward two losses in a row (adding them walks the shared part once), and a strict tape has no retain_graph
# source: https://devgem.io/posts/understanding-pytorch-s-retain-graph-true-error
# expect: TL006 15 strict
# torch: ok
# strict: fails 16 node 12

import torch

x = torch.tensor([2.0], requires_grad=True)
y = torch.tensor([3.0], requires_grad=True)
f = x + y
z = 2 * f
y1 = z ** 2
y2 = z ** 3
y1.backward(retain_graph=True)
y2.backward()
print(x.grad, y.grad)
