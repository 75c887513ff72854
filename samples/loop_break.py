"""A graph break inside a for loop: Dynamo skips the whole frame and runs it eagerly.
torch._dynamo.explain reports 0 graphs and -1 breaks here; tcdoctor reports the skipped frame."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(32, 32) for _ in range(3))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = torch.relu(layer(x))
            print("layer", i)
        return x


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(4, 32),)
