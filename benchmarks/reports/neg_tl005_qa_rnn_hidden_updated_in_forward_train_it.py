# fixture: the one-step recurrent nn.Module from the thread with the usual answer applied: train_it() detaches the hidden state kept on self before the next forward, so each call backwards only its own step
# source: https://discuss.pytorch.org/t/runtimeerror-trying-to-backward-through-the-graph-a-second-time-but-the-buffers-have-already-been-freed-specify-retain-graph-true-when-calling-backward-the-first-time/6795
# torch: ok
# strict: ok

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
        self.hidden = torch.tanh(self.i2h(x) + self.h2h(self.hidden))
        return self.h2o(self.hidden)

    def train_it(self, x, y):
        self.hidden = self.hidden.detach()  # cut the link to the previous call's graph
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
