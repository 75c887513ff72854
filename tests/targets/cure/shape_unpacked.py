"""A result unpacked into two names: the eigen-decomposition of a feature covariance, by scipy."""

import scipy.linalg
import torch
from torch import nn


class Whiten(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(12, 12)

    def forward(self, x):
        h = self.proj(x)
        cov = h.T @ h / h.shape[0] + 1e-3 * torch.eye(12)
        vals, vecs = scipy.linalg.eigh(cov.detach().cpu().numpy())
        w = torch.from_numpy(vecs) / torch.from_numpy(vals).clamp_min(1e-6).sqrt()
        return h @ w


def build():
    torch.manual_seed(0)
    return Whiten().eval(), (torch.randn(20, 12),)
