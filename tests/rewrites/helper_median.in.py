import numpy as np
import torch
from scipy import ndimage


def denoise(x: torch.Tensor, size: int = 3):
    """Median filter along the last axis."""
    k = max(1, int(size))
    y = ndimage.median_filter(x.detach().cpu().numpy(), size=(1, k))
    y = y.astype(np.float32)
    return torch.as_tensor(np.ascontiguousarray(y), device=x.device)
