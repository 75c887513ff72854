import scipy.special
import torch


def top_gates(x):
    k = 4
    gates = torch.from_numpy(
        scipy.special.expit(x.detach().numpy())[:, -k:].copy()  # the last k gates
    )
    return gates * 2
