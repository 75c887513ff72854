"""The generation section (issue 60): a Generation's prompts served by `generate`, eager and
compiled, each in its own fresh process: time to first token (TTFT), inter-token latency (ITL),
time per output token (TPOT), tokens/s; the compiles during generation with their request, decode
step, cache length and guard; the greedy tokens compared with eager's; the cache strategies judged.

Written inside the serving section (`Serving.generation`, absent unless the target is a
`tcdoctor.Generation`: every other report is unchanged). Filled from run/serving/generate_section.py.
Seconds in the JSON. Percentiles: the serving section's one rule (sections/percentiles.py) over
every decode step of every request served (ITL), or over the requests served (TTFT, TPOT, tokens/s).
Each figure is a derived property, written to the JSON and recomputed on load.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from ..processes.paired import Interval, per_request
from ..processes.paired import steady as served
from ..record import Record
from .percentiles import percentile, quantile


@dataclass
class GenCompile(Record):
    """One compile during generation (a CompilationMetrics entry): the request, the decode step
    whose forward compiled it (0: the prefill), the cache length that forward attended over, the
    guard that failed in PyTorch's words, its kind ('compile', 'recompile', 'limit', 'failed')."""

    request: int | None = None
    shapes: str | None = None
    step: int | None = None
    cache_length: int | None = None
    prefill: bool | None = None
    seconds: float | None = None
    reason: str | None = None
    compile_id: str | None = None
    kind: str | None = None
    function: str | None = None
    fail_type: str | None = None
    fail_reason: str | None = None


MADE = ("compile", "recompile")


@dataclass
class GenSide(Record):
    """One replay through generate: per request (null where not served) its token times (seconds
    from the call), its time to the last token, its prompt length, its tokens and per-step top-two
    margins; the compiles; the errors; the requests served after recompile_limit was hit."""

    DERIVED = (
        "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "itl_p50_s", "itl_p90_s", "itl_p99_s",
        "tpot_p50_s", "tpot_p90_s", "tpot_p99_s", "tokens_per_s", "request_tokens_per_s_p50",
        "new_tokens", "compile_count",
    )  # fmt: skip
    OMIT_NONE = ("rounds", "round_size", "pairs_wanted", "round_changes")

    token_times_s: list[list[float] | None] = field(default_factory=list)
    total_s: list[float | None] = field(default_factory=list)
    prompt_lengths: list[int | None] = field(default_factory=list)
    tokens: list[list[int] | None] = field(default_factory=list)
    margins: list[list[float] | None] = field(default_factory=list)
    top_logits: list[list[float] | None] = field(default_factory=list)
    compiles: list[GenCompile] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    past_limit: list[int] = field(default_factory=list)
    recompile_limit: int | None = None
    limit_hit: dict[str, Any] | None = None
    tol: float | None = None
    stopped: str | None = None
    wall_s: float | None = None
    start_s: list[float | None] = field(default_factory=list)  # request starts, the replay's clock
    # a paired replay's rounds (probes/generate.py `replay_paired`; absent in older reports and
    # other replays): rounds begun, requests in one, the pairs asked, tokens that changed
    rounds: int | None = None
    round_size: int | None = None
    pairs_wanted: int | None = None
    round_changes: list[dict[str, Any]] | None = None
    generate_kwargs: dict[str, str] = field(default_factory=dict)
    compile_kwargs: dict[str, str] | None = None
    auto_compile: bool | None = None
    device: str | None = None
    method: str | None = None

    def _served(self) -> list[list[float]]:
        return [t for t in self.token_times_s if t]

    @property
    def ttfts(self) -> list[float]:
        return [t[0] for t in self._served()]

    @property
    def itls(self) -> list[float]:
        return [b - a for t in self._served() for a, b in zip(t, t[1:])]

    @property
    def tpots(self) -> list[float]:
        return [(t[-1] - t[0]) / (len(t) - 1) for t in self._served() if len(t) > 1]

    ttft_p50_s = quantile("ttfts", 0.50)
    ttft_p90_s = quantile("ttfts", 0.90)
    ttft_p99_s = quantile("ttfts", 0.99)
    itl_p50_s = quantile("itls", 0.50)
    itl_p90_s = quantile("itls", 0.90)
    itl_p99_s = quantile("itls", 0.99)
    tpot_p50_s = quantile("tpots", 0.50)
    tpot_p90_s = quantile("tpots", 0.90)
    tpot_p99_s = quantile("tpots", 0.99)

    @property
    def new_tokens(self) -> int:
        """The new tokens served (requests that failed left out)."""
        return sum(len(t) for t in self._served())

    @property
    def tokens_per_s(self) -> float | None:
        """Over the replay: all new tokens / the sum of the served requests' times."""
        served = [x for x, t in zip(self.total_s, self.token_times_s) if x and t]
        return self.new_tokens / sum(served) if served else None

    @property
    def request_tokens_per_s_p50(self) -> float | None:
        """Per request its new tokens / its time; the median request."""
        rates = [len(t) / x for x, t in zip(self.total_s, self.token_times_s) if x and t]
        return percentile(rates, 0.50)

    @property
    def compile_count(self) -> int:
        """The compiles that made a graph."""
        return sum(1 for c in self.compiles if c.kind in MADE)

    def rounds_words(self, pairs: int) -> str:
        """How many pairs a paired replay's figures rest on and in what rounds ("32 pairs: 4
        rounds of 8"); fewer than it asked says so, never the number asked. Empty for a replay
        without rounds (reports written before them)."""
        if not self.rounds or not self.round_size:
            return ""
        served = len(self.total_s)
        rounds = f"{self.rounds} round{'s' if self.rounds != 1 else ''} of {self.round_size}"
        if served < self.rounds * self.round_size:
            rounds += ", the last cut short"
        text = f"{pairs} pair{'s' if pairs != 1 else ''}: {rounds}"
        if self.pairs_wanted and pairs < self.pairs_wanted:
            why = self.stopped or "requests failed"
            text += f" (fewer than the {self.pairs_wanted} asked: {why})"
        return text


@dataclass
class Divergence(Record):
    """A request whose compiled greedy tokens left eager's: the step, both tokens, the top-two
    margins, the tie bound, the call ('tie', 'numerics', 'unknown'); `logits_within`: whether that
    step's full logits passed the numerics rule (None: not compared), which then decides the call."""

    OMIT_NONE = ("logits_within",)

    request: int | None = None
    step: int | None = None
    eager_token: int | None = None
    compiled_token: int | None = None
    margin_eager: float | None = None
    margin_compiled: float | None = None
    tie_bound: float | None = None
    call: str | None = None
    logits_within: bool | None = None


@dataclass
class TokensEqual(Record):
    """Compiled greedy tokens against eager's (run/serving/generate_section.py)."""

    compared: int | None = None
    equal: int | None = None
    divergences: list[Divergence] = field(default_factory=list)
    tol: float | None = None
    method: str | None = None

    @property
    def numerics_failures(self) -> list[Divergence]:
        return [d for d in self.divergences if d.call == "numerics"]


@dataclass
class LogitsAt(Record):
    """A token divergence's step: whether its logits passed the numerics rule, their largest
    absolute difference."""

    request: int | None = None
    step: int | None = None
    within: bool | None = None
    max_abs_diff: float | None = None


@dataclass
class LogitsCompared(Record):
    """Each step's full logits, compiled against eager's, by the numerics rule, from step 0 up to
    and including a request's first token divergence (probes/generate_logits.py: the method):
    the requests and steps compared, the steps that failed and the first of them, the largest
    absolute difference and where, each divergence's step, the steps past a side's cap."""

    DERIVED = ("passed",)

    requests: int | None = None
    steps: int | None = None
    failed_steps: int | None = None
    first_fail_request: int | None = None
    first_fail_step: int | None = None
    max_abs_diff: float | None = None
    max_request: int | None = None
    max_step: int | None = None
    divergences: list[LogitsAt] = field(default_factory=list)
    unrecorded_steps: int | None = None
    tol: float | None = None
    rule: str | None = None
    method: str | None = None

    @property
    def passed(self) -> bool | None:
        """Every compared step within the rule (None: no step compared)."""
        if not self.steps or self.failed_steps is None:
            return None
        return self.failed_steps == 0


def beside(steady_side: GenSide | None, eager: GenSide | None) -> float | None:
    """The median request's steady / eager time, each request's two halves served back to back
    in one process (probes/generate.py `replay_paired`): the figure a strategy is judged by
    (run/serving/generate_section.py `judge` compares it request by request with the
    reference's), of one moment of the host, unlike the process's absolute TTFT, ITL and tokens/s
    (another moment each). None: no pairs."""
    if steady_side is None or eager is None:
        return None
    ratios = per_request(served(steady_side.total_s), served(eager.total_s))
    return statistics.median(ratios.values()) if ratios else None


@dataclass
class GenStrategy(Record):
    """One cache strategy in a fresh process: cold and steady replays, compiles, warm-up cost,
    the cache's length and bytes, its interval against the reference."""

    OMIT_NONE = ("cache_start", "cache_length", "compile_kwargs", "paired_eager")

    name: str | None = None
    label: str | None = None
    compile_kwargs: dict[str, str] | None = None
    cache_length: int | None = None
    cache_bytes: int | None = None
    compiles: int | None = None
    compile_s: float | None = None
    warmup_s: float | None = None
    cold: GenSide | None = None
    steady: GenSide | None = None
    paired_eager: GenSide | None = None  # eager beside each steady request, in this process
    interval: Interval | None = None
    cache_start: str | None = None
    method: str | None = None

    @property
    def vs_eager(self) -> float | None:
        """Its steady / eager time beside it in its own process, the median request (`beside`)."""
        return beside(self.steady, self.paired_eager)

    @property
    def is_reference_again(self) -> bool:
        """The `dynamic` row: the reference's configuration again, in a second process; judged by
        no interval (it is where the spread between the reference's processes comes from)."""
        return self.name == "dynamic" and self.interval is None


def reference_again(rows: list[GenStrategy]) -> GenStrategy | None:
    """The strategies' `dynamic` row (`GenStrategy.is_reference_again`), or None."""
    return next((r for r in rows if r.is_reference_again), None)


@dataclass
class GenerationSection(Record):
    """The generation section: the prompts, each side, the tokens compared, the strategies."""

    prompts: int | None = None
    max_new_tokens: int | None = None
    generate_kwargs: dict[str, str] = field(default_factory=dict)
    eager: GenSide | None = None
    compiled: GenSide | None = None
    steady: GenSide | None = None
    # eager served beside each steady request in the compiled process: the decision's eager side
    paired_eager: GenSide | None = None
    tokens: TokensEqual | None = None
    strategies: list[GenStrategy] = field(default_factory=list)
    process_spread: float | None = None
    proof: dict[str, Any] | None = None
    not_measured: dict[str, str] = field(default_factory=dict)
    loop: bool | None = None  # the user's own prefill/decode loop (target/generation_loop.py)
    logits: LogitsCompared | None = None  # absent in reports written before it

    OMIT_NONE = ("loop", "logits", "paired_eager")

    @property
    def decision_eager(self) -> GenSide | None:
        """The eager side the decision compares with: served beside each compiled steady request
        in the compiled process (`paired_eager`); in reports written before it, eager's own
        process (two processes, two moments)."""
        return self.paired_eager or self.eager

    @property
    def vs_eager(self) -> float | None:
        """Compiled steady / eager beside it in the compiled process, the median request
        (`beside`): the strategies' reference, by the same measure as their rows."""
        return beside(self.steady, self.paired_eager)

    @property
    def again(self) -> GenSide | None:
        """The steady replay of the reference's second process (the `dynamic` strategy, judged by
        no interval: your setting again in a fresh process); with `steady`, one setting served in
        two processes at two moments of the host, for how far a figure moves between processes."""
        row = reference_again(self.strategies)
        return row.steady if row else None

    @property
    def pairs(self) -> int:
        """The requests served both eager and compiled in the compiled process's paired replay."""
        if self.steady is None or self.paired_eager is None:
            return 0
        both = zip(self.steady.total_s, self.paired_eager.total_s)
        return sum(1 for a, b in both if a is not None and b is not None)

    @property
    def paired_words(self) -> str:
        """Where the decision's eager and compiled request times were taken, in words."""
        if self.paired_eager is not None:
            words = "paired in the compiled process: each request eager and compiled back to back"
            rounds = self.steady.rounds_words(self.pairs) if self.steady else ""
            return f"{words}, {rounds}" if rounds else words
        return "eager in its own process, compiled in another"

    @property
    def compiled_what(self) -> str:
        """What the compiled side compiled: the decode step of the user's loop, or the forward
        that `generate` calls."""
        return "your decode step" if self.loop else "the forward"

    @property
    def reference_words(self) -> str:
        """The compiled setting the strategies and the verdict compare with."""
        return "your decode step compiled" if self.loop else "your generate_kwargs"

    @property
    def traffic_compiles(self) -> int | None:
        """The compiles the compiled side made during the prompts (None: not replayed)."""
        return self.compiled.compile_count if self.compiled else None
