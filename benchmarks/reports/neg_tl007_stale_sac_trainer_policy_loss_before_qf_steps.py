# fixture: the reordering given in the report: q_new_actions and policy_loss are computed after the qf1/qf2 steps (the reporter's retain_graph=True on every backward kept, though nothing walks those graphs again)
# source: https://github.com/microsoft/oac-explore/issues/27
# torch: ok
# strict: ok

import numpy as np
import torch
import torch.optim as optim
from torch import nn as nn
from torch.distributions import Normal


class FlattenMlp(nn.Module):
    def __init__(self, input_size, output_size, hidden_size=16):
        super().__init__()
        self.fc = nn.Linear(input_size, hidden_size)
        self.last_fc = nn.Linear(hidden_size, output_size)

    def forward(self, *inputs):
        flat_inputs = torch.cat(inputs, dim=1)
        return self.last_fc(torch.relu(self.fc(flat_inputs)))


class TanhGaussianPolicy(nn.Module):
    def __init__(self, obs_dim, action_dim, hidden_size=16):
        super().__init__()
        self.fc = nn.Linear(obs_dim, hidden_size)
        self.last_fc = nn.Linear(hidden_size, action_dim)
        self.last_fc_log_std = nn.Linear(hidden_size, action_dim)

    def forward(self, obs, reparameterize=True, return_log_prob=False):
        h = torch.relu(self.fc(obs))
        mean = self.last_fc(h)
        log_std = torch.clamp(self.last_fc_log_std(h), -20, 2)
        std = torch.exp(log_std)
        normal = Normal(mean, std)
        pre_tanh_value = normal.rsample()
        action = torch.tanh(pre_tanh_value)
        log_prob = None
        if return_log_prob:
            log_prob = normal.log_prob(pre_tanh_value) - torch.log(1 - action * action + 1e-6)
            log_prob = log_prob.sum(dim=1, keepdim=True)
        return action, mean, log_std, log_prob


class SACTrainer(object):
    def __init__(self, policy_producer, q_producer, action_space_dim, discount=0.99, reward_scale=1.0,
                 policy_lr=1e-3, qf_lr=1e-3, optimizer_class=optim.Adam, use_automatic_entropy_tuning=True):
        super().__init__()
        self.use_automatic_entropy_tuning = use_automatic_entropy_tuning
        self.target_entropy = -float(action_space_dim)
        self.qf_criterion = nn.MSELoss()
        self.discount = discount
        self.reward_scale = reward_scale
        self.policy = policy_producer()
        self.qf1 = q_producer()
        self.qf2 = q_producer()
        self.target_qf1 = q_producer()
        self.target_qf2 = q_producer()
        self.log_alpha = torch.zeros(1, requires_grad=True)
        self.alpha_optimizer = optimizer_class([self.log_alpha], lr=policy_lr)
        self.policy_optimizer = optimizer_class(self.policy.parameters(), lr=policy_lr)
        self.qf1_optimizer = optimizer_class(self.qf1.parameters(), lr=qf_lr)
        self.qf2_optimizer = optimizer_class(self.qf2.parameters(), lr=qf_lr)

    def train_from_torch(self, batch):
        rewards = batch['rewards']
        terminals = batch['terminals']
        obs = batch['observations']
        actions = batch['actions']
        next_obs = batch['next_observations']

        # policy and alpha loss
        new_obs_actions, policy_mean, policy_log_std, log_pi = self.policy(obs, reparameterize=True, return_log_prob=True)
        if self.use_automatic_entropy_tuning:
            alpha_loss = -(self.log_alpha * (log_pi + self.target_entropy).detach()).mean()
            self.alpha_optimizer.zero_grad()
            alpha_loss.backward()
            self.alpha_optimizer.step()
            alpha = self.log_alpha.exp()
        else:
            alpha_loss = 0
            alpha = 1
        # QF loss
        q1_pred = self.qf1(obs, actions)
        q2_pred = self.qf2(obs, actions)
        new_next_actions, _, _, new_log_pi = self.policy(next_obs, reparameterize=True, return_log_prob=True)
        target_q_values = torch.min(self.target_qf1(next_obs, new_next_actions), self.target_qf2(next_obs, new_next_actions)) - alpha * new_log_pi
        q_target = self.reward_scale * rewards + (1. - terminals) * self.discount * target_q_values
        qf1_loss = self.qf_criterion(q1_pred, q_target.detach())
        qf2_loss = self.qf_criterion(q2_pred, q_target.detach())

        # update networks
        self.qf1_optimizer.zero_grad()
        qf1_loss.backward(retain_graph=True)
        self.qf1_optimizer.step()
        self.qf2_optimizer.zero_grad()
        qf2_loss.backward(retain_graph=True)
        self.qf2_optimizer.step()

        q_new_actions = torch.min(self.qf1(obs, new_obs_actions), self.qf2(obs, new_obs_actions))
        policy_loss = (alpha * log_pi - q_new_actions).mean()
        self.policy_optimizer.zero_grad()
        policy_loss.backward(retain_graph=True)
        self.policy_optimizer.step()


torch.manual_seed(0)
np.random.seed(0)
obs_dim, action_dim = 3, 2
trainer = SACTrainer(lambda: TanhGaussianPolicy(obs_dim, action_dim), lambda: FlattenMlp(obs_dim + action_dim, 1), action_dim)
for it in range(2):
    np_batch = {'rewards': np.random.randn(8, 1), 'terminals': np.zeros((8, 1)), 'observations': np.random.randn(8, obs_dim),
                'actions': np.random.uniform(-1, 1, (8, action_dim)), 'next_observations': np.random.randn(8, obs_dim)}
    trainer.train_from_torch({k: torch.from_numpy(v).float() for k, v in np_batch.items()})
