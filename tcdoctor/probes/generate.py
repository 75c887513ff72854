"""Replay a generation traffic through `model.generate`, one request at a time, each token timed
as a server streaming tokens sees it (issue 60).

Method, per request (in traffic order): the prompt is produced (off the clock) and checked (integer
token ids); `sync()`; t0 = perf_counter; `model.generate(ids, attention_mask=ones, streamer=clock,
max_new_tokens=n, min_new_tokens=n, do_sample=False, **generate_kwargs, return_dict_in_generate=
True, output_logits=True)`. The streamer's `put` (transformers' BaseStreamer) is called first with
the prompt, then once per new token with the token already on the host (generate moves it there:
a device sync); `put` syncs the device (CUDA) and reads perf_counter: token k's time. So:
- time to first token (TTFT) = token 0's time - t0 (the prefill, and any compile it triggered);
- inter-token latency (ITL) = token k's time - token k-1's, every decode step of every request;
- time per output token (TPOT) of a request = (last token's time - first's) / (tokens - 1), as
  vLLM's serving benchmark defines it;
- tokens/s of a request = its new tokens / (its end - t0); over the replay: all new tokens / the
  sum of the requests' times.
Compiles: the CompilationMetrics entries PyTorch added during the request (probes/dynamo_state.py),
read once after the request's end time was taken (`Clock.attribute`), never in `put`: a token's
interval holds no read of tcdoctor's (reading the metrics buffer per token cost ~1.75 µs inside the
next token's interval). `put` takes one more clock, the wall clock PyTorch stamps an entry's
`end_time_us` with, so each entry is attributed to the first token put after its compile ended:
the decode step whose forward compiled it (step 0: the prefill), with the cache length that
step's forward attended over (prompt + step tokens) and PyTorch's guard in its own words
(traffic_replay.compile_event: the one reading of a metrics entry). A `limit` entry is
recompile_limit hit: that step and every later step the frame's guards miss run eagerly; the
requests served after it are named (`past_limit`).

Tokens: each request's greedy tokens and, per step, the margin between the top two raw logits
(`output_logits`: generate keeps the last position's logits per step, one clone per token, the
same on both sides) and the top two token ids, so the parent can say at a divergence whether it
was a near-tie (run/serving/generate_section.py); with a StepLogits, each step's raw logits,
kept after the request's end was read, for the full-logit comparison (probes/generate_logits.py).
The tolerance is read for the model's dtype (generate upcasts its logits to float32).

Pitfalls: `min_new_tokens` is set to `max_new_tokens` so an end-of-sequence token never ends one
side early; a request that raises mid-generation is one error naming the request and the step it
reached (the tokens streamed before it), and the replay goes on; the first request of a compiled
side carries its compiles (a server's cold start: that is the figure).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Iterable, Iterator

import torch

from ..target.generation import prompt_of
from ..target.traffic import Request
from . import dynamo_state
from .generate_logits import tol_dtype
from .numerics import TOL
from .traffic_replay import compile_event, each_request, recompile_limit

TOP_TOKENS_KEPT = 256  # per request, the steps whose top-two logits are kept (the first ones)


def check_prompt(ids: torch.Tensor) -> str | None:
    """Why a prompt cannot be served (None: it can): token ids are integers, one row."""
    if ids.is_floating_point() or ids.dtype == torch.bool or ids.is_complex():
        return f"token ids must be an integer tensor, got {str(ids.dtype).replace('torch.', '')}"
    if ids.dim() != 2 or ids.shape[0] != 1:
        return f"a prompt is one row of token ids, got shape {list(ids.shape)}"
    return None


def too_long(model: Any, plen: int, kwargs: dict) -> str | None:
    """Why a prompt cannot fit (None: it fits): its tokens plus the new ones past the model's
    positions (`config.max_position_embeddings`) or past a static cache's `max_cache_len`."""
    need = plen + int(kwargs.get("max_new_tokens") or 0)
    cache = kwargs.get("max_cache_len")
    if cache is not None and need > int(cache):
        return f"{plen} prompt + {need - plen} new tokens exceed the static cache's max_cache_len {cache}"
    limit = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if isinstance(limit, int) and need > limit:
        return (
            f"{plen} prompt + {need - plen} new tokens exceed the model's "
            f"max_position_embeddings {limit}"
        )
    return None


def make_clock(sync: Callable[[], None]) -> Any:
    """A streamer whose `put` times each new token (its first call, the prompt, is not a token):
    perf_counter, and the wall clock in µs (what PyTorch's entries are stamped with). `attribute()`,
    called off the clock after the request, gives each compile PyTorch recorded since the clock was
    made the step of the first token put after the compile ended; an entry without an end time,
    or ending after the last token (a request that raised), the last step reached."""
    from transformers.generation.streamers import BaseStreamer

    class Clock(BaseStreamer):
        def __init__(self) -> None:
            self.times: list[float] = []
            self.walls_us: list[int] = []
            self.compiles: list[tuple[int, Any]] = []  # (step, metrics entry)
            self.prompt_seen = False
            self.mark = dynamo_state.Mark()

        def put(self, value: Any) -> None:
            if not self.prompt_seen:
                self.prompt_seen = True
                return
            sync()
            self.times.append(time.perf_counter())
            self.walls_us.append(time.time_ns() // 1000)

        def end(self) -> None:
            pass

        def attribute(self) -> None:
            last = max(0, len(self.times) - 1)
            for m in self.mark.take():
                ended = getattr(m, "end_time_us", None)
                step = None
                if ended is not None:
                    step = next((i for i, w in enumerate(self.walls_us) if w >= ended), None)
                self.compiles.append((last if step is None else step, m))

    return Clock()


@dataclasses.dataclass
class GenResult:
    """One side's generation replay: per request (None where not served) its token times (seconds
    from its start), its tokens, its top-two logit margins; the compiles; errors; limit."""

    token_times_s: list[list[float] | None] = dataclasses.field(default_factory=list)
    total_s: list[float | None] = dataclasses.field(default_factory=list)
    prompt_lengths: list[int | None] = dataclasses.field(default_factory=list)
    tokens: list[list[int] | None] = dataclasses.field(default_factory=list)
    margins: list[list[float] | None] = dataclasses.field(default_factory=list)
    top_logits: list[list[float] | None] = dataclasses.field(default_factory=list)
    compiles: list[dict] = dataclasses.field(default_factory=list)
    errors: list[dict] = dataclasses.field(default_factory=list)
    past_limit: list[int] = dataclasses.field(default_factory=list)
    recompile_limit: int | None = None
    limit_hit: dict | None = None
    tol: float | None = None  # the numerics rule's tolerance for the logits' dtype
    stopped: str | None = None
    wall_s: float = 0.0
    start_s: list[float | None] = dataclasses.field(default_factory=list)
    # a paired replay's rounds (`replay_paired`): the rounds begun, the requests in one, the pairs
    # it aimed at, and where a request's tokens differed from its first round's (a finding)
    rounds: int | None = None
    round_size: int | None = None
    pairs_wanted: int | None = None
    round_changes: list[dict] | None = None
    origin: float = dataclasses.field(default_factory=time.perf_counter, repr=False)

    def to_dict(self) -> dict:
        return {
            k: getattr(self, k) for k in (f.name for f in dataclasses.fields(self)) if k != "origin"
        }

    def begin(self, request: Request, prompt_len: int, why: str | None) -> bool:
        """A request's row opened (None until served); False, with its one error line, when its
        prompt was refused (`why`)."""
        self.prompt_lengths.append(prompt_len)
        fields = (self.token_times_s, self.total_s, self.tokens, self.margins, self.top_logits)
        for field in (*fields, self.start_s):
            field.append(None)
        if why is not None:
            self.errors.append({"request": request.index, "shapes": request.shapes, "message": why})
        return why is None

    def compiled(self, clock: Any, request: Request, prompt_len: int) -> list[dict]:
        """The clock's compiles, each with its decode step and cache length, added; returned."""
        events = []
        for step, m in clock.compiles:
            event = compile_event(m, request)
            event.update(step=step, cache_length=prompt_len + step, prefill=step == 0)
            events.append(event)
        self.compiles += events
        return events

    def failed(self, request: Request, step: int, exc: BaseException) -> None:
        """A request that raised mid-generation: one line naming it and its step."""
        first = (str(exc).strip().splitlines() or [""])[0]
        message = f"{type(exc).__name__}: {first}".rstrip(": ")[:300]
        self.errors.append(
            {"request": request.index, "shapes": request.shapes, "step": step, "message": message}
        )

    def served(
        self, request: Request, span: tuple[float, float], clock: Any, got: tuple, dtype: Any,
        events: list[dict],
    ) -> None:  # fmt: skip
        """A served request's row: token times from its start (`span`: start, end), total,
        tokens/margins/top logits (`got`), the tolerance for the logits' dtype, and the
        recompile_limit its compiles (`events`, from `compiled`) hit: the request and every later
        one are past it."""
        t0, end = span
        self.token_times_s[-1] = [t - t0 for t in clock.times]
        self.total_s[-1] = end - t0
        self.start_s[-1] = t0 - self.origin
        self.tokens[-1], self.margins[-1], self.top_logits[-1] = got
        if self.tol is None and dtype is not None:
            self.tol = TOL.get(dtype, 1e-4)
        limit = next((e for e in events if e["kind"] == "limit"), None)
        if limit is not None and self.limit_hit is None:
            self.limit_hit = {"request": request.index, "step": limit["step"]}
        if self.limit_hit is not None:
            self.past_limit.append(request.index)


def _served(model: Any, ids: torch.Tensor, kwargs: dict, sync: Callable[[], None]) -> tuple:
    """One generate call, timed: (t0, end, clock, output); an exception carries the clock."""
    clock = make_clock(sync)
    mask = torch.ones_like(ids)
    sync()
    t0 = time.perf_counter()
    try:
        out = model.generate(
            ids,
            attention_mask=mask,
            streamer=clock,
            return_dict_in_generate=True,
            output_logits=True,
            **kwargs,
        )
    except Exception as exc:  # noqa: BLE001 - the request failed mid-generation: a finding
        exc.tcdoctor_clock = clock  # type: ignore[attr-defined]
        exc.tcdoctor_t0 = t0  # type: ignore[attr-defined]
        raise
    sync()
    return t0, time.perf_counter(), clock, out


def _tokens(out: Any, prompt_len: int) -> tuple[list[int], list[float], list[float]]:
    """The new tokens, and per step the top-two margin and the top logit (of the raw logits)."""
    tokens = [int(t) for t in out.sequences[0, prompt_len:].tolist()]
    margins, tops = [], []
    for logits in list(out.logits or ())[:TOP_TOKENS_KEPT]:
        top = torch.topk(logits[0].float(), 2).values
        margins.append(float(top[0] - top[1]))
        tops.append(float(top[0]))
    return tokens, margins, tops


def serve_one(
    model: Any, request: Request, kwargs: dict, sync: Callable, res: GenResult, logits: Any
) -> None:
    """One request served: its times, tokens, compiles, or its error (named with its step); its
    step logits into `logits` (probes/generate_logits.py StepLogits), after its end was read."""
    ids = prompt_of(request.args)
    plen = int(ids.shape[-1])
    if not res.begin(request, plen, check_prompt(ids) or too_long(model, plen, kwargs)):
        return
    try:
        t0, end, clock, out = _served(model, ids, kwargs, sync)
    except Exception as exc:  # noqa: BLE001
        clock = getattr(exc, "tcdoctor_clock", None)
        if clock is not None:
            clock.attribute()
            res.compiled(clock, request, plen)
        res.failed(request, len(clock.times) if clock is not None else 0, exc)
        return
    clock.attribute()  # off the clock: the request's end was read
    events = res.compiled(clock, request, plen)
    dtype = tol_dtype(model, out.logits[0].dtype if out.logits else None)
    res.served(request, (t0, end), clock, _tokens(out, plen), dtype, events)
    if logits is not None:
        logits.dtype = logits.dtype or dtype
        logits.add_all(request.index, out.logits)


def replay_generate(
    model: Any,
    requests: Iterable[Request],
    kwargs: dict,
    sync: Callable[[], None],
    *,
    deadline: float,
    compile_kwargs: dict | None = None,
    logits: Any = None,
    serve: Callable[..., None] = serve_one,
) -> GenResult:
    """Serve each request through `serve(model, request, kwargs, sync, res, logits)`, one at a
    time: this module's serve_one (`model.generate(**kwargs)`, the module's method) or
    generate_loop.serve_one (the user's loop, `model` its LoopStep); `logits`: a StepLogits that
    keeps each served request's step logits."""
    res = GenResult(recompile_limit=recompile_limit(compile_kwargs))
    for request in each_request(requests, res, deadline):
        with torch.no_grad():
            serve(model, request, kwargs, sync, res, logits)
    return res


PAIR_SIDES = ("eager", "compiled")


def in_rounds(
    requests: Callable[[], Iterable[Request]], pairs: int, rounds: list[int]
) -> Iterator[Request]:
    """The traffic's requests (`requests()`: the same requests in the same order each call) again
    and again, whole rounds, until at least `pairs` were yielded; each request's round appended
    to `rounds` as it is yielded. An empty traffic yields nothing."""
    served = r = 0
    while served < pairs:
        n = 0
        for request in requests():
            rounds.append(r)
            n += 1
            yield request
        if n == 0:
            return
        served, r = served + n, r + 1


def round_changes(res: GenResult, side: str, rounds: list[int]) -> list[dict]:
    """Where a request's tokens in a later round differ from its first round's (the same prompt,
    greedy, the same model: a difference is a finding, never noise): per such request and round,
    the first step that differs. Rows line up by position: every round serves the same requests
    in the same order, a refused one holding its row."""
    size = rounds.count(0)
    out = []
    for i, r in enumerate(rounds[: len(res.tokens)]):
        a, b = res.tokens[i - r * size], res.tokens[i]
        if r == 0 or a is None or b is None or a == b:
            continue
        step = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        out.append({"side": side, "round": r, "request": i - r * size, "step": step})
    return out


def replay_paired(
    requests: Callable[[], Iterable[Request]],
    serve: Callable[[Request, GenResult, str], None],
    swap: Callable[[str], None],
    *,
    deadline: float,
    pairs: int,
    compile_kwargs: dict | None = None,
) -> tuple[GenResult, GenResult]:
    """Each request served twice back to back, once per side, so a phase of the host (a
    neighbour's load, seconds long) falls on both halves of a pair: `swap(side)` sets the side up
    (an attribute assignment, outside every clock), `serve(request, result, side)` serves it.
    Which side goes first alternates (eager first on the 1st, 3rd, ... pair), so neither side
    always meets the other's after-effects (a warm cache, a freed allocator block). The prompts
    are served in rounds (`in_rounds`: `requests()` again, the same requests in the same order)
    until at least `pairs` pairs (`Rules.generation_pairs`) or `deadline` (the part's time: then
    fewer, and the results say how many: `rounds`, `round_size`, `pairs_wanted`, `stopped`);
    rows are in serving order, round after round. Each round's tokens are compared with the first
    round's (`round_changes`). The two results share one origin, so their `start_s` say when each
    request began on one clock. Returns (compiled, eager); the compiled side is set back at the
    end."""
    compiled = GenResult(recompile_limit=recompile_limit(compile_kwargs))
    eager = GenResult(origin=compiled.origin)
    results = {"eager": eager, "compiled": compiled}
    rounds: list[int] = []
    try:
        for k, request in enumerate(
            each_request(in_rounds(requests, pairs, rounds), compiled, deadline)
        ):
            for side in PAIR_SIDES if k % 2 == 0 else PAIR_SIDES[::-1]:
                swap(side)
                with torch.no_grad():
                    serve(request, results[side], side)
    finally:
        swap("compiled")
    eager.wall_s, eager.stopped = compiled.wall_s, compiled.stopped
    for side, res in results.items():
        res.rounds = max(rounds) + 1 if rounds else 0
        res.round_size, res.pairs_wanted = rounds.count(0), pairs
        res.round_changes = round_changes(res, side, rounds)
    return compiled, eager
