"""MAML on sine regression: inner steps with fast weights from autograd.grad
(create_graph), the outer loss differentiates through them."""
import torch
import torch.nn.functional as F

torch.manual_seed(1)
params = [torch.randn(32, 1) * 0.5, torch.zeros(32), torch.randn(1, 32) * 0.1, torch.zeros(1)]
params = [p.requires_grad_() for p in params]
meta_opt = torch.optim.Adam(params, lr=1e-3)


def forward(x, w):
    return F.linear(torch.relu(F.linear(x, w[0], w[1])), w[2], w[3])


for meta_step in range(2):
    meta_loss = 0.0
    for task in range(3):
        amp, phase = torch.rand(1) * 4 + 1, torch.rand(1) * 3
        xs, xq = torch.rand(5, 1) * 10 - 5, torch.rand(5, 1) * 10 - 5
        ys, yq = amp * torch.sin(xs + phase), amp * torch.sin(xq + phase)
        fast = params
        for inner in range(2):
            grads = torch.autograd.grad(F.mse_loss(forward(xs, fast), ys), fast, create_graph=True)
            fast = [w - 0.01 * g for w, g in zip(fast, grads)]
        meta_loss = meta_loss + F.mse_loss(forward(xq, fast), yq)
    meta_opt.zero_grad()
    (meta_loss / 3).backward()
    meta_opt.step()
print(meta_loss.item())
