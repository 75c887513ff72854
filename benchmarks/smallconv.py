"""A small conv net (conv-BN-ReLU x3, pool, linear), eval mode: a cheap conv workload for fidelity checks."""

from __future__ import annotations

import torch
from torch import nn


def block(cin: int, cout: int, stride: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)
    )


class SmallConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            block(3, 32, 2), block(32, 64, 2), block(64, 64, 1), block(64, 128, 2)
        )
        self.head = nn.Linear(128, 10)

    def forward(self, x):
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


def build():
    torch.manual_seed(0)
    return SmallConv().eval(), (torch.randn(1, 3, 96, 96),)
