"""The model of the `check --baseline` tests (tests/test_gate.py): two graph breaks and, over a second
batch size, one recompile, all in this file; `extra=True` adds one more break (a PR that gained one).

The targets gate_base.py and gate_more.py build it, so a break has the same user location in both
reports. The marker comments name the lines the tests expect annotations on."""

import torch
from torch import nn

import tcdoctor


class Net(nn.Module):
    def __init__(self, extra: bool):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 16)
        self.extra = extra

    def forward(self, x):  # gate: recompile
        h = torch.relu(self.a(x))
        torch._dynamo.graph_break()  # gate: break 1
        h = self.b(h)
        if self.extra:
            torch._dynamo.graph_break()  # gate: break 3 (only with extra=True)
        h = _eager_step(h)  # gate: break 2
        return h * 2


@torch.compiler.disable
def _eager_step(h):
    return h + 1


def build(extra: bool = False):
    torch.manual_seed(0)
    model = Net(extra).eval()
    return tcdoctor.Workload(model, (torch.randn(4, 16),), variants=[(torch.randn(8, 16),)])
