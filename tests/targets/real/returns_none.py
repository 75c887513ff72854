"""A callable that returns None and changes no tensor: there is nothing whose numerics could be
compared, so the report must say "not measured (why)", never "pass"."""

import torch


def log_norm(x):
    torch.linalg.vector_norm(x)  # computed and dropped: no output, no state


def build():
    return log_norm, (torch.randn(16),)
