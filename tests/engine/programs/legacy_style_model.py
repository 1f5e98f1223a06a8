"""Pre-1.0 style code: Variables, legacy tensor constructors, Parameters made from
torch.Tensor(...), init in place, scatter_add for a segment sum, size_average."""
import torch
import torch.nn as nn
from torch.autograd import Variable


class Bilinear(nn.Module):
    def __init__(self, n, m):
        super().__init__()
        self.weight = nn.Parameter(torch.Tensor(n, m))
        self.bias = nn.Parameter(torch.Tensor(m))
        nn.init.xavier_uniform_(self.weight)
        self.bias.data.zero_()

    def forward(self, x):
        return x.mm(self.weight) + self.bias


model = Bilinear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.MSELoss(size_average=False)
segments = torch.LongTensor([0, 0, 1, 2, 2, 2])
for step in range(3):
    x = Variable(torch.randn(6, 4))
    per_row = model(x).sum(1)
    sums = torch.zeros(3).scatter_add(0, segments, per_row)
    loss = criterion(sums, Variable(torch.FloatTensor([1.0, -1.0, 0.5])))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(loss.item())
