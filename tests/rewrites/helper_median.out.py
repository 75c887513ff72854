import numpy as np
import torch
from scipy import ndimage


@torch.library.custom_op("tcdoctor_patch::helper_median_denoise_l6", mutates_args=())
def denoise(x: torch.Tensor, size: int = 3) -> torch.Tensor:
    """Median filter along the last axis."""
    k = max(1, int(size))
    y = ndimage.median_filter(x.detach().cpu().numpy(), size=(1, k))
    y = y.astype(np.float32)
    return torch.as_tensor(np.ascontiguousarray(y), device=x.device)


@denoise.register_fake
def _tcd_denoise_fake(x, size=3):
    return torch.empty(x.shape, dtype=torch.float32, device=x.device)


def _tcd_denoise_no_grad(ctx, inputs, output):
    ctx.mark_non_differentiable(output)  # no gradient through denoise(), as before


denoise.register_autograd(lambda ctx, grad: (None, None), setup_context=_tcd_denoise_no_grad)
