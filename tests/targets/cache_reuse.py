"""Three graphs, two tried fixes: what the experiment children's copy of the main cache must give.

- A call to a `torch.compiler.disable`d function splits the forward (graph 1 | graph 2, 3);
  `.item()` ends graph 2 with a break whose hint names `capture_scalar_outputs`, the config fix:
  with it, graphs 2 and 3 become one new graph, and graph 1 is unchanged (a cache hit in the fix
  child). (Not `torch._dynamo.graph_break()`: a leftover break gets a source patch tried in a child
  of its own, a cold Inductor compile no test here reads.)
- Graph 1 writes a fresh 64 MiB output on every call, above glibc's largest dynamic mmap
  threshold, so every compiled call page-faults it in: the malloc-threshold fix is planned. It
  changes only the environment, so its child must compile nothing new.
"""

import torch


@torch.compiler.disable
def eager_step(t):
    """Runs eagerly: the compiled forward breaks around it (a break no source patch removes)."""
    return t


class TwoPart(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(32, 32)
        self.b = torch.nn.Linear(32, 32)

    def forward(self, x):
        y = torch.relu(self.a(x))
        big = torch.ones(4096, 4096) * y.mean()
        y = eager_step(y)
        z = self.b(y)
        k = z.sum().item()
        return z * k, big


def build():
    torch.manual_seed(0)
    return TwoPart(), (torch.randn(8, 32),)
