"""The "PyTorch: Control Flow + Weight Sharing" example from "Learning PyTorch with Examples": each
forward draws a Python ``random.randint(0, 3)`` and reuses the middle layer that many times (the
classic version of DynamicNet). Inference. ``build_polynomial`` is the tutorial's current version
(a polynomial whose order comes from ``random.randint(4, 6)``)."""

import math
import random

import torch


class DynamicNet(torch.nn.Module):
    def __init__(self, D_in, H, D_out):
        super().__init__()
        self.input_linear = torch.nn.Linear(D_in, H)
        self.middle_linear = torch.nn.Linear(H, H)
        self.output_linear = torch.nn.Linear(H, D_out)

    def forward(self, x):
        h_relu = self.input_linear(x).clamp(min=0)
        for _ in range(random.randint(0, 3)):
            h_relu = self.middle_linear(h_relu).clamp(min=0)
        y_pred = self.output_linear(h_relu)
        return y_pred


class PolynomialDynamicNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(()))
        self.b = torch.nn.Parameter(torch.randn(()))
        self.c = torch.nn.Parameter(torch.randn(()))
        self.d = torch.nn.Parameter(torch.randn(()))
        self.e = torch.nn.Parameter(torch.randn(()))

    def forward(self, x):
        y = self.a + self.b * x + self.c * x**2 + self.d * x**3
        for exp in range(4, random.randint(4, 6)):
            y = y + self.e * x**exp
        return y


def build():
    torch.manual_seed(0)
    random.seed(0)
    N, D_in, H, D_out = 64, 1000, 100, 10
    model = DynamicNet(D_in, H, D_out).eval()
    return model, (torch.randn(N, D_in),)


def build_polynomial():
    torch.manual_seed(0)
    random.seed(0)
    model = PolynomialDynamicNet().eval()
    return model, (torch.linspace(-math.pi, math.pi, 2000),)
