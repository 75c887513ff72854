"""Smoothing written as users write it: scipy on the tensor's data, converted back on its device.
Dynamo traces NumPy into scipy and breaks inside it; the user's line is the one to wrap."""

import scipy.ndimage
import torch
from torch import nn


@torch.library.custom_op("tcdoctor_patch::scipy_smooth_forward_l16", mutates_args=())
def _tcd_op_l16(h: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(scipy.ndimage.gaussian_filter1d(h.detach().cpu().numpy(), sigma=2.0, axis=-1))


@_tcd_op_l16.register_fake
def _(h):
    return torch.empty(h.shape, dtype=h.dtype, device="cpu")


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(64, 64)

    def forward(self, x):
        h = self.proj(x)
        y = _tcd_op_l16(h.detach())
        return torch.as_tensor(y, device=h.device) + h


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(8, 64),)
