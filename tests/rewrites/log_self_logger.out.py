import logging

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.log = logging.getLogger(__name__)

    def forward(self, x):
        h = self.lin(x)
        if not torch.compiler.is_compiling():
            self.log.info("mean %s", h.mean())
        return h
