import numpy as np
import torch
from torch import nn


class Sorter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.k = 2

    def forward(self, x):
        h = self.lin(x)
        s = torch.from_numpy(np.sort(h.detach().numpy())[:, : self.k].copy())
        return s
