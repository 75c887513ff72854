import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, stats):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.stats = stats

    def forward(self, x):
        h = self.lin(x)
        self.stats.info(h.mean())
        return h
