import scipy.special
import torch


@torch.library.custom_op("tcdoctor_patch::op_fixed_shape_top_gates_l7", mutates_args=())
def _tcd_op_l7(x: torch.Tensor, k: int) -> torch.Tensor:
    return torch.from_numpy(
        scipy.special.expit(x.detach().numpy())[:, -k:].copy()  # the last k gates
    )


@_tcd_op_l7.register_fake
def _(x, k):
    return x.new_empty((8, 4), dtype=torch.float32)


def top_gates(x):
    k = 4
    gates = _tcd_op_l7(x.detach(), k)
    return gates * 2
