import torch

from metrics import tracker


def forward(x):
    h = torch.relu(x)
    tracker.log(h.sum())
    return h
