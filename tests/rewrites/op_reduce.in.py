import numpy as np
import torch


def robust_centre(h):
    m = torch.from_numpy(np.median(h.detach().numpy(), axis=1))
    return h - m[:, None]
