import numpy as np
import scipy.ndimage
import torch


def active(x):
    m = scipy.ndimage.maximum_filter1d(x.detach().numpy(), size=3)
    idx = np.flatnonzero(m > 0.5)
    return torch.from_numpy(idx)
