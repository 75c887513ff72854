"""A generation target (issue 60): a Hugging Face model served by `model.generate`, or the user's
own loop (a prefill function and a one-token decode function over the user's cache, gpt-fast
style: target/generation_loop.py), one request at a time, each request a prompt of token ids and a
number of new tokens.

`tcdoctor.Generation(model, prompts=..., max_new_tokens=16, generate_kwargs={...})` is a Workload:
its example inputs are the first prompt (so the rest of the analysis, one forward call, runs as
for any Workload) and its traffic is the prompts (`Traffic`, or a list turned into one), so the
serving section's machinery applies (run/serving/: the replay, the strategies, the warm-up proof).
The generation parts (run/serving/generate*.py) serve each request through `generate`, greedy
unless `generate_kwargs` says otherwise, with exactly `max_new_tokens` new tokens (`min_new_tokens`
is set to it: an end-of-sequence token would otherwise end requests at different lengths on the
two sides and the token comparison would compare nothing).

A prompt is a 1-D or `[1, L]` tensor of integer token ids, a list of ints, or a dict with
`input_ids` (an `attention_mask` is made of ones where not given). A float prompt is a bad request
(one line naming it at replay time, the rest served), not a bad target: a Traffic's generator
draws prompts only when replayed.

Pitfalls: `generate` is checked at construction: a model without it is a TypeError raised inside
the target's build(), one line and exit 3 (the user's code failed), as `tcdoctor analyze` reports
any exception of build(). `max_new_tokens` must be a positive int. Nothing here imports torch at
module level (`as_ids` imports it when a prompt is converted).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .traffic import Traffic
from .workload import Workload

GREEDY = {"do_sample": False}


def as_traffic(prompts: Any) -> Traffic:
    """The prompts as a Traffic (a Traffic is kept; a list or a function becomes one)."""
    if getattr(type(prompts), "is_traffic", False):
        return prompts
    if prompts is None:
        raise TypeError(
            "Generation needs prompts: a list of token-id tensors, or a tcdoctor.Traffic"
        )
    if isinstance(prompts, (list, tuple)):  # a list of ints is one prompt, not call arguments
        prompts = [as_ids(p) if isinstance(p, (list, tuple)) else p for p in prompts]
    return Traffic(prompts)


def first_prompt(traffic: Traffic) -> Any:
    """The traffic's first prompt as written (the Workload's example input)."""
    raw, _ = next(traffic.raw())
    return raw


@dataclasses.dataclass
class Generation(Workload):
    """A model served by `generate`: `prompts` (a Traffic or a list of prompts), `max_new_tokens`
    per request, `generate_kwargs` for every `generate` call (greedy unless they say otherwise)."""

    model: Any = None
    prompts: Any = None
    max_new_tokens: int = 16
    generate_kwargs: dict = dataclasses.field(default_factory=dict)
    prefill: Any = (
        None  # your own loop (target/generation_loop.py): prefill(model, ids, pos, cache)
    )
    decode: Any = None  # decode(model, token, pos, cache): one token's logits
    cache: Any = None  # cache(model): a fresh (or reset) cache, called once per request

    @property
    def loop(self) -> bool:
        """The user's own loop (prefill= and decode= given), not a model's generate."""
        return self.prefill is not None or self.decode is not None

    def __post_init__(self) -> None:
        if self.loop:
            from .generation_loop import check_loop

            check_loop(self)
        elif self.model is None or not callable(getattr(self.model, "generate", None)):
            got = type(self.model).__name__
            raise TypeError(
                f"Generation needs a model with .generate (a Hugging Face model), or prefill= "
                f"and decode= functions (your own loop), got {got}"
            )
        mnt = self.max_new_tokens
        if not isinstance(mnt, int) or isinstance(mnt, bool) or mnt < 1:
            raise TypeError(f"Generation(max_new_tokens=...) must be a positive int, got {mnt!r}")
        if not isinstance(self.generate_kwargs, dict):
            raise TypeError("Generation(generate_kwargs=...) must be a dict")
        self.traffic = as_traffic(self.prompts if self.prompts is not None else self.traffic)
        if self.loop:
            from .generation_loop import decode_step

            first = first_prompt(self.traffic)
            ids = as_ids(first["input_ids"] if isinstance(first, dict) else first)
            decode_step(self, ids)  # the rest of the analysis: one decode step on the first prompt
        elif not self.inputs:
            first = first_prompt(self.traffic)
            self.inputs = (as_ids(first),) if not isinstance(first, dict) else ()
            if isinstance(first, dict):
                self.kwargs = {"input_ids": as_ids(first["input_ids"])}
        super().__post_init__()

    def generation_info(self) -> dict:
        """What the parent reads of it (the environment record)."""
        return {
            "max_new_tokens": self.max_new_tokens,
            "generate_kwargs": {k: repr(v) for k, v in self.generate_kwargs.items()},
            "greedy": not self.generate_kwargs.get("do_sample", False),
            **({"loop": True} if self.loop else {}),
        }

    def call_generate_kwargs(self) -> dict:
        """The keyword arguments of every generate call (the user's on top of greedy, exactly
        max_new_tokens new tokens)."""
        n = self.max_new_tokens
        if self.loop:  # the loop is greedy by construction (probes/generate_loop.py)
            return {"max_new_tokens": n}
        return {**GREEDY, "max_new_tokens": n, "min_new_tokens": n, **self.generate_kwargs}


def as_ids(prompt: Any) -> Any:
    """A prompt as a `[1, L]` tensor (a list of ints becomes an int64 tensor; a 1-D tensor gets
    its batch dimension). Its dtype is left as given: the replay names a float prompt."""
    import torch

    if isinstance(prompt, dict):
        prompt = prompt.get("input_ids")
    if isinstance(prompt, (list, tuple)):
        prompt = torch.tensor(list(prompt), dtype=torch.long)
    if not isinstance(prompt, torch.Tensor):
        raise TypeError(
            f"a prompt must be a tensor or list of token ids, got {type(prompt).__name__}"
        )
    return prompt.unsqueeze(0) if prompt.dim() == 1 else prompt


def prompt_of(args: Any) -> Any:
    """A request's prompt ids from its call arguments (target/workload.py CallArgs)."""
    if args.kwargs.get("input_ids") is not None:
        return as_ids(args.kwargs["input_ids"])
    return as_ids(args.args[0])
