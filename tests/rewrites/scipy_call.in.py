"""A call into scipy on a tensor's data inside forward: Dynamo cannot trace it."""

import scipy.special
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(32, 32)
        self.b = nn.Linear(32, 32)

    def forward(self, x):
        h = self.a(x)
        g = torch.from_numpy(scipy.special.expit(h.detach().numpy()))
        return self.b(g)


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(8, 32),)
