# fixture: the stacked-LSTM regressor from the question as the reporter ran it: train() re-creates both (h, c) tuples on the model before every batch, so each backward walks only its own batch
# source: https://51tsys.com/article/14967.html
# torch: ok
# strict: ok

import torch
import torch.nn as nn


class LSTMmodel(nn.Module):
    def __init__(self, input_size, hidden_size_1, hidden_size_2, out_size):
        super().__init__()
        self.hidden_size_1 = hidden_size_1
        self.hidden_size_2 = hidden_size_2
        self.input_size = input_size
        self.lstm_1 = nn.LSTM(input_size, hidden_size_1)
        self.lstm_2 = nn.LSTM(hidden_size_1, hidden_size_2)
        self.linear = nn.Linear(hidden_size_2, out_size)
        self.hidden_1 = (torch.zeros(1, 1, hidden_size_1), torch.zeros(1, 1, hidden_size_1))
        self.hidden_2 = (torch.zeros(1, 1, hidden_size_2), torch.zeros(1, 1, hidden_size_2))

    def forward(self, seq):
        lstm_out_1, self.hidden_1 = self.lstm_1(seq.view(-1, 1, self.input_size), self.hidden_1)
        lstm_out_2, self.hidden_2 = self.lstm_2(lstm_out_1, self.hidden_2)
        pred = self.linear(lstm_out_2.view(len(seq), -1))
        return pred


def train(model, training_data, window):
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    model.train()
    epochs = 2
    for epoch in range(epochs):
        # each batch is one window of the trajectory
        for bat in range(0, len(training_data) - window, window):
            seq = training_data[bat : bat + window]
            target = training_data[bat + 1 : bat + window + 1]
            model.hidden_1 = (torch.zeros(1, 1, model.hidden_size_1), torch.zeros(1, 1, model.hidden_size_1))
            model.hidden_2 = (torch.zeros(1, 1, model.hidden_size_2), torch.zeros(1, 1, model.hidden_size_2))
            optimizer.zero_grad()
            y_pred = model(seq)
            loss = loss_fn(y_pred, target)
            loss.backward()
            optimizer.step()
        print(epoch, loss.item())


torch.manual_seed(0)
t = torch.linspace(0, 6.0, 25)
trajectory = torch.stack([torch.sin(t), torch.cos(t)], dim=1)  # a pendulum's (angle, velocity)
train(LSTMmodel(2, 6, 4, 2), trajectory, 6)
