"""A forward that prints a tensor statistic (a debugging line left in): one graph break at print."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(32, 32)
        self.b = nn.Linear(32, 32)

    def forward(self, x):
        h = torch.relu(self.a(x))
        print("activation mean", h.mean())
        return self.b(h)


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(8, 32),)
