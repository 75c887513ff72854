"""`if tensor.sum() > 0`: a data-dependent branch. torch._dynamo.explain reports it only as
'generic_jump TensorVariable()'; tcdoctor recovers the full reason and the fix (torch.where / torch.cond)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 64)

    def forward(self, x):
        h = self.a(x)
        if h.sum() > 0:
            return h * 2
        return h - 1


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(8, 64),)
