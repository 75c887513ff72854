"""reduce-overhead on a model that mutates its input in place (CUDA graphs skip a graph that mutates
its inputs) and reads a CPU scalar: a CUDA-graph coverage case."""

import torch
from torch import nn

DEV = "cuda" if torch.cuda.is_available() else "cpu"


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(512, 512)
        self.b = nn.Linear(512, 512)

    def forward(self, x, state):
        state.add_(1)  # an in-place update of an input
        return self.b(torch.relu(self.a(x))) + state


def build():
    torch.manual_seed(0)
    m = M().to(DEV).eval()
    return m, (torch.randn(64, 512, device=DEV), torch.zeros(64, 512, device=DEV))
