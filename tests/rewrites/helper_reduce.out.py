import numpy as np
import torch


@torch.library.custom_op("tcdoctor_patch::helper_reduce_energy_l5", mutates_args=())
def energy(x: torch.Tensor) -> torch.Tensor:
    e = np.sum(np.square(x.detach().numpy()), axis=-1)
    e = np.ascontiguousarray(e)
    return torch.from_numpy(e)


@energy.register_fake
def _tcd_energy_fake(x):
    return torch.empty(x.shape[:-1], dtype=torch.float32, device="cpu")


def _tcd_energy_no_grad(ctx, inputs, output):
    ctx.mark_non_differentiable(output)  # no gradient through energy(), as before


energy.register_autograd(lambda ctx, grad: (None,), setup_context=_tcd_energy_no_grad)
