"""Targets that go wrong in every way tcdoctor must report in one line."""

import ctypes
import time

import torch

import tcdoctor


def not_a_function_value():
    return 42


def build_raises():
    raise ValueError("no weights here")


def wrong_type():
    return 42


def wrong_tuple():
    return torch.nn.Linear(2, 2), torch.randn(2), "extra"


def four_items():
    return torch.nn.Linear(2, 2), (torch.randn(2),), {}, "extra"


def needs_args(x):
    return x


class Raises(torch.nn.Module):
    def forward(self, x):
        raise RuntimeError("forward is broken")


def forward_raises():
    return Raises(), (torch.randn(2),)


class PrintsInForward(torch.nn.Module):
    def forward(self, x):
        print("hello")
        return x + 1


def compile_raises():
    # fullgraph=True turns the print's graph break into an error: eager works, compiled raises
    return tcdoctor.Workload(
        PrintsInForward(), (torch.randn(2),), compile_kwargs={"fullgraph": True}
    )


def _hang(model):
    time.sleep(10_000)


def hangs_in_variant():
    return tcdoctor.Workload(torch.nn.Linear(4, 4), (torch.randn(2, 4),), variants=[_hang])


def _segfault(model):
    ctypes.string_at(0)


def crashes_in_variant():
    return tcdoctor.Workload(torch.nn.Linear(4, 4), (torch.randn(2, 4),), variants=[_segfault])


NOT_CALLABLE = 3


class _BackwardInForward(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 1)

    def forward(self, x):
        loss = self.lin(x).sum()
        loss.backward()
        return loss.detach()


def backward_in_forward():
    return _BackwardInForward(), torch.randn(2, 3)
