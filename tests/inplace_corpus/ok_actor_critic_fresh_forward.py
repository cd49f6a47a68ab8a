"""Actor-critic done right: the critic steps first, then a fresh forward pass through the updated critic."""
import torch
from torch import nn


def run():
    torch.manual_seed(0)
    actor = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2), nn.LogSoftmax(dim=-1))
    critic = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    actor_opt = torch.optim.Adam(actor.parameters(), lr=0.01)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=0.01)
    for _ in range(2):
        state, action, ret = torch.randn(6, 4), torch.randint(0, 2, (6,)), torch.randn(6, 1)
        critic_loss = (ret - critic(state)).pow(2).mean()
        critic_opt.zero_grad()
        critic_loss.backward()
        critic_opt.step()
        advantage = (ret - critic(state)).detach()
        actor_loss = -(actor(state).gather(1, action[:, None]) * advantage).mean()
        actor_opt.zero_grad()
        actor_loss.backward()
        actor_opt.step()
    return [p.grad for p in actor.parameters()] + list(actor.parameters()) + list(critic.parameters())
