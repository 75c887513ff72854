"""A model with one submodule whose computation Inductor rounds differently (tests/test_drift.py).

`Total` sums 65,536 float32 values near 100 per row and subtracts their expected total: eager's CPU
sum is accurate (RMSE against float64 about 0.05), Inductor's vectorised reduction is not (about
1.0), and the subtraction leaves only that rounding. Its parents (`Block`, the model) drift because
it does; its siblings (`Shift`, `Twice`: exact in float32) do not. The drift search must name
`block.total`, and neither `block` nor the model."""

import torch
from torch import nn

import tcdoctor

N = 65536


class Shift(nn.Module):
    def forward(self, x):
        return x * 1.0  # exact


class Total(nn.Module):
    def forward(self, x):
        return x.sum(-1) - 100.0 * x.shape[-1]  # the rounding of the sum is all that is left


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.shift = Shift()
        self.total = Total()

    def forward(self, x):
        return self.total(self.shift(x))


class Twice(nn.Module):
    def forward(self, x):
        return x * 2.0  # exact


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = Twice()

    def forward(self, x):
        return self.head(self.block(x))


def build():
    torch.manual_seed(0)
    return tcdoctor.Workload(Model().eval(), (100 + torch.randn(4, N),))
