"""WGAN-GP critic step: the gradient penalty differentiates the critic's input gradient."""
import torch
import torch.nn as nn

critic = nn.Sequential(nn.Linear(3, 32), nn.Tanh(), nn.Linear(32, 1))
gen = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 3))
opt_c = torch.optim.Adam(critic.parameters(), lr=1e-4, betas=(0.0, 0.9))


def gradient_penalty(critic, real, fake):
    alpha = torch.rand(real.size(0), 1)
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    scores = critic(mixed)
    grads = torch.autograd.grad(outputs=scores, inputs=mixed, grad_outputs=torch.ones_like(scores),
                                create_graph=True, retain_graph=True)[0]
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


for step in range(3):
    real = torch.randn(16, 3)
    with torch.no_grad():
        fake = gen(torch.randn(16, 2))
    opt_c.zero_grad()
    loss = critic(fake).mean() - critic(real).mean() + 10.0 * gradient_penalty(critic, real, fake)
    loss.backward()
    opt_c.step()
print(loss.item())
