import torch


def step(loss, meter):
    _tcd_5 = meter.update(loss)
    if not torch.compiler.is_compiling() and _tcd_5 > 10:
        print("loss is high")
    return loss
