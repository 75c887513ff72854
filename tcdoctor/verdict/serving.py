"""The operating model that fits the traffic replayed (issue 55): eager, JIT (torch.compile) with
the proven warm-up, or AOT (torch.export + an AOTInductor package), with the figures behind the
choice, the shape strategy that serves this traffic best, and how the choice relates to the
report's headline. Reads the report's serving section only (report/sections/serving.py).

Method. Every comparison is one paired interval (report/processes/paired.py `ratio_interval`, the
rule the strategies' table uses): the ratio of medians of two replays of the same traffic, paired
by request, a 95% percentile-bootstrap interval, widened on both sides by the spread between two
processes of one configuration (`Serving.process_spread`: the proof's replay against the host
part's compiled replay); it decides "faster" or "slower" only when the widened interval excludes
1, and is "inside the noise" otherwise. The sides: eager is the replay's eager side; JIT is the
proof's replay (the traffic served after the warm-up under fail_on_recompile: the steady state a
warmed server gives), or, where the proof did not run, the replay's compiled side less the
requests that compiled and those the eager fallback served; AOT is the package's replay in its
own fresh process.

The rule:
- JIT is a fit only with a warm-up proven to cover the traffic (no request compiles after it, so
  no user pays a compile and none is served by the eager fallback) and JIT shown faster than eager;
- AOT is a fit when the package served the traffic with numerics not failing, and is chosen over
  JIT when it is faster than JIT beyond the noise, or inside the noise and its start (load and first
  request, from the spawn) is shorter than the JIT restart's first request; over eager when it is
  faster than eager beyond the noise;
- otherwise eager: compiling is not shown to pay on this traffic ("inside the noise" says so);
- where JIT is faster but no warm-up covers the traffic and AOT is not a fit, no model is named:
  the text says what stands in the way.

The strategy named best is the fastest of those whose interval against plain torch.compile decides
"faster"; a strategy that served requests by the eager fallback or failed requests is not named
(its interval speaks of the requests it compiled for, not of the traffic). Where none decides, the
text says they are inside the noise.

Pitfalls: the headline times steady calls on the example inputs across processes, this judges the
traffic's own requests, so the two can differ; `relation` says how they relate in one line, and
neither is changed by the other. The spread between processes is the largest of at most three
pairs of the reference's processes (run/serving/section.py `process_spread`): a few draws, not a
distribution; a row near the noise's edge can read differently in another run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import units
from ..outcomes import Decision
from ..report.processes.claims import Claim
from ..report.processes.paired import Interval, ratio_interval, steady
from ..report.sections.serving import Aot, OperatingModel, ServeStrategy, Serving
from ..thresholds import RULES, Rules

if TYPE_CHECKING:
    from ..report.model import Report

EAGER, JIT, AOT = "eager", "jit", "aot"
NAMES = {
    EAGER: "eager (no compile)",
    JIT: "JIT: torch.compile with the proven warm-up",
    AOT: "AOT: torch.export and an AOTInductor package",
}


def operating_model(
    report: Report, decision: Any = None, rules: Rules = RULES
) -> OperatingModel | None:
    """The operating model for the report's traffic (None: the report has no serving section);
    `decision`: the headline's, which `relation` relates it to (default: the report's verdict's,
    as saved; `verdict.decide` hands the one it has just made)."""
    s = report.serving
    if s is None:
        return None
    decision = report.verdict.decision if decision is None else decision
    if s.generation is not None:  # a Generation (issue 60): its own operating model
        from .generation import operating_model as generation_model

        return generation_model(report, decision, rules)
    sides, floor = _sides(s), s.process_spread
    jit_eager = _compare(sides, JIT, EAGER, floor)
    aot_jit, aot_eager = _compare(sides, AOT, JIT, floor), _compare(sides, AOT, EAGER, floor)
    model, text = _choose(s, jit_eager, aot_jit, aot_eager)
    name, strategy = _best_strategy(s)
    return OperatingModel(
        model=model,
        text=text,
        figures=_figures(s, jit_eager, aot_jit),
        strategy=name,
        strategy_text=strategy,
        relation=_relation(decision, model),
    )


def _sides(s: Serving) -> dict[str, dict[int, float]]:
    """Each model's steady latencies by request (see the module's docstring)."""
    replay = s.replay
    out: dict[str, dict[int, float]] = {}
    if replay and replay.eager:
        out[EAGER] = steady(replay.eager.latencies_s)
    proof = s.warmup.proof if s.warmup else None
    if proof and any(x is not None for x in proof.latencies_s):
        out[JIT] = steady(proof.latencies_s)
    elif replay and replay.compiled:
        side = replay.compiled
        skip = {c.request for c in side.compiles if c.request is not None}
        out[JIT] = steady(side.latencies_s, skip | set(side.fallback_requests))
    if s.aot and s.aot.served:
        out[AOT] = steady(s.aot.latencies_s)
    return out


def _compare(
    sides: dict[str, dict[int, float]], a: str, b: str, floor: float | None
) -> Interval | None:
    """`a` / `b` on the requests both served (None: either side missing, or too few pairs)."""
    if not sides.get(a) or not sides.get(b):
        return None
    return ratio_interval(sides[a], sides[b], floor, b)


def _faster(iv: Interval | None) -> bool:
    return iv is not None and iv.claim is Claim.FASTER


def _aot_fits(s: Serving) -> str | None:
    """None when the AOT package served the traffic with numerics not failing, else why not."""
    aot = s.aot
    if aot is None:
        return s.not_measured.get("aot") or "not measured"
    if aot.unexported:
        where, why = aot.unexported
        return f"does not export{f' ({where})' if where else ''}: {why}"
    if not aot.served:
        return aot.unserved_why or "the package served no request"
    if (aot.numerics or {}).get("passed") is False:
        return "its outputs differ from eager's (numerics failed)"
    return None


def _jit_gap(s: Serving) -> str | None:
    """None when a warm-up is proven to cover the traffic, else what stands in the way."""
    side = s.compiled
    if side is not None and side.fallback_requests:
        return (
            f"recompile_limit ({side.recompile_limit}) was reached: "
            f"{len(side.fallback_requests)} request(s) ran on the eager fallback"
        )
    proof = s.warmup.proof if s.warmup else None
    if proof is None:
        return s.not_measured.get("proof") or "the warm-up's proof was not measured"
    if proof.proven:
        return None
    first = (proof.compiled_requests or [{}])[0]
    if first.get("request") is not None:
        return (
            f"the warm-up is not proven: request {first['request']} {first.get('shapes') or ''} "
            f"would compile ({first.get('reason') or 'a new frame'})"
        )
    return f"the warm-up is not proven ({proof.why or 'no request served'})"


def _choose(
    s: Serving, jit_eager: Interval | None, aot_jit: Interval | None, aot_eager: Interval | None
) -> tuple[str | None, str]:
    """The model and its one line (see the module's docstring for the rule)."""
    aot_no, jit_no = _aot_fits(s), _jit_gap(s)
    jit_fast = _faster(jit_eager)
    if jit_eager is None:
        return None, "no operating model named: eager and compiled were not both replayed"
    if jit_fast and jit_no is None:
        if aot_no is None and _faster(aot_jit):
            return (
                AOT,
                f"{NAMES[AOT]}: faster than the JIT on this traffic ({units.paired(aot_jit)})",
            )
        if (
            aot_no is None
            and aot_jit is not None
            and aot_jit.inside_the_noise
            and _starts_sooner(s)
        ):
            return AOT, (
                f"{NAMES[AOT]}: as fast as the JIT within the noise ({units.paired(aot_jit)}) and "
                "it serves its first request sooner after a restart, with no warm-up to run"
            )
        return JIT, f"{NAMES[JIT]}: faster than eager on this traffic ({units.paired(jit_eager)})"
    if aot_no is None and _faster(aot_eager):
        why = f"; the JIT does not fit: {jit_no}" if jit_fast and jit_no else ""
        return AOT, f"{NAMES[AOT]}: faster than eager ({units.paired(aot_eager)}){why}"
    if jit_fast:
        aot = f"; AOT {aot_no}" if aot_no else ""
        return None, (
            f"no operating model named: torch.compile is faster than eager "
            f"({units.paired(jit_eager)}), but {jit_no}{aot}"
        )
    return EAGER, (
        f"{NAMES[EAGER]}: torch.compile is not shown faster on this traffic "
        f"({units.paired(jit_eager)})"
    )


def _starts_sooner(s: Serving) -> bool:
    """The AOT package's first request came sooner after its spawn than the JIT restart's."""
    aot = s.aot.first_request_s if s.aot else None
    jit = s.restart.first_request_s if s.restart else None
    return aot is not None and jit is not None and aot < jit


def _best_strategy(s: Serving) -> tuple[str | None, str]:
    """The strategy that serves this traffic best, where its interval decides; else why none."""
    rows = [r for r in s.strategies if r.name != "automatic"]
    if not rows:
        why = s.not_measured.get("strategies")
        return None, f"shape strategies: {units.NA}" + (f" ({why})" if why else "")
    fits = [r for r in rows if not r.fallback_requests and not r.errors]
    faster = [r for r in fits if _faster(r.interval)]
    if faster:
        best = min(faster, key=lambda r: r.interval.ratio)  # type: ignore[union-attr]
        return best.name, (
            f"best shape strategy on this traffic: {best.label or best.name}, "
            f"{units.paired(best.interval)} against torch.compile as the target compiles it"
        )
    left = [_why_not(r) for r in rows if r.fallback_requests or r.errors]
    tail = f" ({'; '.join(left)})" if left else ""
    return None, (
        "no shape strategy serves this traffic faster than torch.compile as the target compiles "
        f"it beyond the noise{tail}"
    )


def _why_not(r: ServeStrategy) -> str:
    if r.fallback_requests:
        return f"{r.name}: {len(r.fallback_requests)} request(s) on the eager fallback"
    return f"{r.name}: {len(r.errors)} request(s) failed"


def _figures(s: Serving, jit_eager: Interval | None, aot_jit: Interval | None) -> list[str]:
    """The figures behind the choice, one line each."""
    replay, out = s.replay, []
    eager, compiled = (replay.eager, replay.compiled) if replay else (None, None)
    proof = s.warmup.proof if s.warmup else None
    out.append(
        f"p99 under traffic: eager {units.seconds(eager.p99_s if eager else None)}, compiled "
        f"{units.seconds(compiled.p99_s if compiled else None)} (compile stalls included)"
        + (f", compiled after the warm-up {units.seconds(proof.p99_s)}" if proof else "")
    )
    if compiled is not None:
        fallback = (
            f"; {len(compiled.fallback_requests)} request(s) served by the eager fallback after "
            f"recompile_limit ({compiled.recompile_limit})"
            if compiled.fallback_requests
            else ""
        )
        out.append(
            f"compiles during traffic: {units.count(s.traffic_compiles)} "
            f"({units.seconds(compiled.compile_s)} lost to compiles){fallback}"
        )
    out.append(f"warm-up: {warmup_text(s)}")
    out.append(f"compiled after the warm-up against eager, per request: {units.paired(jit_eager)}")
    if s.restart is not None:
        out.append(
            f"JIT restart: first request {units.seconds(s.restart.first_request_s)} after the "
            f"spawn; {'; '.join(s.restart.hit)}"
        )
    out.append(_aot_line(s, aot_jit))
    return out


def warmup_text(s: Serving) -> str:
    """The warm-up's proof in words: proven, not proven (the request that would compile), or not
    measured (why)."""
    w = s.warmup
    if w is None:
        return f"{units.NA} ({s.not_measured.get('proof') or 'no warm-up derived'})"
    whose = "your Traffic(warmup=...)" if w.source == "yours" else "derived from the compiles"
    n = w.user.requests if w.user and w.source == "yours" else len(w.requests)
    gap = _jit_gap(s)
    if w.proof is not None and w.proof.proven and gap is None:
        return f"proven in a fresh process ({units.count(n)} request(s), {whose})"
    return f"{gap} ({units.count(n)} request(s), {whose})"


def _aot_line(s: Serving, aot_jit: Interval | None) -> str:
    """AOT's figures against the JIT's, or why it does not fit."""
    why = _aot_fits(s)
    aot = s.aot or Aot()
    if why and not aot.served:
        return f"AOT: {why}"
    proof = s.warmup.proof if s.warmup else None
    jit_first = s.restart.first_request_s if s.restart else None
    return (
        f"AOT: load {units.seconds(aot.load_s)}, first request "
        f"{units.seconds(aot.first_request_s)} after the spawn (JIT restart: "
        f"{units.seconds(jit_first)}); p50 / p99 {units.seconds(aot.p50_s)} / "
        f"{units.seconds(aot.p99_s)} against the JIT's {units.seconds(proof.p50_s if proof else None)}"
        f" / {units.seconds(proof.p99_s if proof else None)}; AOT / JIT {units.paired(aot_jit)}; "
        f"numerics {aot.numerics_status or units.NA}" + (f" ({why})" if why else "")
    )


def _relation(decision: Any, model: str | None) -> str:
    """How the operating model relates to the headline, in one line."""
    compile_it = decision in (Decision.COMPILE, Decision.COMPILE_AFTER_FIXES)
    steady = "the verdict above times steady calls on the example inputs"
    if model == AOT:
        return (
            f"Beside the verdict, not against it: {steady} of torch.compile (JIT); AOT is another "
            "way to compile, measured here on this traffic's requests."
        )
    if model == JIT and compile_it:
        return "Agrees with the verdict above: compiled is faster, on this traffic's requests too."
    if model == EAGER and not compile_it:
        return (
            "Agrees with the verdict above: compiling is not shown to pay on this traffic either."
        )
    if model == JIT:
        return (
            f"Beside the verdict, not against it: {steady}; this traffic's own requests, served "
            "after the warm-up, show compiled faster."
        )
    if model == EAGER:
        return (
            f"Beside the verdict, not against it: {steady}; on this traffic's requests compiling "
            "is not shown to pay (its compiles, or requests unlike the example)."
        )
    return f"The verdict above stands as it is: {steady}; this traffic names no operating model."
