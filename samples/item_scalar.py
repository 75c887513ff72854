"""A Python number read from a tensor with .item() and used as a scalar: a graph break at .item()
that `torch._dynamo.config.capture_scalar_outputs = True` removes (tcdoctor tries it)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 64)
        self.b = nn.Linear(64, 64)

    def forward(self, x):
        h = torch.relu(self.a(x))
        scale = h.mean().item()  # a Python float: the compiled graph breaks here
        return torch.tanh(self.b(h) * scale)


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(8, 64),)
