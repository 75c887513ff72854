"""Control flow on a Python number read from a tensor with .item(): a graph break at .item()."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 64)

    def forward(self, x):
        h = self.a(x)
        scale = h.abs().max().item()
        if scale > 1.0:
            h = h / scale
        return torch.tanh(h)


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(8, 64),)
