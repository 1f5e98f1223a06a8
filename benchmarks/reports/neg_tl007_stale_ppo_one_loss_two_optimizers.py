# fixture: the combined PPO loss backwarded once, then both optimizers step (the critic's and the actor's parameters are disjoint, so one walk fills both)
# source: https://github.com/reinforcement-learning-kr/lets-do-irl/issues/9
# torch: ok
# strict: ok

import math
from collections import deque
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Normal


class Actor(nn.Module):
    def __init__(self, num_inputs, num_outputs, args):
        super(Actor, self).__init__()
        self.fc1 = nn.Linear(num_inputs, args.hidden_size)
        self.fc2 = nn.Linear(args.hidden_size, num_outputs)

    def forward(self, x):
        x = torch.tanh(self.fc1(x))
        mu = self.fc2(x)
        logstd = torch.zeros_like(mu)
        std = torch.exp(logstd)
        return mu, std


class Critic(nn.Module):
    def __init__(self, num_inputs, args):
        super(Critic, self).__init__()
        self.fc1 = nn.Linear(num_inputs, args.hidden_size)
        self.fc2 = nn.Linear(args.hidden_size, 1)

    def forward(self, x):
        x = torch.tanh(self.fc1(x))
        return self.fc2(x)


def get_entropy(mu, std):
    return Normal(mu, std).entropy().mean()


def log_prob_density(x, mu, std):
    density = -(x - mu).pow(2) / (2 * std.pow(2)) - 0.5 * math.log(2 * math.pi)
    return density.sum(1, keepdim=True)


def get_gae(rewards, masks, values, args):
    rewards = torch.Tensor(rewards)
    masks = torch.Tensor(masks)
    returns = torch.zeros_like(rewards)
    advants = torch.zeros_like(rewards)
    running_returns, previous_value, running_advants = 0, 0, 0
    for t in reversed(range(0, len(rewards))):
        running_returns = rewards[t] + args.gamma * running_returns * masks[t]
        returns[t] = running_returns
        running_delta = rewards[t] + args.gamma * previous_value * masks[t] - values.data[t, 0]
        previous_value = values.data[t, 0]
        running_advants = running_delta + args.gamma * args.lamda * running_advants * masks[t]
        advants[t] = running_advants
    advants = (advants - advants.mean()) / advants.std()
    return returns, advants


def surrogate_loss(actor, advants, states, old_policy, actions, batch_index):
    mu, std = actor(states)
    new_policy = log_prob_density(actions, mu, std)
    old_policy = old_policy[batch_index]
    ratio = torch.exp(new_policy - old_policy)
    return ratio * advants, ratio, get_entropy(mu, std)


def train_actor_critic(actor, critic, memory, actor_optim, critic_optim, args):
    memory = np.array(memory, dtype=object)
    states = np.vstack(memory[:, 0])
    actions = np.vstack(memory[:, 1])
    rewards = list(memory[:, 2])
    masks = list(memory[:, 3])

    old_values = critic(torch.Tensor(states))
    returns, advants = get_gae(rewards, masks, old_values, args)
    mu, std = actor(torch.Tensor(states))
    old_policy = log_prob_density(torch.Tensor(actions), mu, std)

    criterion = torch.nn.MSELoss()
    n = len(states)
    arr = np.arange(n)
    for _ in range(args.ppo_update_num):
        np.random.shuffle(arr)
        for i in range(n // args.batch_size):
            batch_index = torch.LongTensor(arr[args.batch_size * i: args.batch_size * (i + 1)])
            inputs = torch.Tensor(states)[batch_index]
            actions_samples = torch.Tensor(actions)[batch_index]
            returns_samples = returns.unsqueeze(1)[batch_index]
            advants_samples = advants.unsqueeze(1)[batch_index]
            oldvalue_samples = old_values[batch_index].detach()

            values = critic(inputs)
            clipped_values = oldvalue_samples + torch.clamp(values - oldvalue_samples, -args.clip_param, args.clip_param)
            critic_loss1 = criterion(clipped_values, returns_samples)
            critic_loss2 = criterion(values, returns_samples)
            critic_loss = torch.max(critic_loss1, critic_loss2).mean()

            loss, ratio, entropy = surrogate_loss(actor, advants_samples, inputs, old_policy.detach(), actions_samples, batch_index)
            clipped_ratio = torch.clamp(ratio, 1.0 - args.clip_param, 1.0 + args.clip_param)
            clipped_loss = clipped_ratio * advants_samples
            actor_loss = -torch.min(loss, clipped_loss).mean()

            loss = actor_loss + 0.5 * critic_loss - 0.001 * entropy

            critic_optim.zero_grad()
            actor_optim.zero_grad()
            loss.backward()
            critic_optim.step()
            actor_optim.step()


torch.manual_seed(0)
np.random.seed(0)
args = SimpleNamespace(hidden_size=16, gamma=0.99, lamda=0.98, clip_param=0.2, ppo_update_num=2, batch_size=4)
actor = Actor(3, 2, args)
critic = Critic(3, args)
actor_optim = torch.optim.Adam(actor.parameters(), lr=3e-4)
critic_optim = torch.optim.Adam(critic.parameters(), lr=3e-4)
memory = deque()
for step in range(8):
    state = np.random.randn(3)
    mu, std = actor(torch.Tensor(state).unsqueeze(0))
    action = torch.normal(mu.data, std.data).numpy()[0]
    memory.append([state, action, float(np.random.randn()), 0 if step == 7 else 1])
train_actor_critic(actor, critic, memory, actor_optim, critic_optim, args)
