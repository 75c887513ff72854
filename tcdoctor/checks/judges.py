"""The judges of one report (`check`'s absolute thresholds, `run_checks`): each the `judge` of a
`Check` in the gate's table (checks/table.py `CHECKS`), returning the `CheckResult`
(checks/outcome.py) for its limit.

Method and pitfalls are each judge's: `min_speedup` on the headline's decision interval (passed,
failed or inconclusive, the reason saying after how many processes and why no more were timed),
`verdict` (a "cant-tell" verdict is inconclusive), the counts with one detail line per finding,
`known_breaks` against the allow-list file (checks/known_breaks.py), `compile_seconds` on the
cold first call or the best measured remedy.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING

from .. import units
from ..outcomes import Decision
from ..report.processes.regimes import decided_on
from ..report.processes.rows import Sequence
from .outcome import CheckResult, judged, judged_in, level_text

if TYPE_CHECKING:  # the table is read where `check` is built: the report classes load on use
    from ..report.model import Report

# how good a decision is, for --require-verdict; a cant-tell verdict (the speed undecided) neither
# meets nor misses one (inconclusive)
_ORDER = {Decision.DONT_COMPILE: 0, Decision.COMPILE_AFTER_FIXES: 1, Decision.COMPILE: 2}


def _after(report: Report, bound: float) -> str:
    """'after 6 processes (the cap: --processes 6)': how many processes the headline's interval
    rests on and why no more were timed."""
    rt = report.runtime
    seq = rt.sequence or Sequence()
    n = seq.timed or len(decided_on(rt.processes)) or 1
    what = f"after {n} process{'' if n == 1 else 'es'}"
    stopped, cap = seq.stopped, seq.cap
    if stopped == "cap":
        return f"{what} (the cap: --processes {cap})"
    if stopped == "budget":
        return f"{what} (the time budget ran out before the cap of {cap})"
    if stopped == "futile":
        return f"{what} (stopped: more processes would not decide, cap {cap})"
    if stopped == "decided":
        if any(abs(t - bound) < 1e-9 for t in seq.thresholds or ()):
            return f"{what} (each allocator regime answered; the headline's interval spans both)"
        return (
            f"{what} (they stopped once the verdict's question was answered: {bound:g}× was not "
            f"a threshold they were timed for; `check TARGET --min-speedup {bound:g}` times "
            "until it is answered)"
        )
    asked = (report.options or {}).get("processes")
    return f"{what} (" + (
        f"--processes {asked}: too few for sequential looks, none added)"
        if asked
        else "no sequence of processes recorded)"
    )


# The check's name, whatever the level judged: the decision interval is 95% for one process and
# Pocock's per-look level across processes (98.1% at a cap of 6), so the level is in each message,
# never in the name (JUnit readers key a test's history on it: docs/ci.md).
SPEEDUP_CHECK = "speedup (decision interval lower bound)"


def min_speedup(report: Report, bound: float) -> CheckResult:
    """--min-speedup X on the headline's decision interval: passed when its lower bound is ≥ X (as
    the verdict's "faster"), failed when its upper bound is < X, inconclusive when it straddles X
    (the reason says after how many processes and why no more were timed). A report without the
    upper bound is judged on the lower bound alone (pass or fail). The figure and the reason name
    the interval's level (`Runtime.ci_level`: 95%, or Pocock's per look), the name never does."""
    rt = report.runtime
    lo, hi, level = rt.ci_low, rt.ci_high, level_text(rt.ci_level)
    r = judged(SPEEDUP_CHECK, lo, bound, False, lambda v: f"{v:.3f}× ({level} lower bound)")
    if lo is None:
        return r
    interval = f"{level} decision interval {lo:.3f}–{hi:.3f}×" if hi is not None else None
    if r.passed:
        whose = f"the lower bound of the {interval}" if interval else f"its {level} lower bound"
        return replace(r, reason=f"{lo:.3f}×, {whose} ({r.limit} required)")
    if hi is None or hi < bound:
        below = (
            f"{interval} lies below {bound:g}×" if interval else f"{r.figure} is below {bound:g}×"
        )
        return replace(r, reason=f"{below} ({r.limit} required)")
    reason = f"{interval} straddles {bound:g}× {_after(report, bound)}"
    return replace(r, figure=interval, reason=reason, inconclusive=True)


def verdict(report: Report, required: str) -> CheckResult:
    """--require-verdict: the decision at least `required`; a "cant-tell" verdict (the speed
    undecided at this precision) is inconclusive, neither meeting nor missing it."""
    d = report.verdict.decision
    limit = f"at least {required}"
    if d == Decision.CANT_TELL:
        reason = f"{d} ({units.decision_text(d)}: the speed is undecided; {limit} required)"
        return CheckResult("verdict", d, limit, False, reason, inconclusive=True)
    ok = d is not None and _ORDER.get(d, -1) >= _ORDER[required]
    return CheckResult("verdict", str(d), limit, ok, f"{d} ({limit} required)")


def graph_breaks(report: Report, bound: int) -> CheckResult:
    """The graph-break count; each unique break one detail line (file:line and reason), the first
    one's location the result's."""
    r = judged("graph breaks", report.graph_breaks.count, bound, True)
    breaks = sorted(report.graph_breaks.unique, key=lambda f: (f.file or "", f.line or 0))
    details = tuple(f"{f.where} {f.reason}" for f in breaks)
    first = breaks[0] if breaks else None
    return replace(
        r, details=details, file=first.file if first else None, line=first.line if first else None
    )


def recompiles(report: Report, bound: int) -> CheckResult:
    r = judged("recompiles", report.recompiles.count, bound, True)
    events = report.recompiles.events
    details = tuple(
        f"{e.file or '?'}:{e.line or '?'} {e.function} on {e.variant}: {e.reason}" for e in events
    )
    first = events[0] if events else None
    return replace(
        r, details=details, file=first.file if first else None, line=first.line if first else None
    )


def known_breaks(
    report: Report, path: str, allow_stale: bool = False, update_known_breaks: bool = False
) -> CheckResult:
    """The report's graph breaks (the user's and libraries' alike) against a known-breaks file: a
    new break fails, a stale entry fails unless allowed. With `update_known_breaks`, the file is
    rewritten from the report first (reasons kept, new entries with the placeholder reason) and
    judged after."""
    from . import known_breaks as kb

    update = bool(update_known_breaks)
    name = "known graph breaks"
    if report.graph_breaks.count is None:
        return CheckResult(name, units.NA, path, False, f"{units.NA}: graph breaks not measured")
    findings = report.graph_breaks.unique
    if update:
        entries = kb.load(path) if os.path.exists(path) else []
        kb.write(path, kb.updated(entries, findings, path))
    cmp = kb.compare(kb.load(path), findings, path)
    failed = cmp.failed(allow_stale)
    reason = ("updated; " if update else "") + cmp.summary(allow_stale)
    first = cmp.new[0].breaks[0] if cmp.new else None
    return CheckResult(
        name,
        f"{len(cmp.new)} new, {len(cmp.stale)} stale",
        f"0 new, 0 stale{' (stale allowed)' if allow_stale else ''}",
        not failed,
        reason,
        details=tuple(cmp.lines(allow_stale)),
        file=first.file if first else None,
        line=first.line if first else None,
    )


def numerics(report: Report, required: bool = True) -> CheckResult:
    """--require-numerics: the numerics check passed (`required` is the switch, always True here)."""
    p = report.numerics.passed
    figure = units.numerics_status(p)
    reason = figure
    if p is False:
        reason += f" (max abs err {units.sci(report.numerics.max_abs_err)})"
    elif p is None and report.numerics.not_measured:
        reason += f" ({report.numerics.not_measured})"
    return CheckResult("numerics", figure, "pass", p is True, reason)


def _best_start(report: Report, bound: float) -> CheckResult:
    """The first call of the best measured way to start a fresh machine: the whole model cold or
    a remedy (its artifacts' load included), numerics not failing; says which it used."""
    rem = report.compile.remedies
    rows = [r for r in (rem.measured if rem else []) if r.numerics_passed is not False]
    ways = [("the whole model, cold", report.compile.cold_s)] + [
        (r.title, r.startup_s) for r in rows
    ]
    ways = [(label, s) for label, s in ways if s is not None]
    name, limit = "first call, best measured remedy", f"≤ {bound}"
    if not ways:
        return CheckResult(name, units.NA, limit, False, f"{units.NA}, limit {bound}")
    label, value = min(ways, key=lambda w: w[1])
    why = (
        f"; no remedy measured ({'; '.join(str(n.get('why')) for n in rem.not_tried[:2])})"
        if rem and not rows and rem.not_tried
        else ("; no remedy measured" if not rows else "")
    )
    figure = units.seconds(value)
    return CheckResult(
        name, figure, limit, value <= bound, f"{figure} with {label} ({limit} required){why}"
    )


def compile_seconds(report: Report, bound: float, compile_remedies: bool = False) -> CheckResult:
    """--max-compile-seconds: the cold first call, or with `compile_remedies` the best measured
    way to start (`_best_start`)."""
    if compile_remedies:
        return _best_start(report, bound)
    return judged("cold compile seconds", report.compile.cold_s, bound, True, units.seconds)


# The serving section's checks (issue 55: the traffic replayed, `analyze --traffic N` or a
# Workload's traffic). A report without one fails each as not measured, as every check does on a
# figure it lacks, and the reason says how to measure it.

NO_SERVING = "no serving section (analyze with --traffic N, or a Workload(..., traffic=...))"


def _serving_why(report: Report, part: str = "replay") -> str:
    """Why a serving figure is missing: no section, or the part's own why."""
    s = report.serving
    if s is None:
        return NO_SERVING
    return s.not_measured.get(part) or s.not_measured.get("replay") or f"its {part} did not finish"


def p99(report: Report, bound: float) -> CheckResult:
    """--max-p99-ms: the compiled model's p99 under the traffic (compile stalls included; after
    the user's own warm-up where the Traffic gives one), in milliseconds."""
    s = report.serving
    value = s.p99_s * 1e3 if s is not None and s.p99_s is not None else None
    return judged_in("p99 under traffic (ms)", value, bound, True, "ms", _serving_why(report))


def traffic_compiles(report: Report, bound: int) -> CheckResult:
    """--max-traffic-compiles: the compiles during traffic that made a graph (a warm-up's are
    start-up cost, not counted); each one a detail line (its request, shapes and guard)."""
    s = report.serving
    count = s.traffic_compiles if s is not None else None
    r = judged("compiles during traffic", count, bound, True, why=_serving_why(report))
    if count is None:
        return r
    side = s.compiled  # type: ignore[union-attr]
    details = tuple(
        f"request {c.request} {c.shapes or ''}: {c.kind} ({c.reason or 'first compile of the frame'})"
        for c in (side.compiles if side else [])
        if c.kind in ("compile", "recompile")
    )
    return replace(r, details=details)


def _whose(s) -> str:
    """'your warm-up (3 request(s))' or 'the derived warm-up (4 request(s))'."""
    w = s.warmup
    if w.source == "yours":
        return f"your warm-up ({units.count(w.user.requests if w.user else None)} request(s))"
    return f"the derived warm-up ({len(w.requests)} request(s))"


def warmup_proof(report: Report, required: bool = True) -> CheckResult:
    """--require-warmup-proof: the warm-up (the user's own where the Traffic gives one, else the
    one derived from the traffic's compiles) proven in a fresh process: no request compiled after
    it under set_stance("fail_on_recompile"); each request that would have is a detail line."""
    name, limit = "warm-up proof", "proven"
    s = report.serving
    if s is not None and s.generation is not None:  # a Generation's own proof (issue 60)
        from .generation import warmup_proof as generation_proof

        return generation_proof(report)
    proof = s.warmup.proof if s is not None and s.warmup is not None else None
    if proof is None or proof.proven is None:
        why = (proof.why if proof is not None else None) or _serving_why(report, "proof")
        return CheckResult(name, units.NA, limit, False, f"{units.NA} ({why})")
    if proof.proven:
        return CheckResult(name, limit, limit, True, f"{_whose(s)} proven")
    would = proof.compiled_requests
    details = tuple(
        f"request {c.get('request')} {c.get('shapes') or ''}: {c.get('reason') or 'would compile'}"
        for c in would
    )
    first = would[0] if would else {}
    reason = (
        f"not proven: request {first.get('request')} {first.get('shapes') or ''} would compile"
        + (f" ({first['reason']})" if first.get("reason") else "")
        + (f", and {len(would) - 1} more" if len(would) > 1 else "")
        if would
        else f"not proven ({proof.why})"
    )
    return CheckResult(name, "not proven", limit, False, reason, details=details)
