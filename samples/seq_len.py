"""A sequence model fed ten different sequence lengths: with static shapes each length recompiles and
the recompile limit (8) is hit; automatic or explicit dynamic shapes on dimension 1 need one or two compiles."""

import torch
from torch import nn

import tcdoctor


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(32, 64)
        self.out = nn.Linear(64, 32)

    def forward(self, x):  # x: [batch, seq, 32]
        h = torch.relu(self.emb(x))
        h = h - h.mean(dim=1, keepdim=True)
        return self.out(h)


def build():
    torch.manual_seed(0)
    lengths = [12, 16, 20, 24, 28, 32, 36, 40, 44, 48]
    return tcdoctor.Workload(
        Model().eval(),
        (torch.randn(2, 8, 32),),
        variants=[(torch.randn(2, n, 32),) for n in lengths],
    )
