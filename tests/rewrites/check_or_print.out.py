import torch


def clamp_logits(logits, limit: float = 30.0):
    if not torch.compiler.is_compiling() and (logits.isnan().any() or logits.abs().max() > limit):  # suspicious values
        print("suspicious logits", logits.abs().max())
        pass
    return logits.clamp(-limit, limit)
