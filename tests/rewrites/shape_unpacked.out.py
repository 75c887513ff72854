"""A result unpacked into two names: the eigen-decomposition of a feature covariance, by scipy."""

import scipy.linalg
import torch
from torch import nn


@torch.library.custom_op("tcdoctor_patch::shape_unpacked_forward_l16", mutates_args=())
def _tcd_op_l16(cov: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return tuple(torch.as_tensor(a).contiguous() for a in scipy.linalg.eigh(cov.detach().cpu().numpy()))


@_tcd_op_l16.register_fake
def _(cov):
    return (torch.empty(cov.shape[:-1], dtype=cov.dtype, device="cpu"), torch.empty(cov.shape, dtype=cov.dtype, device="cpu"))


class Whiten(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(12, 12)

    def forward(self, x):
        h = self.proj(x)
        cov = h.T @ h / h.shape[0] + 1e-3 * torch.eye(12)
        vals, vecs = _tcd_op_l16(cov.detach())
        w = vecs / vals.clamp_min(1e-6).sqrt()
        return h @ w


def build():
    torch.manual_seed(0)
    return Whiten().eval(), (torch.randn(20, 12),)
