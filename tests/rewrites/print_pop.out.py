import torch


def drain(x, queue):
    h = torch.relu(x)
    _tcd_6 = queue.pop()
    if not torch.compiler.is_compiling():
        print(_tcd_6)
    return h
