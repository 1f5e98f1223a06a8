# fixture: the reporter's fix the maintainer welcomed: calc_policy_loss() runs after Q1 and Q2 are updated, so the policy loss walks the critic's new weights
# source: https://github.com/toshikwa/soft-actor-critic.pytorch/issues/1
# torch: ok
# strict: ok

import torch
import torch.nn as nn
from torch.distributions import Normal
from torch.optim import Adam


def create_linear_network(input_dim, output_dim, hidden_units=[16, 16]):
    layers = []
    units = input_dim
    for next_units in hidden_units:
        layers.append(nn.Linear(units, next_units))
        layers.append(nn.ReLU())
        units = next_units
    layers.append(nn.Linear(units, output_dim))
    return nn.Sequential(*layers)


def soft_update(target, source, tau):
    for t, s in zip(target.parameters(), source.parameters()):
        t.data.copy_(t.data * (1.0 - tau) + s.data * tau)


def update_params(optim, network, loss, grad_clip=None, retain_graph=False):
    optim.zero_grad()
    loss.backward(retain_graph=retain_graph)
    if grad_clip is not None:
        for p in network.modules():
            torch.nn.utils.clip_grad_norm_(p.parameters(), grad_clip)
    optim.step()


class QNetwork(nn.Module):
    def __init__(self, num_inputs, num_actions):
        super(QNetwork, self).__init__()
        self.Q = create_linear_network(num_inputs + num_actions, 1)

    def forward(self, x):
        return self.Q(x)


class TwinnedQNetwork(nn.Module):
    def __init__(self, num_inputs, num_actions):
        super(TwinnedQNetwork, self).__init__()
        self.Q1 = QNetwork(num_inputs, num_actions)
        self.Q2 = QNetwork(num_inputs, num_actions)

    def forward(self, states, actions):
        x = torch.cat([states, actions], dim=1)
        return self.Q1(x), self.Q2(x)


class GaussianPolicy(nn.Module):
    LOG_STD_MAX = 2
    LOG_STD_MIN = -20
    eps = 1e-6

    def __init__(self, num_inputs, num_actions):
        super(GaussianPolicy, self).__init__()
        self.policy = create_linear_network(num_inputs, num_actions * 2)

    def forward(self, states):
        mean, log_std = torch.chunk(self.policy(states), 2, dim=-1)
        return mean, torch.clamp(log_std, min=self.LOG_STD_MIN, max=self.LOG_STD_MAX)

    def sample(self, states):
        means, log_stds = self.forward(states)
        normals = Normal(means, log_stds.exp())
        xs = normals.rsample()
        actions = torch.tanh(xs)
        log_probs = normals.log_prob(xs) - torch.log(1 - actions.pow(2) + self.eps)
        entropies = -log_probs.sum(dim=1, keepdim=True)
        return actions, entropies, torch.tanh(means)


class SacAgent:
    def __init__(self, num_inputs, num_actions, batch_size=8, lr=0.0003, gamma=0.99, tau=0.005, grad_clip=None):
        self.policy = GaussianPolicy(num_inputs, num_actions)
        self.critic = TwinnedQNetwork(num_inputs, num_actions)
        self.critic_target = TwinnedQNetwork(num_inputs, num_actions).eval()
        self.critic_target.load_state_dict(self.critic.state_dict())
        for param in self.critic_target.parameters():
            param.requires_grad = False
        self.policy_optim = Adam(self.policy.parameters(), lr=lr)
        self.q1_optim = Adam(self.critic.Q1.parameters(), lr=lr)
        self.q2_optim = Adam(self.critic.Q2.parameters(), lr=lr)
        self.target_entropy = -float(num_actions)
        self.log_alpha = torch.zeros(1, requires_grad=True)
        self.alpha = self.log_alpha.exp()
        self.alpha_optim = Adam([self.log_alpha], lr=lr)
        self.batch_size, self.gamma, self.tau, self.grad_clip = batch_size, gamma, tau, grad_clip
        self.num_inputs, self.num_actions = num_inputs, num_actions
        self.learning_steps = 0

    def sample_batch(self):
        s = torch.randn(self.batch_size, self.num_inputs)
        a = torch.rand(self.batch_size, self.num_actions) * 2 - 1
        return s, a, torch.randn(self.batch_size, 1), torch.randn(self.batch_size, self.num_inputs), torch.zeros(self.batch_size, 1)

    def learn(self):
        self.learning_steps += 1
        soft_update(self.critic_target, self.critic, self.tau)
        batch = self.sample_batch()
        weights = 1.

        q1_loss, q2_loss, errors, mean_q1, mean_q2 = self.calc_critic_loss(batch, weights)

        update_params(self.q1_optim, self.critic.Q1, q1_loss, self.grad_clip)
        update_params(self.q2_optim, self.critic.Q2, q2_loss, self.grad_clip)

        # the policy loss is computed after the critic's updates
        policy_loss, entropies = self.calc_policy_loss(batch, weights)
        update_params(self.policy_optim, self.policy, policy_loss, self.grad_clip)

        entropy_loss = self.calc_entropy_loss(entropies, weights)
        update_params(self.alpha_optim, None, entropy_loss)
        self.alpha = self.log_alpha.exp()
        print(self.learning_steps, q1_loss.detach().item(), policy_loss.detach().item(), mean_q1, mean_q2)

    def calc_current_q(self, states, actions, rewards, next_states, dones):
        return self.critic(states, actions)

    def calc_target_q(self, states, actions, rewards, next_states, dones):
        with torch.no_grad():
            next_actions, next_entropies, _ = self.policy.sample(next_states)
            next_q1, next_q2 = self.critic_target(next_states, next_actions)
            next_q = torch.min(next_q1, next_q2) + self.alpha * next_entropies
        return rewards + (1.0 - dones) * self.gamma * next_q

    def calc_critic_loss(self, batch, weights):
        curr_q1, curr_q2 = self.calc_current_q(*batch)
        target_q = self.calc_target_q(*batch)
        errors = torch.abs(curr_q1.detach() - target_q)
        mean_q1 = curr_q1.detach().mean().item()
        mean_q2 = curr_q2.detach().mean().item()
        q1_loss = torch.mean((curr_q1 - target_q).pow(2) * weights)
        q2_loss = torch.mean((curr_q2 - target_q).pow(2) * weights)
        return q1_loss, q2_loss, errors, mean_q1, mean_q2

    def calc_policy_loss(self, batch, weights):
        states, actions, rewards, next_states, dones = batch
        sampled_action, entropy, _ = self.policy.sample(states)
        q1, q2 = self.critic(states, sampled_action)
        q = torch.min(q1, q2)
        policy_loss = torch.mean((-q - self.alpha * entropy) * weights)
        return policy_loss, entropy

    def calc_entropy_loss(self, entropy, weights):
        return -torch.mean(self.log_alpha * (self.target_entropy - entropy).detach() * weights)


torch.manual_seed(0)
agent = SacAgent(num_inputs=3, num_actions=2)
for step in range(2):
    agent.learn()
