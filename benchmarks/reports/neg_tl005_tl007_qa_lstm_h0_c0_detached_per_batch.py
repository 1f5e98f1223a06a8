# fixture: the custom-LSTM batch loop from the post with its fix: the returned (h0, c0) are detached before they are fed to the next batch, and retain_graph=True is gone
# source: https://blog.youkuaiyun.com/windhawk_fly/article/details/143405685
# torch: ok
# strict: ok

import torch
import torch.nn as nn

num_layers, batch_size, hidden_dim, embedding_dim = 1, 2, 5, 3


class SeqLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(embedding_dim, hidden_dim, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_dim, embedding_dim)

    def forward(self, x, h0, c0):
        out, (h, c) = self.lstm(x, (h0, c0))
        return self.fc(out), (h, c)


torch.manual_seed(0)
lstm = SeqLSTM()
loss_fn = nn.MSELoss()
optimizer = torch.optim.Adam(lstm.parameters(), lr=0.01)
data_loader = [(torch.randn(batch_size, 4, embedding_dim), torch.randn(batch_size * 4, embedding_dim)) for _ in range(3)]
batch_count = len(data_loader)
EPOCH = 2

for epoch in range(EPOCH):
    batch_num = 0
    h0 = torch.randn((num_layers, batch_size, hidden_dim), requires_grad=False)
    c0 = torch.randn((num_layers, batch_size, hidden_dim), requires_grad=False)
    for batch in data_loader:
        optimizer.zero_grad()
        output, (h0, c0) = lstm(batch[0], h0, c0)
        h0, c0 = h0.detach(), c0.detach()  # keep the values, drop the previous batch's graph
        loss = loss_fn(output.reshape(-1, embedding_dim), batch[1])
        loss.backward()
        optimizer.step()
        batch_num += 1
        if batch_num % min(10, batch_count // 2) == 0:
            print(f"epoch {epoch} : batch {batch_num} : {loss.item():.4f}")
