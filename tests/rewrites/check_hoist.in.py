import torch


def step(loss, meter):
    if meter.update(loss) > 10:
        print("loss is high")
    return loss
