"""Smoothing written as users write it: scipy on the tensor's data, converted back on its device.
Dynamo traces NumPy into scipy and breaks inside it; the user's line is the one to wrap."""

import scipy.ndimage
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(64, 64)

    def forward(self, x):
        h = self.proj(x)
        y = scipy.ndimage.gaussian_filter1d(h.detach().cpu().numpy(), sigma=2.0, axis=-1)
        return torch.as_tensor(y, device=h.device) + h


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(8, 64),)
