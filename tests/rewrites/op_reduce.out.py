import numpy as np
import torch


@torch.library.custom_op("tcdoctor_patch::op_reduce_robust_centre_l6", mutates_args=())
def _tcd_op_l6(h: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.median(h.detach().numpy(), axis=1))


@_tcd_op_l6.register_fake
def _(h):
    return torch.empty(h.shape[:1] + h.shape[2:], dtype=h.dtype, device=h.device)


def robust_centre(h):
    m = _tcd_op_l6(h.detach())
    return h - m[:, None]
