# fixture: tutorial RNN regressor (sin -> cos) passes h_state from one training step to the next; the reporter removed `h_state = h_state.data`, so step 1 backwards into step 0's freed RNN graph
# source: https://github.com/MorvanZhou/PyTorch-Tutorial/issues/57
# expect: TL005 40 torch strict
# torch: fails 43 node 23
# strict: fails 43 node 23

import math

import torch
import torch.nn as nn

TIME_STEP = 5
LR = 0.02


class RNN(nn.Module):
    def __init__(self):
        super(RNN, self).__init__()
        self.rnn = nn.RNN(input_size=1, hidden_size=8, num_layers=1, batch_first=True)
        self.out = nn.Linear(8, 1)

    def forward(self, x, h_state):
        r_out, h_state = self.rnn(x, h_state)
        outs = []
        for time_step in range(r_out.size(1)):
            outs.append(self.out(r_out[:, time_step, :]))
        return torch.stack(outs, dim=1), h_state


torch.manual_seed(0)
rnn = RNN()
optimizer = torch.optim.Adam(rnn.parameters(), lr=LR)
loss_func = nn.MSELoss()

h_state = None
for step in range(3):
    steps = torch.linspace(step * math.pi, (step + 1) * math.pi, TIME_STEP)
    x = torch.sin(steps).view(1, TIME_STEP, 1)
    y = torch.cos(steps).view(1, TIME_STEP, 1)
    prediction, h_state = rnn(x, h_state)  # h_state keeps this step's graph for the next step
    loss = loss_func(prediction, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
