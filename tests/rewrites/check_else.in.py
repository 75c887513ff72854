import logging

import torch

log = logging.getLogger(__name__)


def gate(x):
    y = torch.sigmoid(x)
    if (y > 0.99).float().mean() > 0.5:
        log.warning("gate saturated")
    else:
        log.debug("gate fine")
    return y
