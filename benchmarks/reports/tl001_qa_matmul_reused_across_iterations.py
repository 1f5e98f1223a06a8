# fixture: y = t @ a is computed once before the loop (t and a require grad) and each iteration builds a fresh x_out = t @ (x + y) and loss from it: the reporter expected a new graph per iteration, but every backward walks the one MvBackward node of y, freed by the first
# source: https://discuss.pytorch.org/t/backpropagation-graph-is-reused-while-it-shouldnt/24554
# expect: TL001 14 torch strict
# torch: fails 19 node 14
# strict: fails 19 node 14

import torch

measure = torch.nn.MSELoss()

x = torch.tensor([1, 0], dtype=torch.float64)
t = torch.eye(2, dtype=torch.float64, requires_grad=True)
a = torch.ones(2, dtype=torch.float64, requires_grad=True)
y = t @ a

for __ in range(2):
    x_out = t @ (x + y)  # a new graph each time, but it hangs off the same y
    loss = measure(x_out, x)
    loss.backward()
    print(loss.item(), a.grad)
