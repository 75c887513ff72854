"""A training step with Adam, as in PyTorch's "Compiling the optimizer" recipe (a stack of bias-free
Linear layers), scaled down for CPU. tcdoctor compares eager, compiled model, compiled whole step and
compiled optimizer.step, each on a fresh copy of the model and optimizer."""

import torch
from torch import nn

import tcdoctor


def build():
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(256, 256, bias=False) for _ in range(6)])
    # lr as a tensor: a Python float lr is baked into the compiled optimizer graph (the recipe's advice)
    opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(0.01))
    x, y = torch.randn(64, 256), torch.randn(64, 256)
    return tcdoctor.TrainStep(model, (x,), targets=y, loss_fn=nn.functional.mse_loss, optimizer=opt)
