"""The training step as PyTorch's recipes write it, for the by-hand references: a function of the
inputs closing over the model, the optimizer, the loss function and the targets, compiled with
`torch.compile(step)`. Nothing of tcdoctor's is on its path; tests/test_training_counts.py and
ddp_mlp_by_hand.py compare PyTorch's counters for it with tcdoctor's counts for the same step."""

import torch


def recipe_step(model, opt, loss_fn, targets, autocast=None):
    """step(x): zero_grad, forward and loss (under torch.autocast(dtype=autocast) when given),
    backward, opt.step(); returns the detached loss."""

    def step(x):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), targets)
        loss.backward()
        opt.step()
        return loss.detach()

    def autocast_step(x):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=autocast):
            loss = loss_fn(model(x), targets)
        loss.backward()
        opt.step()
        return loss.detach()

    return step if autocast is None else autocast_step
