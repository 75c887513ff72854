"""`tcdoctor sweep --baseline OLD` and `check --sweep --baseline`: what changed for each target
since an earlier sweep (report/sweep.py `METHOD_CHANGES` says how each change is judged, and the
rows carry the changes as their `changes`)."""

from __future__ import annotations

from .. import units
from ..report.processes.claims import apart
from ..report.sweep import COMPILE_CHANGE, Sweep, SweepRow


def _change(kind: str, text: str) -> dict:
    return {"kind": kind, "text": text}


def compare(new: SweepRow, old: SweepRow | None) -> list[dict]:
    """What changed for one target since the baseline (`METHOD_CHANGES` says how each is judged)."""
    if old is None:
        return [_change("new_target", "not in the baseline")]
    out = []
    if new.complete != old.complete:
        out.append(
            _change("fixed", f"complete now (was exit {old.exit_code}: {old.reason})")
            if new.complete
            else _change(
                "failed", f"exit {new.exit_code} now (was complete): {new.reason or new.status}"
            )
        )
    if new.graph_breaks is not None and old.graph_breaks is not None:
        nk, ok = new.break_keys, old.break_keys
        for f, line, reason in sorted(nk - ok, key=str):
            out.append(_change("new_break", f"new graph break at {f}:{line}: {reason}"))
        for f, line, reason in sorted(ok - nk, key=str):
            out.append(_change("fixed_break", f"graph break fixed at {f}:{line}: {reason}"))
    if (
        new.recompiles is not None
        and old.recompiles is not None
        and new.recompiles != old.recompiles
    ):
        out.append(_change("recompiles", f"recompiles {old.recompiles} → {new.recompiles}"))
    word = apart(new.speedup_ci, old.speedup_ci)  # the intervals do not overlap
    if word is not None:
        out.append(
            _change(
                f"speedup_{word}",
                f"speedup {units.ratio(old.speedup, old.speedup_ci)} → "
                f"{units.ratio(new.speedup, new.speedup_ci)} ({word}: the CIs do not overlap)",
            )
        )
    if new.slower_than_eager and not old.slower_than_eager:
        out.append(_change("newly_slower_than_eager", "now slower than eager (CI wholly below 1×)"))
    a, b = old.cold_compile_s, new.cold_compile_s
    rel, absolute = COMPILE_CHANGE
    if a is not None and b is not None and abs(b - a) > max(absolute, rel * a):
        out.append(_change("compile", f"cold compile {units.seconds(a)} → {units.seconds(b)}"))
    a_v, b_v = old.shown_verdict, new.shown_verdict
    if a_v and b_v and a_v != b_v:
        out.append(
            _change("verdict", f"verdict {units.decision_text(a_v)} → {units.decision_text(b_v)}")
        )
    return out


def with_baseline(sweep: Sweep, baseline: Sweep, name: str) -> Sweep:
    """The sweep with each row's changes against `baseline` (and the targets it no longer has)."""
    old = {r.target: r for r in baseline.rows}
    for row in sweep.rows:
        row.changes = compare(row, old.get(row.target))
    sweep.baseline = name
    current = {r.target for r in sweep.rows}
    sweep.removed = [t for t in old if t not in current]
    return sweep
