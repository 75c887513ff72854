import numpy as np
import scipy.ndimage
import torch

SEEN = []


def smooth(x):
    y = scipy.ndimage.gaussian_filter1d(x.detach().numpy(), sigma=1.0)
    SEEN.append(y.shape)
    return torch.from_numpy(np.ascontiguousarray(y))
