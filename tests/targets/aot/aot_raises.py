"""A model that raises on every call: export fails, and so does draft_export (line 9)."""

import torch


class Raises(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x * 2
        raise ValueError("this model refuses every request")


RAISE_LINE = 9  # the `raise` above


def build():
    return Raises(), (torch.randn(3, 4),)


def requests() -> list:
    return [(torch.randn(b, 4),) for b in (2, 3)]
