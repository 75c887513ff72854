import torch


def drain(x, queue):
    h = torch.relu(x)
    print(queue.pop())
    return h
