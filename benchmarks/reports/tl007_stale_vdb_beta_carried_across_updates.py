# fixture: VAIL's train_vdb: the Lagrange multiplier beta = max(0, beta + alpha_beta * bottleneck_loss) stays a tensor tracked through the previous iteration's VDB forward, and vdb_loss.backward(retain_graph=True) after vdb_optim.step() walks into that stepped graph
# source: https://github.com/reinforcement-learning-kr/lets-do-irl/issues/12
# expect: TL007 64 torch strict
# torch: inplace 64
# strict: fails 64 node 59

from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn


class VDB(nn.Module):
    def __init__(self, num_inputs, args):
        super(VDB, self).__init__()
        self.fc1 = nn.Linear(num_inputs, args.hidden_size)
        self.fc2 = nn.Linear(args.hidden_size, args.z_size)
        self.fc3 = nn.Linear(args.hidden_size, args.z_size)
        self.fc4 = nn.Linear(args.z_size, args.hidden_size)
        self.fc5 = nn.Linear(args.hidden_size, 1)

    def encoder(self, x):
        h = torch.tanh(self.fc1(x))
        return self.fc2(h), self.fc3(h)

    def reparameterize(self, mu, logvar):
        std = torch.exp(logvar / 2)
        eps = torch.randn_like(std)
        return mu + std * eps

    def discriminator(self, z):
        h = torch.tanh(self.fc4(z))
        return torch.sigmoid(self.fc5(h))

    def forward(self, x):
        mu, logvar = self.encoder(x)
        z = self.reparameterize(mu, logvar)
        return self.discriminator(z), mu, logvar


def kl_divergence(mu, logvar):
    return 0.5 * torch.sum(mu.pow(2) + logvar.exp() - logvar - 1, dim=1)


def train_vdb(vdb, memory, vdb_optim, demonstrations, beta, args):
    memory = np.array(memory, dtype=object)
    states = torch.Tensor(np.vstack(memory[:, 0]))
    actions = torch.Tensor(np.vstack(memory[:, 1]))
    criterion = torch.nn.BCELoss()
    for _ in range(args.vdb_update_num):
        learner, l_mu, l_logvar = vdb(torch.cat([states, actions], dim=1))
        demonstrations = torch.Tensor(demonstrations)
        expert, e_mu, e_logvar = vdb(demonstrations)
        l_kld = kl_divergence(l_mu, l_logvar).mean()
        e_kld = kl_divergence(e_mu, e_logvar).mean()
        kld = 0.5 * (l_kld + e_kld)
        bottleneck_loss = kld - args.i_c
        beta = max(0, beta + args.alpha_beta * bottleneck_loss)  # a tensor with the graph of this iteration
        vdb_loss = criterion(learner, torch.ones((states.shape[0], 1))) + \
            criterion(expert, torch.zeros((demonstrations.shape[0], 1))) + \
            beta * bottleneck_loss
        vdb_optim.zero_grad()
        vdb_loss.backward(retain_graph=True)  # from the second iteration on, beta reaches the last, stepped forward
        vdb_optim.step()
    expert_acc = ((vdb(demonstrations)[0] < 0.5).float()).mean()
    learner_acc = ((vdb(torch.cat([states, actions], dim=1))[0] > 0.5).float()).mean()
    return expert_acc, learner_acc


torch.manual_seed(0)
np.random.seed(0)
args = SimpleNamespace(hidden_size=16, z_size=4, i_c=0.05, alpha_beta=1e-4, vdb_update_num=3)
vdb = VDB(3 + 2, args)
vdb_optim = torch.optim.Adam(vdb.parameters(), lr=3e-4)
memory = [[np.random.randn(3), np.random.uniform(-1, 1, 2), 0.0, 1] for _ in range(6)]
demonstrations = np.random.randn(6, 5)
print(train_vdb(vdb, memory, vdb_optim, demonstrations, 0, args))
