"""Replay a generation traffic through the user's own loop (target/generation_loop.py), one
request at a time, each token timed as a server streaming tokens sees it (issue 60).

Method, per request (in traffic order, through traffic_replay.each_request like every replay): the
prompt is produced (off the clock) and checked (integer token ids, one row); `sync()`; t0 =
perf_counter; `cache = cache(model)` (the request's own cache: a server makes or resets one per
request); `logits = prefill(model, ids, arange(L), cache)`; token 0 = argmax of the last position's
logits, read to the host (`.item()`: a device sync, as a streamer's token), `sync()`, its time
read; then for k = 1 .. max_new_tokens-1: `logits = decode(model, token, tensor([L + k - 1]),
cache)`, token k = its argmax, read and timed the same way. So TTFT, ITL, TPOT and tokens/s are
read from the same per-token times as probes/generate.py's streamer clock, and its GenResult is
the record (the report reads both alike).

Compiles: the CompilationMetrics entries PyTorch added, read after each token's time was taken, so
each is attributed to the step whose call compiled it (0: the prefill, k: decode k), with the cache
length that step attended over (L + k) and PyTorch's guard (traffic_replay.compile_event). A
`limit` entry: recompile_limit hit; the requests served after it are named (`past_limit`).

Tokens: greedy (argmax) on both sides; per step the top-two margin and the top logit of the
step's last-position logits (float), so the parent can call a divergence a tie or a numerics
failure (run/serving/generate_section.py); with a StepLogits, each step's logits copied to the host
for the full-logit comparison (probes/generate_logits.py). The margin and the copy run with the
clock paused (`LoopClock`): the token times hold only the user's calls.

Bad input, one error each and the replay goes on: a float prompt; a prefill or decode that raises
(the request and the step it reached: the tokens produced before it); logits that are not one
token's `[..., V]` (V: the prefill's last dimension).
"""

from __future__ import annotations

import time
from typing import Any, Callable

import torch

from ..target.generation import prompt_of
from ..target.generation_loop import last_logits
from ..target.traffic import Request
from . import dynamo_state
from .generate import TOP_TOKENS_KEPT, GenResult, check_prompt


class LoopClock:
    """Per request: each token's time, and the compiles PyTorch recorded during each step. What
    tcdoctor does between a token's time and the next step (the top-two margin, the logits' copy)
    runs with the clock paused: its own time, device synced, is taken out of every later reading
    (`now`), so a token's interval holds only the user's calls."""

    def __init__(self, sync: Callable[[], None], logits: Any = None, request: int = 0) -> None:
        self.sync = sync
        self.times: list[float] = []
        self.compiles: list[tuple[int, Any]] = []  # (step, metrics entry)
        self.margins: list[float] = []
        self.tops: list[float] = []
        self.tokens: list[int] = []
        self.mark = dynamo_state.Mark()
        self.logits = logits  # probes/generate_logits.py StepLogits, or None
        self.request = request
        self.paused_s = 0.0

    def now(self) -> float:
        """perf_counter less the time the clock was paused."""
        return time.perf_counter() - self.paused_s

    def token(self, logits: torch.Tensor) -> torch.Tensor:
        """The greedy token of `logits` (1-D), read to the host and timed; the step's compiles;
        then, paused, its margin and its logits kept."""
        token = int(logits.argmax().item())
        self.sync()
        self.times.append(self.now())
        pause = time.perf_counter()
        self.attribute(len(self.times) - 1)
        self.tokens.append(token)
        if len(self.margins) < TOP_TOKENS_KEPT:
            top = torch.topk(logits.detach().float(), 2).values
            self.margins.append(float(top[0] - top[1]))
            self.tops.append(float(top[0]))
        if self.logits is not None:
            self.logits.add(self.request, logits)
        self.sync()
        self.paused_s += time.perf_counter() - pause
        return torch.tensor([[token]], device=logits.device)

    def attribute(self, step: int) -> None:
        self.compiles += [(step, m) for m in self.mark.take()]


def _generate(step: Any, ids: torch.Tensor, n: int, clock: LoopClock) -> torch.Tensor:
    """One request through the user's functions; the first logits (for their dtype)."""
    device = ids.device
    plen = int(ids.shape[-1])
    cache = step.new_cache()
    first = step.prefill(step.model, ids, torch.arange(plen, device=device), cache)
    logits = last_logits(first, None, False)
    vocab = int(logits.shape[-1])
    token = clock.token(logits)
    for k in range(1, n):
        pos = torch.tensor([plen + k - 1], device=device)
        token = clock.token(last_logits(step.decode(step.model, token, pos, cache), vocab, True))
    return logits


def serve_one(
    step: Any, request: Request, kwargs: dict, sync: Callable[[], None], res: GenResult, logits: Any
) -> None:
    """One request served through the user's loop (`step`: target/generation_loop.LoopStep),
    `kwargs["max_new_tokens"]` tokens: its times, tokens, compiles, or its error (named with its
    step); each step's logits into `logits` (a StepLogits, or None; the clock paused). The replay
    is generate.replay_generate's, with this function as its `serve`."""
    n = int(kwargs["max_new_tokens"])
    ids = prompt_of(request.args)
    plen = int(ids.shape[-1])
    if not res.begin(request, plen, check_prompt(ids)):
        return
    clock = LoopClock(sync, logits, request.index)
    error, last = None, None
    sync()
    t0 = time.perf_counter()
    try:
        last = _generate(step, ids, n, clock)
        sync()
    except Exception as exc:  # noqa: BLE001 - the request failed mid-generation: a finding
        error = exc
    end = clock.now()
    clock.attribute(max(0, len(clock.times) - 1))
    events = res.compiled(clock, request, plen)
    if error is not None:
        res.failed(request, len(clock.times), error)
        if logits is not None:  # a failed request's steps are not compared
            logits.drop(request.index)
        return
    got = (clock.tokens, clock.margins, clock.tops)
    res.served(request, (t0, end), clock, got, last.dtype if last is not None else None, events)
