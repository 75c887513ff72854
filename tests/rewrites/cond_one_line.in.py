import torch


def gate(t, a, b):
    if t.sum().item() > 0: y = a * 2
    else: y = b - 1
    return y
