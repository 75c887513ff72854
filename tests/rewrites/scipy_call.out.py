"""A call into scipy on a tensor's data inside forward: Dynamo cannot trace it."""

import scipy.special
import torch
from torch import nn


@torch.library.custom_op("tcdoctor_patch::scipy_call_forward_l16", mutates_args=())
def _tcd_op_l16(h: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(scipy.special.expit(h.detach().numpy()))


@_tcd_op_l16.register_fake
def _(h):
    return torch.empty_like(h)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(32, 32)
        self.b = nn.Linear(32, 32)

    def forward(self, x):
        h = self.a(x)
        g = _tcd_op_l16(h.detach())
        return self.b(g)


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(8, 32),)
