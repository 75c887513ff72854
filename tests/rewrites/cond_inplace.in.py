import torch


def bump(x):
    h = x * 3
    if h.max().item() > 1:
        h *= 2
    return h
