"""Activation-checkpointed training as people write it: each block's forward runs under
``torch.utils.checkpoint.checkpoint(..., use_reentrant=False)``, trained with Adam through
tcdoctor's standard step. The breaks a compiled whole step has are PyTorch's (the optimizer's
``_use_grad``, ``backward``), none of them the user's."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

import tcdoctor


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(x)))


class Net(nn.Module):
    def __init__(self, dim=64, depth=3):
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))
        self.head = nn.Linear(dim, 1)

    def forward(self, x):
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=False)
        return self.head(x)


def build():
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(1e-3))
    x, y = torch.randn(32, 64), torch.randn(32, 1)
    return tcdoctor.TrainStep(model, (x,), targets=y, loss_fn=F.mse_loss, optimizer=opt)
