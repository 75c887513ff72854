"""A clean MLP: one graph, no breaks, no recompiles. The baseline every other sample departs from."""

import torch
from torch import nn


def build():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 64)
    ).eval()
    return model, (torch.randn(32, 256),)
