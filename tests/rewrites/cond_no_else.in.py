import torch
from torch import nn


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(32, 32)

    def forward(self, x):
        h = self.lin(x)
        # large activations get the second projection
        if h.abs().mean().item() > 0.5:
            h = self.lin(h) * 0.5  # damped
        return torch.relu(h)
