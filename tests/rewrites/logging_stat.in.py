"""A forward that logs a tensor statistic through the logging module: a graph break at the call."""

import logging

import torch
from torch import nn

logger = logging.getLogger("cure.logging_stat")


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(32, 32)
        self.b = nn.Linear(32, 32)

    def forward(self, x):
        h = torch.relu(self.a(x))
        logger.info("hidden norm %s", h.norm())
        return self.b(h)


def build():
    torch.manual_seed(0)
    logging.basicConfig(level=logging.INFO)
    return Model().eval(), (torch.randn(8, 32),)
