"""A forward that prints: Dynamo cannot trace print(), so the graph is split in two."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 64)
        self.b = nn.Linear(64, 64)

    def forward(self, x):
        x = torch.relu(self.a(x))
        print("activation mean", float(x.mean()))
        return self.b(x)


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(8, 64),)
