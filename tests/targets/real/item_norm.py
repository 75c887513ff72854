"""A feature normaliser that reads its scale with ``.item()`` (as people write it to divide by a
Python number): a graph break at ``.item()`` that ``capture_scalar_outputs`` removes. The work per
call is small, so compiled overhead weighs: removing the break does not make it faster."""

import torch
from torch import nn


class Normaliser(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        scale = h.abs().max().item()  # a Python float
        return h / (scale + 1e-6)


def build():
    torch.manual_seed(0)
    return Normaliser().eval(), (torch.randn(4, 32),)
