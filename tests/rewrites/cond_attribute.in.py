import torch
from torch import nn


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.hits = 0

    def forward(self, x):
        h = self.lin(x)
        if h.sum().item() > 0:
            h = h * 2
        else:
            self.last = h
        return h
