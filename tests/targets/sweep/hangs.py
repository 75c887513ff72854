"""Sweep test target: every call hangs, so a short --timeout ends the analysis (exit 4)."""

import time

import torch


class Hangs(torch.nn.Module):
    def forward(self, x):
        time.sleep(3600)
        return x


def build():
    return Hangs(), (torch.randn(2),)
