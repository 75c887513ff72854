import torch


def guard(x):
    y = x.relu()
    if y.sum().item() == 0:
        print("all zero")
        y = y + 1
    return y
