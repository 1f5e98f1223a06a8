# fixture: fix of the fMRI LSTM report: forward no longer feeds the stored (h, c) back into the LSTM, so no batch reaches an earlier batch's graph
# source: https://github.com/sgadgil6/cnslab_fmri/issues/4
# torch: ok
# strict: ok

import torch
import torch.nn as nn

BATCH = 4


class fMRI_LSTM(nn.Module):
    def __init__(self, hidden_dim, input_dim):
        super(fMRI_LSTM, self).__init__()
        self.hidden_dim = hidden_dim
        self.lstm = nn.LSTM(input_dim, hidden_dim, num_layers=1, batch_first=True)
        self.linear = nn.Linear(hidden_dim, 1)
        self.hidden = self.init_hidden()
        self.activate = nn.Sigmoid()

    def init_hidden(self):
        return (torch.randn(1, BATCH, self.hidden_dim), torch.randn(1, BATCH, self.hidden_dim))

    def forward(self, x):
        lstm_out, self.hidden = self.lstm(x)  # the fix: no state passed in, every batch starts from zeros
        last = lstm_out[:, -1, :]
        return self.activate(self.linear(last))


def train(model, batches, epochs=1):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.BCELoss()
    for epoch in range(epochs):
        for x, y in batches:
            optimizer.zero_grad()
            out = model(x)
            loss = criterion(out, y)
            loss.backward()
            optimizer.step()
            print(epoch, loss.item())


torch.manual_seed(0)
model = fMRI_LSTM(hidden_dim=6, input_dim=5)
batches = [(torch.randn(BATCH, 7, 5), torch.randint(0, 2, (BATCH, 1)).float()) for _ in range(3)]
train(model, batches)
