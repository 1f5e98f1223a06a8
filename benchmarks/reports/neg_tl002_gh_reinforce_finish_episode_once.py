# fixture: the REINFORCE example as written, for the resampling report: finish_episode() runs once per episode over the stored experience, then the lists are emptied
# source: https://github.com/pytorch/examples/issues/151
# torch: ok
# strict: ok

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

gamma = 0.99


class Policy(nn.Module):
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(4, 16)
        self.affine2 = nn.Linear(16, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        return F.softmax(self.affine2(x), dim=1)


torch.manual_seed(0)
policy = Policy()
optimizer = optim.Adam(policy.parameters(), lr=1e-2)


def select_action(state):
    state = state.unsqueeze(0)
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def finish_episode(batch_size):
    R = 0
    returns = []
    for r in policy.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    # a random sample of this episode's experience (the stored lists are kept)
    idx = torch.randperm(len(returns))[:batch_size]
    policy_loss = []
    for i in idx.tolist():
        policy_loss.append(-policy.saved_log_probs[i] * returns[i])
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()


for i_episode in range(2):
    for t in range(4):
        action = select_action(torch.randn(4))
        policy.rewards.append(1.0 if action == 0 else 0.0)
    finish_episode(batch_size=4)  # once per episode, as the example does
    del policy.rewards[:]
    del policy.saved_log_probs[:]
