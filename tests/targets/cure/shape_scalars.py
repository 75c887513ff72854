"""A helper with Python scalar parameters (int, float, bool), written as signal code writes it:
scipy on the tensor's data, NumPy to tidy the result, back with `.to(x.dtype)`."""

import numpy as np
import scipy.ndimage
import torch
from torch import nn


def soften(x, size: int, strength: float, wrap: bool = False):
    mode = "wrap" if wrap else "reflect"
    y = scipy.ndimage.uniform_filter1d(x.detach().cpu().numpy(), size=size, axis=-1, mode=mode)
    y = np.ascontiguousarray(y * strength)
    return torch.from_numpy(y).to(x.dtype)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(32, 32)
        self.out = nn.Linear(32, 32)

    def forward(self, x):
        h = self.proj(x)
        return self.out(soften(h, 5, 0.5, True) + h)


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(6, 32),)
