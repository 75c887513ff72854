import numpy as np
import torch


def ranks(x):
    order = np.argsort(x.detach().numpy(), axis=1)
    return torch.as_tensor(order)
