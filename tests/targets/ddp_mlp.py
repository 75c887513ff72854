"""A DDP-wrapped MLP trained as a user trains it (issue 34): six Linear(512, 512) layers, 1 MiB
gradient buckets, one Adam step (build_sgd: SGD) compiled whole. build() runs on every rank, after
tcdoctor (or torchrun's by-hand script, ddp_mlp_by_hand.py) initialised the process group."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import tcdoctor

WIDTH = 512  # a Linear(512, 512) is 1 MiB of fp32 weights
LAYERS = 6
BUCKET_CAP_MB = 1.0
BATCH = 16


class MLP(torch.nn.Module):
    def __init__(self, layers: int = LAYERS, width: int = WIDTH):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


OPTIMIZERS = {
    "adam": lambda params: torch.optim.Adam(params, lr=1e-3),
    "sgd": lambda params: torch.optim.SGD(params, lr=1e-2),
}


def parts(optimizer: str = "adam"):
    """(model, optimizer, inputs, targets), the same on every call with the same rank."""
    assert dist.is_initialized(), "the process group is initialised before build()"
    torch.manual_seed(0)
    model = DDP(MLP(), bucket_cap_mb=BUCKET_CAP_MB)
    opt = OPTIMIZERS[optimizer](model.parameters())
    torch.manual_seed(1 + dist.get_rank())
    x, y = torch.randn(BATCH, WIDTH), torch.randn(BATCH, WIDTH)
    return model, opt, x, y


def build(optimizer: str = "adam"):
    model, opt, x, y = parts(optimizer)
    return tcdoctor.TrainStep(
        model, (x,), targets=y, loss_fn=torch.nn.functional.mse_loss, optimizer=opt
    )


def build_sgd():
    return build("sgd")
