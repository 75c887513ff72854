import logging

import torch


def head(x, w):
    scores = torch.softmax(x @ w, dim=-1)
    if not torch.compiler.is_compiling():
        logging.warning("max score %.3f", scores.max())
    return scores
