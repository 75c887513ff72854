import scipy.special
import torch


@torch.library.custom_op("tcdoctor_patch::op_as_tensor_device_gates_l6", mutates_args=())
def _tcd_op_l6(h: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(scipy.special.expit(h.detach().cpu().numpy()), device=h.device)


@_tcd_op_l6.register_fake
def _(h):
    return torch.empty_like(h)


def gates(h):
    g = _tcd_op_l6(h.detach())
    return g * h
