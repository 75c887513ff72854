"""Sweep test target: one graph break at a print() in forward."""

import torch


class Breaks(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(32, 32)
        self.b = torch.nn.Linear(32, 8)

    def forward(self, x):
        x = torch.relu(self.a(x))
        print("", end="")  # a graph break: Dynamo does not trace print
        return self.b(x)


def build():
    return Breaks().eval(), (torch.randn(4, 32),)
