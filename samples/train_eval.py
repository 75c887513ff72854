"""A model toggled between train and eval: each flip of `training` fails a guard and recompiles."""

import torch
from torch import nn

import tcdoctor


def build():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.Dropout(0.1), nn.Linear(64, 8))
    model.eval()
    return tcdoctor.Workload(
        model,
        (torch.randn(4, 64),),
        variants=[lambda m: m.train(), lambda m: m.eval()],
    )
