"""Two graph breaks of very different cost: which to fix first?

`torch._dynamo.graph_break()` costs only the split (a guard check, a second graph call); the call to
`slow_postprocess`, which Dynamo is told not to trace, runs eagerly every call and costs far more.
tcdoctor ranks the breaks by their measured cost per call.
"""

import torch
from torch import nn


@torch.compiler.disable
def slow_postprocess(h):
    for _ in range(30):
        h = torch.tanh(h @ h.T @ h) / h.shape[0]
    return h


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 64)
        self.b = nn.Linear(64, 64)
        self.c = nn.Linear(64, 64)

    def forward(self, x):
        h = torch.relu(self.a(x))
        torch._dynamo.graph_break()  # cheap: just a split
        h = torch.relu(self.b(h))
        h = slow_postprocess(h)  # expensive: runs eagerly every call
        return self.c(h)


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(32, 64),)
