"""A method with a NumPy attribute: per-channel gains held as an ndarray, applied after scipy's
median filter on the tensor's data."""

import numpy as np
import scipy.ndimage
import torch
from torch import nn


class Equalizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.gain = np.linspace(0.5, 1.5, 16, dtype=np.float32)

    def _equalize(self, x):
        y = scipy.ndimage.median_filter(x.detach().cpu().numpy(), size=3) * self.gain
        return torch.from_numpy(np.ascontiguousarray(y))

    def forward(self, x):
        h = self.proj(x)
        return torch.tanh(self._equalize(h) + h)


def build():
    torch.manual_seed(0)
    return Equalizer().eval(), (torch.randn(7, 16),)
