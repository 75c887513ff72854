"""The batch size changes between calls: the second size triggers a recompile
('size mismatch at index 0'), after which automatic dynamic shapes cover the rest."""

import torch
from torch import nn

import tcdoctor


def build():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).eval()
    return tcdoctor.Workload(
        model,
        (torch.randn(4, 64),),
        variants=[(torch.randn(8, 64),), (torch.randn(16, 64),), (torch.randn(32, 64),)],
    )
