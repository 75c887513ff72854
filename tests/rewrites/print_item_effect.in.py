import torch


def track(x, meter):
    h = torch.relu(x)
    print(meter.update(h.sum().item()))
    return h
