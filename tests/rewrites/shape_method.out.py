"""A method with a NumPy attribute: per-channel gains held as an ndarray, applied after scipy's
median filter on the tensor's data."""

import numpy as np
import scipy.ndimage
import torch
from torch import nn


@torch.library.custom_op("tcdoctor_patch::shape_method_Equalizer__equalize_l16", mutates_args=())
def _tcd_Equalizer_equalize(x: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
    y = scipy.ndimage.median_filter(x.detach().cpu().numpy(), size=3) * gain.numpy()
    return torch.from_numpy(np.ascontiguousarray(y))


@_tcd_Equalizer_equalize.register_fake
def _tcd_Equalizer_equalize_fake(x, gain):
    return torch.empty(torch.broadcast_shapes(x.shape, gain.shape), dtype=torch.float32, device="cpu")


def _tcd_Equalizer_equalize_no_grad(ctx, inputs, output):
    ctx.mark_non_differentiable(output)  # no gradient through Equalizer._equalize(), as before


_tcd_Equalizer_equalize.register_autograd(lambda ctx, grad: (None, None), setup_context=_tcd_Equalizer_equalize_no_grad)


class Equalizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.gain = np.linspace(0.5, 1.5, 16, dtype=np.float32)

    def _equalize(self, x):
        return _tcd_Equalizer_equalize(x, torch.from_numpy(self.gain))

    def forward(self, x):
        h = self.proj(x)
        return torch.tanh(self._equalize(h) + h)


def build():
    torch.manual_seed(0)
    return Equalizer().eval(), (torch.randn(7, 16),)
