"""What "one decision from all the evidence" means, as checks any report must pass.

Each returns the contradictions between a report's headline and its own evidence (tried fixes,
strategy tables, the owners of its breaks, the outcome words of its fixes); none is allowed. The
tests run it on every report of a real model they produce, so a rule change that lets the headline
and a table disagree fails there, not in a user's CI.
"""

from __future__ import annotations

from tcdoctor.report.model import Report
from tcdoctor.thresholds import Rules
from tcdoctor.verdict.break_fix import UNFIT_HINTS
from tcdoctor.verdict.decision import best_way, can_fix
from tcdoctor.verdict.figures import Figures


def contradictions(report: Report) -> list[str]:
    v, rules = report.verdict, Rules.from_dict(report.verdict.rules)
    fig = Figures.from_report(report)
    out: list[str] = []
    faster_fixes = [r for r in fig.tried_fixes if r.significantly_faster(rules)]
    best = best_way(fig, rules)
    mine = [f for f in fig.break_findings if f.users]
    failed = fig.compile_failed_message is not None or fig.numerics_passed is False
    ci = report.runtime.speedup_ci
    for p in report.runtime.processes or []:
        if ci and p.speedup is not None and not ci[0] <= p.speedup <= ci[1]:
            out.append(f"the headline interval {ci} leaves out the {p.process} process's figure")
    if v.decision == "compile-after-fixes":
        # a bounded gain or an eager part counts only where tcdoctor names a fix for its break
        fixable = [f for f in mine if can_fix(fig, f)]
        bounded = [f for f in fixable if f.gain_source == "bound" and f.gain_s_per_call]
        skipped = [f for f in fixable if f.frame_skipped] or (not mine and fig.skipped)
        eager_parts = fig.significantly_faster(rules) and (skipped or fig.limit_hit)
        if not (faster_fixes or bounded or eager_parts):
            out.append(
                "'after fixes' with no tried fix that pays, no bounded gain of a break "
                "with a fix, no eager part a fix addresses"
            )
        if report.graphs.count == 0 and not (faster_fixes or bounded):
            out.append("'after fixes' with nothing compiled and no fix that would compile it")
    if v.decision == "dont-compile" and not failed and fig.speedup is not None:
        if faster_fixes:
            out.append(f"'don't compile' although tried {faster_fixes[0].fix} is faster than eager")
        if best is not None and not fig.never_repaid(rules.expected_calls):
            out.append(f"'don't compile' although {best.label} is faster and repaid")
    remedy, horizon = fig.best_remedy(rules), rules.expected_calls
    if v.decision == "dont-compile" and not failed and fig.significantly_faster(rules):
        if remedy is not None and remedy.steps_to_repay <= horizon:
            out.append(f"'don't compile' although {remedy.title} is faster and repaid")
    shown = (v.break_even or {}).get("remedy")
    if fig.remedies and (shown or {}).get("calls") != (remedy.steps_to_repay if remedy else None):
        out.append("the best remedy's break-even differs from its row")
    train = (v.recommendations or {}).get("training") or {}
    if train.get("choice") not in (None, "eager") and v.decision == "dont-compile" and not failed:
        if not fig.never_repaid(rules.expected_calls):
            out.append(f"the training table recommends {train['choice']}, the headline says no")
    for r in report.fixes or []:
        b, a = r.before.speedup_ci, r.after_side.speedup_ci
        if r.outcome == "helps" and r.measured and b and a and not a[0] > b[1]:
            if r.before.numerics_passed is not False:
                out.append(f"'helps' for {r.fix} without a significant speed gain")
    for a in v.advice or []:
        if a.topic == "graph break" and "Fix:" in a.text and "Graph break inside" in a.text:
            out.append(f"an edit of code the user did not write: {a.text[:80]}")
        for opening, _, _ in UNFIT_HINTS.values():
            if a.topic == "graph break" and f"Fix: {opening}" in a.text:
                out.append(f"a PyTorch hint that cannot apply given as the fix: {a.text[:80]}")
    layer = report.ablation.layer if report.ablation else None
    if layer and report.graphs.count == 0 and ("AOTAutograd" in layer or "kernels" in layer):
        out.append(f"the ablation blames a backend although nothing was compiled: {layer[:80]}")
    for r in v.reasons:
        if "fixing them may gain more" in r and not mine and fig.break_findings:
            out.append("'fixing them may gain more' with no break in the user's code")
    out += parts_over_the_whole(report)
    return out


def parts_over_the_whole(report: Report) -> list[str]:
    """No compiled frame's time per call, nor the frames' sum, exceeds the compiled call's median
    (each frame runs inside that call: a part is never bigger than the whole); Inductor's ISA
    probe is no longer than the cold first call it happened in, nor than the frame that paid it."""
    return _probe_over_the_first_call(report) + _frames_over_the_call(report)


def _probe_over_the_first_call(report: Report) -> list[str]:
    c = report.compile
    probe = c.isa_probe.seconds if c.isa_probe else None
    if probe is None or c.first_call_s is None:
        return []
    out = []
    if probe > c.first_call_s:
        out.append(
            f"the ISA probe took {probe:.3f} s, more than the first call's {c.first_call_s:.3f} s"
        )
    frame = next(
        (r for r in (c.graphs.rows if c.graphs else []) if r.compile_id == c.isa_probe.frame),
        None,
    )
    if frame and frame.cold_s is not None and probe > frame.cold_s * (1 + 1e-9):
        out.append(
            f"the ISA probe took {probe:.3f} s, more than frame {frame.compile_id}'s cold compile"
        )
    return out


def _frames_over_the_call(report: Report) -> list[str]:
    graphs, median = report.compile.graphs, report.runtime.compiled.median_s
    if graphs is None or not median:
        return []
    times = {r.compile_id: r.time_per_call for r in graphs.rows}
    times = {cid: t for cid, t in times.items() if t is not None}
    out = [
        f"frame {cid} runs {t * 1e3:.3f} ms per call, more than the compiled call's median "
        f"{median * 1e3:.3f} ms"
        for cid, t in times.items()
        if t > median * (1 + 1e-9)
    ]
    if sum(times.values()) > median * (1 + 1e-9):
        out.append(
            f"the frames' times per call sum to {sum(times.values()) * 1e3:.3f} ms, more than the "
            f"compiled call's median {median * 1e3:.3f} ms"
        )
    return out
