import numpy as np
import torch


@torch.library.custom_op("tcdoctor_patch::op_to_device_squash_l6", mutates_args=())
def _tcd_op_l6(h: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.tanh(h.detach().cpu().numpy())).to(h.device)


@_tcd_op_l6.register_fake
def _(h):
    return torch.empty_like(h)


def squash(h):
    s = _tcd_op_l6(h.detach())
    return s + h
