"""A model that exports only for small batches: its code guards on the batch size (line 8)."""

import torch


class SmallBatch(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] > 4:
            return x * 2
        return x + 1


GUARD_LINE = 8  # the `if` above


def build():
    return SmallBatch(), (torch.randn(3, 8),)


def requests() -> list:
    g = torch.Generator().manual_seed(0)
    return [(torch.randn(b, 8, generator=g),) for b in (1, 3, 2, 16, 9)]
