"""A helper returning two tensors: a smoothed signal and its per-row peak."""

import numpy as np
import scipy.ndimage
import torch
from torch import nn


def envelope(x):
    a = x.detach().cpu().numpy()
    smooth = scipy.ndimage.gaussian_filter1d(a, 1.5, axis=-1)
    peak = np.max(np.abs(smooth), axis=-1)
    return torch.from_numpy(smooth.astype(np.float32)), torch.from_numpy(peak.astype(np.float32))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(24, 24)

    def forward(self, x):
        h = self.proj(x)
        s, p = envelope(h)
        return torch.relu(s) / (p[:, None] + 1.0) + h


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(5, 24),)
