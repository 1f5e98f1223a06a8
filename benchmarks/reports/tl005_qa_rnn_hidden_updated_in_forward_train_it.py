# fixture: a one-step recurrent nn.Module keeps its hidden state on self, forward() overwrites it from the previous value, and the module's own train_it() backwards every call: the second call walks the first call's freed graph through self.hidden
# source: https://discuss.pytorch.org/t/runtimeerror-trying-to-backward-through-the-graph-a-second-time-but-the-buffers-have-already-been-freed-specify-retain-graph-true-when-calling-backward-the-first-time/6795
# expect: TL005 27 torch strict
# torch: fails 30 node 23
# strict: fails 30 node 23

import torch
import torch.nn as nn


class OneStepRNN(nn.Module):
    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        self.i2h = nn.Linear(n_in, n_hidden)
        self.h2h = nn.Linear(n_hidden, n_hidden)
        self.h2o = nn.Linear(n_hidden, n_out)
        self.hidden = torch.zeros(1, n_hidden)
        self.loss = nn.MSELoss()
        self.optimizer = torch.optim.SGD(self.parameters(), lr=0.05)

    def forward(self, x):
        # one step of the recurrence: the new hidden state is kept for the next call
        self.hidden = torch.tanh(self.i2h(x) + self.h2h(self.hidden))
        return self.h2o(self.hidden)

    def train_it(self, x, y):
        prediction = self(x)
        loss = self.loss(prediction, y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


torch.manual_seed(0)
net = OneStepRNN(3, 4, 1)
for step in range(3):
    x = torch.randn(1, 3)
    y = torch.randn(1, 1)
    print(step, net.train_it(x, y))
