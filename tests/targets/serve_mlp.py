"""A small MLP served with a few batch sizes (tests/test_serving.py): `build` gives a list traffic,
`build_bad` plants a wrong-rank request mid-traffic, `build_raises` a generator that raises,
`build_limited` lowers recompile_limit to 3 through compile_kwargs, `build_warmed` serves the same
traffic after the user's own warm-up (the batch sizes whose guards fail: 4, 2, then 1)."""

import torch
from torch import nn

import tcdoctor

SIZES = [4, 4, 2, 4, 8, 2, 1, 8, 4, 3]


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).eval()


def _requests():
    g = torch.Generator().manual_seed(0)
    return [(torch.randn(b, 16, generator=g),) for b in SIZES]


def build():
    return tcdoctor.Workload(_model(), (torch.randn(4, 16),), traffic=tcdoctor.Traffic(_requests()))


def build_bad():
    reqs = _requests()
    reqs[5] = (torch.randn(2, 3, 7),)  # a rank and width the model rejects
    return tcdoctor.Workload(_model(), (torch.randn(4, 16),), traffic=tcdoctor.Traffic(reqs))


def build_raises():
    def gen():
        for i, r in enumerate(_requests()):
            if i == 6:
                raise ValueError("request source went away")
            yield r

    return tcdoctor.Workload(_model(), (torch.randn(4, 16),), traffic=tcdoctor.Traffic(gen))


def build_limited():
    return tcdoctor.Workload(
        _model(),
        (torch.randn(4, 16),),
        compile_kwargs={"recompile_limit": 3},
        traffic=tcdoctor.Traffic(_requests()),
    )


def build_warmed():
    warmup = [(torch.randn(b, 16),) for b in (4, 2, 1)]  # what analyze derives for build()
    traffic = tcdoctor.Traffic(_requests(), warmup=warmup)
    return tcdoctor.Workload(_model(), (torch.randn(4, 16),), traffic=traffic)
