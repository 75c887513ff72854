"""A tiny two-layer model with one graph break in its own forward (this file): torch.compile
makes two frames of it, `forward` up to the break and the resume function after it. Small enough
that a cold Inductor compile of both stays short."""

import torch
from torch import nn


class TwoStage(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.first = nn.Linear(dim, dim)
        self.second = nn.Linear(dim, dim)

    def forward(self, x):
        h = torch.relu(self.first(x))
        torch._dynamo.graph_break()  # the one break: what ends frame 0's graph
        return torch.tanh(self.second(h))


def build():
    torch.manual_seed(0)
    return TwoStage().eval(), (torch.randn(4, 16),)
