import torch


def clamp_logits(logits, limit: float = 30.0):
    if logits.isnan().any() or logits.abs().max() > limit:  # suspicious values
        print("suspicious logits", logits.abs().max())
        pass
    return logits.clamp(-limit, limit)
