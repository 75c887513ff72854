"""Targets for the distributed tests: build() runs on every rank, after tcdoctor initialised the process group."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import tcdoctor

WIDTH = 512  # one Linear(512, 512) is 1 MiB of fp32 weights: with bucket_cap_mb=1 each layer is a bucket of its own
LAYERS = 4


class Stack(torch.nn.Module):
    def __init__(self, layers: int = LAYERS, width: int = WIDTH):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def ddp_model(bucket_cap_mb: float = 1.0):
    assert dist.is_initialized(), "tcdoctor initialises the process group before build()"
    return DDP(Stack(), bucket_cap_mb=bucket_cap_mb)


def build_ddp():
    """DDP with 1 MiB buckets: DDPOptimizer splits the compiled forward into one subgraph per bucket."""
    return tcdoctor.Workload(ddp_model(), (torch.randn(8, WIDTH),))


def build_uneven():
    """Rank 1's second batch is smaller (an uneven last batch): rank 1 recompiles, rank 0 does not."""
    rank = int(os.environ["RANK"])
    model = DDP(Stack(layers=2, width=64))
    return tcdoctor.Workload(
        model, (torch.randn(8, 64),), variants=[(torch.randn(8 if rank == 0 else 5, 64),)]
    )


class CrashOnRank1(Stack):
    def forward(self, x):
        if int(os.environ["RANK"]) == 1 and torch.compiler.is_compiling():
            os._exit(17)  # a hard crash of rank 1's process while its model is being compiled
        return super().forward(x)


def build_crash():
    return tcdoctor.Workload(DDP(CrashOnRank1(layers=2, width=64)), (torch.randn(8, 64),))
