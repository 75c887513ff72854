"""A helper with Python scalar parameters (int, float, bool), written as signal code writes it:
scipy on the tensor's data, NumPy to tidy the result, back with `.to(x.dtype)`."""

import numpy as np
import scipy.ndimage
import torch
from torch import nn


@torch.library.custom_op("tcdoctor_patch::shape_scalars_soften_l10", mutates_args=())
def soften(x: torch.Tensor, size: int, strength: float, wrap: bool = False) -> torch.Tensor:
    mode = "wrap" if wrap else "reflect"
    y = scipy.ndimage.uniform_filter1d(x.detach().cpu().numpy(), size=size, axis=-1, mode=mode)
    y = np.ascontiguousarray(y * strength)
    return torch.from_numpy(y).to(x.dtype)


@soften.register_fake
def _tcd_soften_fake(x, size, strength, wrap=False):
    return torch.empty(x.shape, dtype=x.dtype, device="cpu")


def _tcd_soften_no_grad(ctx, inputs, output):
    ctx.mark_non_differentiable(output)  # no gradient through soften(), as before


soften.register_autograd(lambda ctx, grad: (None, None, None, None), setup_context=_tcd_soften_no_grad)


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
