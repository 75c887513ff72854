import numpy as np
import scipy.ndimage
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.calls = 0

    @torch.compiler.disable
    def gate(self, x):
        self.calls += 1
        y = scipy.ndimage.median_filter(x.detach().numpy(), size=3)
        return torch.from_numpy(np.ascontiguousarray(y))

    def forward(self, x):
        return self.gate(self.lin(x))
