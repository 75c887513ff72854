import torch
from torch import nn


class Acc(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.zeros(4))

    def forward(self, x):
        buf = self.buf
        if x.sum().item() > 0:
            buf = buf * 2
        buf.add_(1)
        return x + buf
