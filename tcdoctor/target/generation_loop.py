"""The user's own generation loop as a Generation target (issue 60, gpt-fast style).

    tcdoctor.Generation(
        model,                      # passed first to each function (may be None)
        prefill=prefill,            # prefill(model, ids [1, L], input_pos [L], cache) -> logits
        decode=decode_one_token,    # decode(model, token [1, 1], input_pos [1], cache) -> logits
        cache=new_cache,            # cache(model) -> the request's cache (or None)
        prompts=prompts,
        max_new_tokens=16,
    )

The functions return logits, not tokens: tcdoctor picks each token greedily (argmax of the last
position's logits), so both sides are greedy and their top-two margins can be read at a
divergence. A prefill's logits are `[..., V]` (every position, or only the last); a decode's are one
token's, `V` values in any shape ending in `V` (`[1, 1, V]`, `[1, V]`).

Compiled as gpt-fast compiles: the decode step only, `decode = torch.compile(decode, ...)` with the
target's compile_kwargs and the analysis's backend and mode, the prefill left eager (gpt-fast's
default; its decode has fixed shapes over a static cache, so it compiles once). Pass the functions
uncompiled: tcdoctor compiles the compiled side and leaves the eager side eager, as it compiles a
Hugging Face model's forward for the other form.

The cache: `cache(model)` is called at the start of every request, on each side (each in its own
process), on the request's clock (a server makes or resets the cache per request too); its result
is handed to prefill and every decode of that request. Give a
new cache each time, or reset the one your model holds and return it (`model.setup_caches(...)`):
never one whose state an earlier request (or the other side) left, or the two sides' tokens would
differ for a reason that is not the compiler's. `cache=None`: no cache argument (None is passed).

The rest of the analysis (headline, compile, numerics) is of one decode step: `LoopStep(model,
decode)` called on the first prompt's first decode (its token, position and the cache the eager
prefill filled at construction). Pitfall: that runs the user's cache() and prefill in build(): a
raise there is the target's build() failing, one line and exit 3.
"""

from __future__ import annotations

from typing import Any

import torch


class LoopStep(torch.nn.Module):
    """One decode step as a model: `forward(token, input_pos, cache)` is `decode(model, token,
    input_pos, cache)`; it carries prefill and cache for the generation parts. The user's model is
    a submodule when it is an nn.Module (its parameters are the step's)."""

    def __init__(self, model: Any, prefill: Any, decode: Any, cache: Any) -> None:
        super().__init__()
        self.model = model
        self.prefill = prefill
        self.decode = decode
        self.cache = cache

    def new_cache(self) -> Any:
        """The request's cache (the user's cache(model); None without one)."""
        return self.cache(self.model) if self.cache is not None else None

    def forward(self, token: Any, input_pos: Any, cache: Any = None) -> Any:
        return self.decode(self.model, token, input_pos, cache)


def check_loop(gen: Any) -> None:
    """Refuse a loop target that cannot run, in one line (a TypeError inside build(): exit 3)."""
    for name in ("prefill", "decode"):
        if not callable(getattr(gen, name)):
            raise TypeError(
                f"Generation's own loop needs prefill= and decode= functions; {name}= is "
                f"{type(getattr(gen, name)).__name__}"
            )
    if gen.cache is not None and not callable(gen.cache):
        raise TypeError(
            "Generation(cache=...) is a function of the model returning a fresh (or reset) cache, "
            f"called once per request; got {type(gen.cache).__name__}"
        )
    if gen.generate_kwargs:
        raise TypeError("Generation(generate_kwargs=...) is for a model's generate, not your loop")


def last_logits(logits: Any, vocab: int | None, one: bool) -> torch.Tensor:
    """The last position's logits as a 1-D float tensor of `vocab` values, or a ValueError saying
    why not (`one`: a decode's, which must be one token's)."""
    what = "decode" if one else "prefill"
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point() or logits.dim() < 1:
        got = list(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"{what} must return a float tensor of logits [..., vocab], got {got}")
    v = logits.shape[-1]
    if (vocab is not None and v != vocab) or (one and logits.numel() != v):
        want = f"one token's [..., {vocab or v}]" if one else f"[..., {vocab}]"
        raise ValueError(f"{what} returned logits of shape {list(logits.shape)}, not {want}")
    return logits.reshape(-1, v)[-1]


def decode_step(gen: Any, ids: torch.Tensor) -> None:
    """Make `gen` a Workload of one decode step (the module's docstring): the first prompt's
    (`ids`, [1, L]) cache filled by the eager prefill, then (token, position, cache) as the
    step's inputs."""
    step = LoopStep(gen.model, gen.prefill, gen.decode, gen.cache)
    cache = step.new_cache()
    plen = int(ids.shape[-1])
    with torch.no_grad():
        logits = last_logits(gen.prefill(gen.model, ids, torch.arange(plen), cache), None, False)
    token = logits.argmax().reshape(1, 1)
    gen.model = step
    gen.inputs = (token, torch.tensor([plen]), cache)
    gen.kwargs = {}
    gen.name = gen.name or f"decode step ({getattr(gen.decode, '__name__', 'decode')})"
