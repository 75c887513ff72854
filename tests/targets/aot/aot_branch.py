"""A model that does not export: it branches on tensor data (`if y.sum() > 0:`), line 13."""

import torch


class Branchy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.proj(x)
        if y.sum() > 0:
            return y * 2
        return y - 1


BRANCH_LINE = 13  # the `if` above


def build():
    torch.manual_seed(0)
    return Branchy().eval(), (torch.randn(4, 8),)


def requests(n: int = 6) -> list:
    """Requests with batch sizes 1..n (one each), as a traffic list."""
    g = torch.Generator().manual_seed(0)
    return [(torch.randn(b, 8, generator=g),) for b in range(1, n + 1)]
