"""A model whose compiled graph holds a large buffer eager never makes (tests/test_memory_attribution.py).

Under torch.compile the first graph allocates BUFFER_BYTES (`torch.zeros`, only while compiling) and
the graph after the break still reads it, so the buffer is kept alive across the graph break; eager
allocates a single float there. The memory attribution must name the first graph (forward, its
frame starting at `forward`'s line) with about BUFFER_BYTES.

Eager also sleeps EAGER_SLEEP_S, allocating nothing: the timing phase batches both sides with the
same number of calls per sample, set by the faster side (probes/timing.py), and a few-µs eager call
made every sample a hundred compiled calls, each zero-filling the buffer (over a minute of timing on
a busy machine for a 0.2 s budget)."""

import time

import torch
from torch import nn

import tcdoctor

BUFFER_ELEMENTS = 4 * 1024 * 1024
BUFFER_BYTES = 4 * BUFFER_ELEMENTS  # float32: 16 MiB
EAGER_SLEEP_S = 0.003  # about one compiled call's zero-fill


class Holder(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 64)
        self.b = nn.Linear(64, 64)

    def forward(self, x):
        h = self.a(x)
        if torch.compiler.is_compiling():
            held = torch.zeros(BUFFER_ELEMENTS)  # compiled only: the extra buffer
        else:
            held = torch.zeros(1)
            time.sleep(EAGER_SLEEP_S)
        torch._dynamo.graph_break()
        return self.b(h) + held[:1]


def build():
    torch.manual_seed(0)
    return tcdoctor.Workload(Holder().eval(), (torch.randn(8, 64),))
