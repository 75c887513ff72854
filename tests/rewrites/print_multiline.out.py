"""A multi-line print with a comment inside: the guard keeps its layout and comments."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        h = self.proj(x)
        # show the scale of the projection
        if not torch.compiler.is_compiling():
            print(
                "proj",
                h.abs().max(),  # the peak
                h.std(),
            )  # debug
        return h
