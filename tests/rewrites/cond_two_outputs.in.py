import torch


def route(x, scale):
    a = x * scale
    b = x + 1
    if x.mean().item() > 0:
        a = a * 2
        b = torch.tanh(b)
    else:
        b = b - x
    return a + b
