# fixture: Dreamer's actor-critic update: value_loss.backward(retain_graph=True) and value_optimizer.step() run first, then action_loss = -lambda_target_values.mean() is backwarded through value_model outputs computed before that step
# source: https://github.com/cross32768/Dreamer_PyTorch/issues/2
# expect: TL007 123 torch strict
# torch: inplace 123
# strict: fails 123 node 77

from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal
from torch.nn.functional import mse_loss
from torch.nn.utils import clip_grad_norm_
from torch.optim import Adam


class RecurrentStateSpaceModel(nn.Module):
    def __init__(self, state_dim, action_dim, rnn_hidden_dim, hidden_dim=16):
        super(RecurrentStateSpaceModel, self).__init__()
        self.fc_state_action = nn.Linear(state_dim + action_dim, hidden_dim)
        self.rnn = nn.GRUCell(hidden_dim, rnn_hidden_dim)
        self.fc_state_mean_prior = nn.Linear(rnn_hidden_dim, state_dim)
        self.fc_state_stddev_prior = nn.Linear(rnn_hidden_dim, state_dim)

    def prior(self, state, action, rnn_hidden):
        hidden = F.elu(self.fc_state_action(torch.cat([state, action], dim=1)))
        rnn_hidden = self.rnn(hidden, rnn_hidden)
        mean = self.fc_state_mean_prior(rnn_hidden)
        stddev = F.softplus(self.fc_state_stddev_prior(rnn_hidden)) + 0.1
        return Normal(mean, stddev), rnn_hidden


class ValueModel(nn.Module):
    def __init__(self, state_dim, rnn_hidden_dim, hidden_dim=16):
        super(ValueModel, self).__init__()
        self.fc1 = nn.Linear(state_dim + rnn_hidden_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, 1)

    def forward(self, state, rnn_hidden):
        return self.fc2(F.elu(self.fc1(torch.cat([state, rnn_hidden], dim=1))))


class RewardModel(nn.Module):
    def __init__(self, state_dim, rnn_hidden_dim, hidden_dim=16):
        super(RewardModel, self).__init__()
        self.fc1 = nn.Linear(state_dim + rnn_hidden_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, 1)

    def forward(self, state, rnn_hidden):
        return self.fc2(F.elu(self.fc1(torch.cat([state, rnn_hidden], dim=1))))


class ActionModel(nn.Module):
    def __init__(self, state_dim, rnn_hidden_dim, action_dim, hidden_dim=16):
        super(ActionModel, self).__init__()
        self.fc1 = nn.Linear(state_dim + rnn_hidden_dim, hidden_dim)
        self.fc_mean = nn.Linear(hidden_dim, action_dim)

    def forward(self, state, rnn_hidden):
        return torch.tanh(self.fc_mean(F.elu(self.fc1(torch.cat([state, rnn_hidden], dim=1)))))


def lambda_target(rewards, values, gamma, lambda_):
    V_lambda = torch.zeros_like(rewards)
    H = rewards.shape[0] - 1
    V_n = torch.zeros_like(rewards)
    V_n[H] = values[H]
    for n in range(1, H + 1):
        V_n[:-n] = (gamma ** n) * values[n:]
        for k in range(1, n + 1):
            if k == n:
                V_n[:-n] += (gamma ** (n - 1)) * rewards[k:]
            else:
                V_n[:-n] += (gamma ** (k - 1)) * rewards[k:-n + k]
        if n == H:
            V_lambda += (lambda_ ** (H - 1)) * V_n
        else:
            V_lambda += (1 - lambda_) * (lambda_ ** (n - 1)) * V_n
    return V_lambda


def main():
    torch.manual_seed(0)
    args = SimpleNamespace(state_dim=4, rnn_hidden_dim=6, action_dim=2, imagination_horizon=3, batch=5,
                           gamma=0.9, lambda_=0.95, clip_grad_norm=100, value_lr=8e-5, action_lr=8e-5, collect_interval=2)
    rssm = RecurrentStateSpaceModel(args.state_dim, args.action_dim, args.rnn_hidden_dim)
    reward_model = RewardModel(args.state_dim, args.rnn_hidden_dim)
    value_model = ValueModel(args.state_dim, args.rnn_hidden_dim)
    action_model = ActionModel(args.state_dim, args.rnn_hidden_dim, args.action_dim)
    value_optimizer = Adam(value_model.parameters(), lr=args.value_lr)
    action_optimizer = Adam(action_model.parameters(), lr=args.action_lr)

    for update_step in range(args.collect_interval):
        flatten_states = torch.randn(args.batch, args.state_dim)  # posterior states from the world-model step, detached
        flatten_rnn_hiddens = torch.randn(args.batch, args.rnn_hidden_dim)

        imaginated_states = torch.zeros(args.imagination_horizon + 1, *flatten_states.shape)
        imaginated_rnn_hiddens = torch.zeros(args.imagination_horizon + 1, *flatten_rnn_hiddens.shape)
        imaginated_states[0] = flatten_states
        imaginated_rnn_hiddens[0] = flatten_rnn_hiddens
        for h in range(1, args.imagination_horizon + 1):
            actions = action_model(flatten_states, flatten_rnn_hiddens)
            flatten_states_prior, flatten_rnn_hiddens = rssm.prior(flatten_states, actions, flatten_rnn_hiddens)
            flatten_states = flatten_states_prior.rsample()
            imaginated_states[h] = flatten_states
            imaginated_rnn_hiddens[h] = flatten_rnn_hiddens

        flatten_imaginated_states = imaginated_states.view(-1, args.state_dim)
        flatten_imaginated_rnn_hiddens = imaginated_rnn_hiddens.view(-1, args.rnn_hidden_dim)
        imaginated_rewards = reward_model(flatten_imaginated_states, flatten_imaginated_rnn_hiddens).view(args.imagination_horizon + 1, -1)
        imaginated_values = value_model(flatten_imaginated_states, flatten_imaginated_rnn_hiddens).view(args.imagination_horizon + 1, -1)
        lambda_target_values = lambda_target(imaginated_rewards, imaginated_values, args.gamma, args.lambda_)

        value_loss = 0.5 * mse_loss(imaginated_values, lambda_target_values.detach())
        value_optimizer.zero_grad()
        value_loss.backward(retain_graph=True)
        clip_grad_norm_(value_model.parameters(), args.clip_grad_norm)
        value_optimizer.step()

        action_loss = -1 * (lambda_target_values.mean())
        action_optimizer.zero_grad()
        action_loss.backward()  # lambda_target_values holds value_model outputs from before value_optimizer.step()
        clip_grad_norm_(action_model.parameters(), args.clip_grad_norm)
        action_optimizer.step()
        print(update_step, value_loss.item(), action_loss.item())


main()
