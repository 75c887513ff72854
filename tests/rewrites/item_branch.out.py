"""A branch on a Python number read from a tensor with .item(): the graph breaks at the branch."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(32, 32)
        self.b = nn.Linear(32, 32)

    def forward(self, x):
        h = self.a(x)

        def _tcd_true_15(h):
            h = h * 2
            return h

        def _tcd_false_15(h):
            h = h - 1
            return h

        h = torch.cond(h.sum() > 0, _tcd_true_15, _tcd_false_15, (h,))
        return self.b(h)


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(8, 32),)
