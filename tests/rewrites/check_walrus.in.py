import torch


def step(loss):
    if (n := loss.sum().item()) > 10:
        print("loss is high", n)
    return loss
