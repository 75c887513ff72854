"""A warning under a tensor check: the check reads a tensor value, the warning cannot be traced."""

import warnings

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(32, 32)
        self.b = nn.Linear(32, 32)

    def forward(self, x):
        h = self.a(x)
        if not torch.compiler.is_compiling() and torch.isnan(h).any():
            warnings.warn("NaN in hidden state", stacklevel=2)
        return self.b(torch.relu(h))


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(8, 32),)
