import torch


def pick(x):
    if x.sum().item() > 0:
        y = x * 2
    return x
