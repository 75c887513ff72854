"""A small MLP served with a dynamic batch: it exports, and its AOTInductor package builds."""

import torch


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 64)
        self.fc2 = torch.nn.Linear(64, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def build():
    torch.manual_seed(0)
    return MLP().eval(), (torch.randn(4, 32),)


def requests(n: int = 24, seed: int = 0) -> list:
    """Batch sizes drawn from 1..16 (batch 1 first: the 0/1 specialisation's case), seeded."""
    g = torch.Generator().manual_seed(seed)
    sizes = [1] + [int(b) for b in torch.randint(1, 17, (n - 1,), generator=g)]
    return [(torch.randn(b, 32, generator=g),) for b in sizes]
