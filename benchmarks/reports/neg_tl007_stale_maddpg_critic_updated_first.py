# fixture: the maintainer's answer: keep the critic-first order but step the critic right after critic_loss, before the actor loss runs critic_network again
# source: https://github.com/starry-sky6688/MADDPG/issues/27
# torch: ok
# strict: ok

from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F


class Actor(nn.Module):
    def __init__(self, args, agent_id):
        super(Actor, self).__init__()
        self.max_action = args.high_action
        self.fc1 = nn.Linear(args.obs_shape[agent_id], 16)
        self.fc2 = nn.Linear(16, 16)
        self.action_out = nn.Linear(16, args.action_shape[agent_id])

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.max_action * torch.tanh(self.action_out(x))


class Critic(nn.Module):
    def __init__(self, args):
        super(Critic, self).__init__()
        self.max_action = args.high_action
        self.fc1 = nn.Linear(sum(args.obs_shape) + sum(args.action_shape), 16)
        self.fc2 = nn.Linear(16, 16)
        self.q_out = nn.Linear(16, 1)

    def forward(self, state, action):
        state = torch.cat(state, dim=1)
        for i in range(len(action)):
            action[i] /= self.max_action
        action = torch.cat(action, dim=1)
        x = torch.cat([state, action], dim=1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.q_out(x)


class MADDPG:
    def __init__(self, args, agent_id):
        self.args = args
        self.agent_id = agent_id
        self.train_step = 0
        self.actor_network = Actor(args, agent_id)
        self.critic_network = Critic(args)
        self.actor_target_network = Actor(args, agent_id)
        self.critic_target_network = Critic(args)
        self.actor_target_network.load_state_dict(self.actor_network.state_dict())
        self.critic_target_network.load_state_dict(self.critic_network.state_dict())
        self.actor_optim = torch.optim.Adam(self.actor_network.parameters(), lr=args.lr_actor)
        self.critic_optim = torch.optim.Adam(self.critic_network.parameters(), lr=args.lr_critic)

    def _soft_update_target_network(self):
        for target_param, param in zip(self.actor_target_network.parameters(), self.actor_network.parameters()):
            target_param.data.copy_((1 - self.args.tau) * target_param.data + self.args.tau * param.data)
        for target_param, param in zip(self.critic_target_network.parameters(), self.critic_network.parameters()):
            target_param.data.copy_((1 - self.args.tau) * target_param.data + self.args.tau * param.data)

    def train(self, transitions, other_agents):
        r = transitions['r_%d' % self.agent_id]
        o, u, o_next = [], [], []
        for agent_id in range(self.args.n_agents):
            o.append(transitions['o_%d' % agent_id])
            u.append(transitions['u_%d' % agent_id])
            o_next.append(transitions['o_next_%d' % agent_id])

        u_next = []
        with torch.no_grad():
            index = 0
            for agent_id in range(self.args.n_agents):
                if agent_id == self.agent_id:
                    u_next.append(self.actor_target_network(o_next[agent_id]))
                else:
                    u_next.append(other_agents[index].actor_target_network(o_next[agent_id]))
                    index += 1
            q_next = self.critic_target_network(o_next, u_next).detach()
            target_q = (r.unsqueeze(1) + self.args.gamma * q_next).detach()

        q_value = self.critic_network(o, u)
        critic_loss = (target_q - q_value).pow(2).mean()
        self.critic_optim.zero_grad()
        critic_loss.backward()
        self.critic_optim.step()

        u[self.agent_id] = self.actor_network(o[self.agent_id])
        actor_loss = -self.critic_network(o, u).mean()  # runs the critic after its step

        self.actor_optim.zero_grad()
        actor_loss.backward()
        self.actor_optim.step()

        self._soft_update_target_network()
        self.train_step += 1


torch.manual_seed(0)
args = SimpleNamespace(n_agents=2, obs_shape=[4, 4], action_shape=[2, 2], high_action=1.0,
                       lr_actor=1e-3, lr_critic=1e-3, gamma=0.95, tau=0.01)
agents = [MADDPG(args, i) for i in range(args.n_agents)]
for time_step in range(2):
    transitions = {}
    for i in range(args.n_agents):
        transitions['o_%d' % i] = torch.randn(8, 4)
        transitions['u_%d' % i] = torch.rand(8, 2) * 2 - 1
        transitions['r_%d' % i] = torch.randn(8)
        transitions['o_next_%d' % i] = torch.randn(8, 4)
    for agent in agents:
        other_agents = [a for a in agents if a is not agent]
        agent.train(transitions, other_agents)
