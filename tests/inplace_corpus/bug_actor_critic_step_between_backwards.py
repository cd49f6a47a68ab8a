"""Actor-critic: the advantage is not detached, so the actor's loss goes back through the critic; the critic's
optimizer steps between the two backward calls (the critic's parameters, saved by its Linear layers, change)."""
import torch
from torch import nn


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 1)

    def forward(self, state):
        return self.fc2(torch.tanh(self.fc1(state)))  # SAVES


def run():
    torch.manual_seed(0)
    actor = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2), nn.LogSoftmax(dim=-1))
    critic = Critic()
    actor_opt = torch.optim.Adam(actor.parameters(), lr=0.01)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=0.01)
    state, action, ret = torch.randn(6, 4), torch.tensor([0, 1, 1, 0, 1, 0]), torch.randn(6, 1)
    value = critic(state)  # CHAIN
    advantage = ret - value
    critic_loss = advantage.pow(2).mean()
    log_prob = actor(state).gather(1, action[:, None])
    actor_loss = -(log_prob * advantage).mean()
    critic_opt.zero_grad()
    critic_loss.backward(retain_graph=True)
    critic_opt.step()  # CHANGES INTENDED_AFTER: value = critic(state); advantage = ret - value; actor_loss = -(log_prob * advantage).mean()
    actor_opt.zero_grad()
    actor_loss.backward()
    actor_opt.step()
    return [p.grad for p in actor.parameters()] + list(actor.parameters()) + list(critic.parameters())
