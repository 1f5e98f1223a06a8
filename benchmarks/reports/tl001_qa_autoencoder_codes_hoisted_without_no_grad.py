# fixture: features are encoded once by a pre-trained autoencoder before the training loop, without torch.no_grad(); the classifier's own forward returns (out, loss, accuracy) and each batch backwards it, so the second batch walks the encoder graph the first batch freed
# source: https://devgem.io/posts/understanding-pytorch-s-runtimeerror-backward-through-the-graph-a-second-time
# expect: TL001 46 torch strict
# torch: fails 58 node 19
# strict: fails 58 node 19

import torch
import torch.nn as nn
import torch.nn.functional as F


class AutoEncoder(nn.Module):
    def __init__(self, n_in, n_code):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(n_in, 8), nn.ReLU(), nn.Linear(8, n_code))
        self.decoder = nn.Sequential(nn.Linear(n_code, 8), nn.ReLU(), nn.Linear(8, n_in))

    def forward(self, x):
        code = self.encoder(x)
        loss = F.mse_loss(self.decoder(code), x)
        return code, loss


class Classifier(nn.Module):
    def __init__(self, n_code, n_classes):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_code, 16), nn.ReLU(), nn.Linear(16, n_classes))

    def forward(self, x, targets):
        out = self.net(x)
        loss = F.cross_entropy(out, targets)
        accuracy = (out.argmax(dim=1) == targets).float().mean()
        return out, loss, accuracy


torch.manual_seed(0)
X_raw = torch.randn(12, 6)
y_train_tensor = torch.randint(0, 3, (12,))

autoencoder = AutoEncoder(6, 4)
model = Classifier(4, 3)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
max_iters, batch_size = 2, 4

autoencoder.eval()
X_train_tensor, _ = autoencoder(X_raw)  # tracked: the encoder's parameters require grad

for iter in range(max_iters):
    start_ix = 0
    loss = None
    while start_ix < len(X_train_tensor):
        loss = None
        end_ix = min(start_ix + batch_size, len(X_train_tensor))
        out, loss, accuracy = model(X_train_tensor[start_ix:end_ix], y_train_tensor[start_ix:end_ix])

        optimizer.zero_grad(set_to_none=True)
        print(iter, start_ix, X_train_tensor.requires_grad, y_train_tensor.requires_grad, loss.requires_grad)
        loss.backward()
        optimizer.step()
        start_ix = end_ix
