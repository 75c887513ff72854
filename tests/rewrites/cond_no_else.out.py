import torch
from torch import nn


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(32, 32)

    def forward(self, x):
        h = self.lin(x)

        # large activations get the second projection
        def _tcd_true_13(h):
            h = self.lin(h) * 0.5  # damped
            return h

        def _tcd_false_13(h):
            return h.clone()

        h = torch.cond(h.abs().mean() > 0.5, _tcd_true_13, _tcd_false_13, (h,))
        return torch.relu(h)
