import torch


def drain(x, queue):
    h = torch.relu(x)
    print(len(queue), queue.pop())
    return h
