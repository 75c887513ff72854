"""Sweep test target: a small MLP that compiles whole (no break, no recompile)."""

import torch


def build():
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    return model.eval(), (torch.randn(4, 32),)
