"""A helper that writes Python state: it records each batch's peak in a module-level list (a
metrics history), then filters the tensor's data with scipy."""

import numpy as np
import scipy.ndimage
import torch
from torch import nn

PEAKS = []


def despike(x):
    y = scipy.ndimage.median_filter(x.detach().cpu().numpy(), size=(1, 3))
    PEAKS.append(float(np.abs(y).max()))
    return torch.from_numpy(y)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(20, 20)

    def forward(self, x):
        h = self.proj(x)
        return despike(h) * 2 + h


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(4, 20),)
