"""A Generation's judgement (issue 60): which cache and compile setting to serve `generate` with,
and the headline decision, both from one reading of the generation's evidence (`judged`), so the
report's headline and its operating model never disagree. Reads the report's generation section
(report/sections/generation.py) and, where the compiled forward itself fails, the figures of the
single forward call (verdict/figures.py); verdict/serving.py hands a Generation's report here and
verdict/__init__.py `decide` asks `headline` for the decision.

Method: the serving section's one paired rule (report/processes/paired.py `ratio_interval`: the
ratio of median request times, prompt to last token, paired by request, a 95% bootstrap interval
widened by the spread between the reference's two processes, `GenerationSection.process_spread`).
The pairs are of one moment: in the compiled process, after its cold replay, each request was
served eager and compiled back to back (`GenerationSection.paired_eager`; probes/generate.py
`replay_paired`); the statistic is the median request's compiled / eager ratio (`pair_interval`),
its bootstrap resampling whole prompts with all their rounds (the record's `round_size`: a
prompt's repeats are not independent evidence), and the spread that of the same in the `dynamic`
strategy's process (`pair_spread`), so a phase of
the host (a neighbour's load, seconds long) falls on both halves of the pairs it covers and cannot
decide. Reports written before the pairs compare eager's own process by the ratio of the two
sides' medians instead (`decision_eager`, `ratio_interval`), as they did.
The headline, in order:
- the compiled forward failed, or Dynamo made no graph on one call: the single forward's decision
  (dont-compile), as for any target;
- compiled greedy tokens that leave eager's beyond the numerics rule (a "numerics" divergence; where
  the step's full logits were compared, they decide), the steps' logits leaving eager's beyond the
  rule while the tokens stay equal (probes/generate_logits.py), or the single forward's numerics
  check failing: dont-compile, with the request and step named (a near-tie does not count);
- the generation compared (the reference: the forward compiled with the user's generate_kwargs,
  the compiled process's steady replay, against eager's replay): "faster" -> compile, unless its
  compiles during generation are repaid only after more requests than `rules.expected_calls`
  (dont-compile); "slower" -> dont-compile; inside the noise (or not judged across processes) ->
  cant-tell. A fix of the user's own code that the single forward's decision says pays
  (compile-after-fixes: graph breaks in the user's code that block) stays the headline: that
  evidence is about the forward the generation runs;
- not compared (a side missing, too few requests): the single forward's decision, said as such.
The single forward's first reason stays in the reasons, labelled as evidence beside the decision.
The cache strategy named is the fastest whose interval against the reference decides "faster"
(the strategies' table); none decides: the reference's setting.

Pitfalls: the paired eager requests run in a process that has compiled (the model's own forward
set back by attribute: no Dynamo frame on it); eager's fresh process keeps the figures a never-
compiled server sees (the section's table), so the two eager figures differ by the host's phase
and are labelled; the compiles' seconds come from the cold replay.
Without a second reference process no spread is known and nothing decides across processes (the
text says so).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import units
from ..outcomes import Decision
from ..report.processes.claims import Claim
from ..report.processes.paired import Interval, pair_interval, ratio_interval, steady
from ..report.sections.generation import MADE, Divergence, GenerationSection
from ..report.sections.serving import OperatingModel
from ..thresholds import RULES, Rules
from .figures import Figures

if TYPE_CHECKING:
    from ..report.model import Report

THREADS = "Timed with"  # decision.thread_reason's line: a loaded machine, every timing
EVIDENCE = (
    "One forward call on the example inputs (evidence beside the generation, not the decision)"
)


@dataclass(frozen=True)
class Judged:
    """The generation's evidence, read once: the paired interval (compiled steady / eager), the
    first numerics divergence of the tokens, why the compiled forward itself rules compiling out
    (it failed, made no graph, or failed its numerics), the compile seconds during generation and
    the requests they take to repay."""

    g: GenerationSection
    interval: Interval | None
    failure: str | None  # the numerics failure in words (a divergence, or the logits drifting)
    forward: str | None  # why the compiled forward itself rules compiling out (None: it does not)
    compile_s: float | None
    repay_requests: int | None
    horizon: int

    @property
    def never_repaid(self) -> bool:
        return self.repay_requests is not None and self.repay_requests > self.horizon

    @property
    def decision(self) -> Decision | None:
        """What the generation decides (None: not compared, the single forward decides)."""
        if self.failure is not None or self.forward is not None:
            return Decision.DONT_COMPILE
        if self.interval is None:
            return None
        claim = self.interval.claim
        if claim is Claim.FASTER:
            return Decision.DONT_COMPILE if self.never_repaid else Decision.COMPILE
        return Decision.DONT_COMPILE if claim is Claim.SLOWER else Decision.CANT_TELL


def judged(report: Report, rules: Rules = RULES) -> Judged | None:
    """The generation's evidence (None: the report has no generation section)."""
    g = report.serving.generation if report.serving is not None else None
    if g is None:
        return None
    iv = None
    e = g.decision_eager
    if e is not None and g.steady is not None:
        judge = pair_interval if g.paired_eager is not None else ratio_interval
        c, sides = g.steady, (steady(g.steady.total_s), steady(e.total_s))
        iv = judge(*sides, g.process_spread, "eager", rules, c.round_size or e.round_size)
    bad = g.tokens.numerics_failures if g.tokens else []
    compile_s = None
    if g.compiled is not None:
        compile_s = sum(c.seconds or 0.0 for c in g.compiled.compiles if c.kind in MADE)
    return Judged(
        g=g,
        interval=iv,
        failure=_failure_text(bad[0]) if bad else _logits_failure(g),
        forward=_forward(Figures.from_report(report), g.compiled_what),
        compile_s=compile_s,
        repay_requests=_repay(g, compile_s),
        horizon=int(rules.expected_calls),
    )


def _forward(fig: Figures, what: str = "the forward") -> str | None:
    """Why the compiled forward (`what`: a loop's decode step) itself rules compiling out,
    whatever the generation showed: it failed, Dynamo made no graph on a call, or its outputs fail
    the numerics rule."""
    if fig.compile_failed_message is not None:
        return f"compiling {what} failed ({fig.compile_failed_message})"
    if fig.graphs == 0:
        return f"Dynamo made no graph of {what}: nothing was compiled"
    if fig.numerics_passed is False:
        return f"{what} compiled gives outputs that differ from eager's beyond the numerics rule"
    return None


def _repay(g: GenerationSection, compile_s: float | None) -> int | None:
    """Requests until the compiles during generation are repaid: their seconds over the median
    request's saving (eager's median request time less the compiled steady one's); None where
    either is unknown or nothing is saved (the interval says whether it is faster)."""
    if not compile_s or g.decision_eager is None or g.steady is None:
        return None
    e = [x for x in g.decision_eager.total_s if x is not None]
    c = [x for x in g.steady.total_s if x is not None]
    if not e or not c:
        return None
    saving = statistics.median(e) - statistics.median(c)
    return math.ceil(compile_s / saving) if saving > 0 else None


def operating_model(
    report: Report, decision: Decision | str | None = None, rules: Rules = RULES
) -> OperatingModel | None:
    """The Generation's operating model (None: no generation section); `decision`: the headline's,
    for the line that relates the two."""
    j = judged(report, rules)
    if j is None:
        return None
    iv, g = j.interval, j.g
    name, strategy_text = _best(g)
    figures = [
        f"compiled ({g.reference_words}, steady) / eager request time ({g.paired_words}): "
        f"{units.paired(iv)}"
    ]
    figures.append(f"compiles during generation: {_compiles_text(j)}")
    rel = relation(j, decision)
    if j.failure is not None:
        text = "eager: " + j.failure
    elif j.forward is not None:
        text = f"eager: {j.forward}"
    elif iv is None:
        return OperatingModel(
            model=None,
            text="no operating model named: eager and compiled generation were not both compared "
            "(too few requests served on a side)",
            figures=figures,
            strategy_text=strategy_text,
            relation=rel,
        )
    elif iv.claim is not Claim.FASTER or j.never_repaid:
        text = f"eager: compiling {g.compiled_what} is not shown faster on these prompts"
        text += f" ({units.paired(iv)})" if not j.never_repaid else f" ({_repaid_text(j)})"
    else:
        setting = f"the {name} cache strategy" if name else "your generate_kwargs"
        text = f"JIT: model.forward compiled, with {setting} ({units.paired(iv)} vs eager)"
        if g.loop:
            text = f"JIT: your decode step compiled ({units.paired(iv)} vs eager)"
        return OperatingModel(
            model="jit", text=text, figures=figures, strategy=name,
            strategy_text=strategy_text, relation=rel,
        )  # fmt: skip
    return OperatingModel(
        model="eager", text=text, figures=figures, strategy_text=strategy_text, relation=rel
    )


def headline(j: Judged, single: tuple[Decision, list[str]]) -> tuple[Decision, list[str]]:
    """The headline decision of a Generation and its reasons (see the module's docstring)."""
    decided, reasons = single
    if j.forward is not None:
        return decided, reasons  # the compiled forward itself: as for any target
    if j.failure is not None:
        return Decision.DONT_COMPILE, [
            f"Decided by the generation: {j.failure}.",
            f"{EVIDENCE}: {reasons[0]}",
        ]
    own = j.decision
    if own is None:
        why = (
            "The generation was not compared (eager and compiled were not both served on enough "
            "requests): this decision judges one forward call on the example inputs."
        )
        return decided, [why, *reasons]
    head = f"Decided by the generation: {_generation_text(j)}."
    if decided == Decision.COMPILE_AFTER_FIXES:  # the user's own breaks block: as for any target
        return decided, [head, *reasons]
    loaded = [reasons[-1]] if len(reasons) > 1 and reasons[-1].startswith(THREADS) else []
    return own, [head, f"{EVIDENCE}: {reasons[0]}", *loaded]


def relation(j: Judged, decision: Decision | str | None) -> str:
    """How the operating model relates to the headline `decision`, in one line ('' unknown)."""
    if decision is None:
        return ""
    if j.decision is None:
        return (
            "The verdict above judges one forward call on the example inputs (the generation "
            "was not compared)."
        )
    if decision == Decision.COMPILE_AFTER_FIXES and j.decision != decision:
        return (
            "The verdict above adds the fixes of your own code that the forward call shows pay; "
            "until they are made, this model."
        )
    return "The verdict above is this judgement: it rests on the generation's evidence."


def _generation_text(j: Judged) -> str:
    g, iv = j.g, j.interval
    e, c = g.decision_eager, g.steady
    claim = iv.claim if iv is not None else Claim.UNDECIDED
    said = {
        Claim.FASTER: "compiled generation is faster than eager",
        Claim.SLOWER: "compiled generation is slower than eager",
    }.get(claim, "compiled generation is not shown faster or slower than eager (can't tell)")

    def both(name: str, show=units.seconds) -> str:
        return (
            f"eager {show(getattr(e, name, None))}, compiled steady {show(getattr(c, name, None))}"
        )

    text = (
        f"{said} on these {units.count(g.prompts)} prompts x {units.count(g.max_new_tokens)} new "
        f"tokens, request time compiled (steady) / eager {units.paired(iv)} ({g.paired_words}); "
        f"there, TTFT p50 "
        f"{both('ttft_p50_s')}; ITL p99 {both('itl_p99_s')}; tokens/s "
        f"{both('tokens_per_s', units.tokens_rate)}; compiles during generation {_compiles_text(j)}"
    )
    if claim is Claim.FASTER and j.never_repaid:
        text += f"; but {_repaid_text(j)}"
    return text


def _compiles_text(j: Judged) -> str:
    n = j.g.traffic_compiles
    if n is None:
        return units.NA
    shown = j.interval is not None and j.interval.claim is Claim.FASTER  # else no saving shown
    repay = ""
    if shown and j.repay_requests:
        repay = f", repaid after {units.grouped(j.repay_requests)} requests"
    return f"{units.count(n)} ({units.seconds(j.compile_s)} of compiling{repay})"


def _repaid_text(j: Judged) -> str:
    return (
        f"its {units.seconds(j.compile_s)} of compiling during generation is repaid only after "
        f"{units.grouped(j.repay_requests)} requests, beyond the expected {units.grouped(j.horizon)}"
    )


def _failure_text(d: Divergence) -> str:
    if d.logits_within is False:
        return (
            f"compiled greedy tokens leave eager's at request {d.request}, step {d.step}: the "
            f"compiled decoder computes something different there (that step's logits outside "
            f"the numerics rule; top-two margin {units.sci(d.margin_eager)})"
        )
    return (
        f"compiled greedy tokens leave eager's at request {d.request}, step {d.step} "
        f"(top-two margin {units.sci(d.margin_eager)}, beyond the numerics rule's "
        f"{units.sci(d.tie_bound)})"
    )


def _logits_failure(g: GenerationSection) -> str | None:
    """The logits outside the numerics rule while every token stayed equal (None: they passed,
    or were not compared): a compiler bug that has not flipped an argmax yet."""
    lg = g.logits
    if lg is None or not lg.failed_steps:
        return None
    return (
        f"the compiled decoder computes something different at request {lg.first_fail_request}, "
        f"step {lg.first_fail_step}: {units.count(lg.failed_steps)} of {units.count(lg.steps)} "
        f"steps' logits leave eager's beyond the numerics rule (largest difference "
        f"{units.sci(lg.max_abs_diff)}), though no greedy token changed there"
    )


def _best(g: GenerationSection) -> tuple[str | None, str]:
    """The fastest strategy whose interval decides "faster" against the reference, and its line."""
    faster = [
        r for r in g.strategies if r.interval is not None and r.interval.claim is Claim.FASTER
    ]
    if not faster:
        judged_ = [r for r in g.strategies if r.interval is not None]
        if not judged_:
            return None, ""
        return None, f"no cache strategy is faster than {g.reference_words} beyond the noise"
    best = min(faster, key=lambda r: r.interval.ratio)  # type: ignore[union-attr]
    return best.name, f"best cache strategy: {best.label} ({units.paired(best.interval)})"
