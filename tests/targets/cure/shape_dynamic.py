"""A helper whose output length depends on the data: the indices of the frames whose smoothed
energy passes a threshold."""

import numpy as np
import scipy.ndimage
import torch
from torch import nn


def loud_frames(x, threshold: float):
    energy = scipy.ndimage.uniform_filter1d(x.detach().cpu().numpy() ** 2, size=4)
    idx = np.flatnonzero(energy > threshold)
    return torch.from_numpy(idx)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(10, 10)

    def forward(self, x):
        h = self.proj(x).flatten()
        keep = loud_frames(h, 0.3)
        return h.index_select(0, keep).sum() + h.mean()


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(6, 10),)
