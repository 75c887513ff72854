"""Judging what was tried, in the parent: each row's decision interval (the spread between
processes, the candidate rows counted), the shape and region fixes read off the strategy rows,
what fixing each break gains (measured by a tried fix, replacing the profile's bound), the layer a
loss comes from (the backend ablation), and one advice line per tried fix so nobody tries it again.

Running the fixes is `experiments/fixes.py`'s job (in the child); this module only reads rows.

**Decision intervals** (`attach_decision_intervals`). A fix, mode, training way, region or
compile-time remedy is timed in one process; the headline in several (report/processes/).
Each such row gets `decision_ci` and `decision_method` (rules.row_decision_interval: its own noise
and the headline's spread between processes, Bonferroni over the rows that could earn the same
claim), and every claim about it reads that interval (sections' `significantly_faster`,
`decision_interval`). It is computed here, once, when the report is assembled (run/assemble.py,
before the verdict), because it needs the whole report (the headline's processes and the number of
candidates), which no row's property can see, and because it is stored: the renderers and
`tcdoctor report` read it from the JSON without recomputing anything, and the report stays
torch-free. The families are the rows one decision chooses among: the measured fixes with the other
ways of compiling (modes, training ways: either may turn a headline that is not faster into "apply
it" or "compile another way"), the regions, the remedies. The main analysis's own row keeps the
headline's decision interval (its own figures are the cold process's). A row of a report saved
before this existed has none and is judged on its own interval, as it was (rules.row_interval).
A row whose process timed eager (the same code in every process, the control) outside the band of
the headline's quiet timing-only processes gets none either: that spread cannot judge a process
that times the call another way (regimes.row_state, the headline's own rule for its cold and warm
processes); its method says by how much.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from .. import stats, units
from ..outcomes import FixOutcome
from ..report.processes.claims import equivalent
from ..report.processes.regimes import decided_on, row_state
from ..report.rules import row_decision_interval
from ..report.sections import Ablation, Advice, FixRow, FixSide, StrategyRow
from ..thresholds import RULES

if TYPE_CHECKING:
    from ..report.model import Report


# -- in the parent ------------------------------------------------------------------------------

MAIN_ROW = "main analysis"


def process_spread(report: Report) -> tuple[tuple[float, int] | None, int]:
    """((sd, df) of the headline's processes' log speedups, or None when none was measured; how
    many processes): the processes the headline was decided on, pooled within allocator regimes
    when it was decided apart in two."""
    rt = report.runtime
    rows = decided_on(rt.processes)
    if rt.undecided_why or len(rows) < 2:  # one process (or one per regime): no spread
        return None, len(rows)
    if rt.regimes:
        groups = [[r.speedup for r in rows if r.process in g.processes] for g in rt.regimes]
    else:
        groups = [[r.speedup for r in rows]]
    return stats.pooled_log_sd(groups), len(rows)


def _eager_median(row: Any) -> float | None:
    """The eager median a row's own process timed (a strategy row's, or a fix's `after`): the
    control that tells whether that process times the call as the headline's processes do."""
    if isinstance(row, StrategyRow):
        return row.eager_median_s
    return row.after_side.eager_median_s if isinstance(row, FixRow) else None


def attach_decision_intervals(report: Report) -> None:
    """Every fix and strategy row measured in one process gets its decision interval (see the
    module docstring); rows without a speedup get none."""
    from .figures import other_ways

    spread, n = process_spread(report)
    fixes = [r for r in report.fixes or [] if r.measured]
    ways = [w.row for w in other_ways(report)]
    st = report.strategies
    taken = {id(r) for r in ways}
    modes_training = [r for r in (st.modes or []) + (st.training or []) if id(r) not in taken]
    remedies = report.compile.remedies.rows if report.compile.remedies else []
    regions = st.regions.regions if st.regions else []
    families: list[tuple[list, list]] = [
        (fixes + ways, fixes + ways + modes_training),  # (candidates, rows judged with them)
        (regions, regions),
        (remedies, remedies),
        (st.dynamic or [], st.dynamic or []),
    ]
    rt = report.runtime
    for candidates, rows in families:
        k = sum(1 for r in candidates if _speedup(r) is not None)
        for r in rows:
            if isinstance(r, StrategyRow) and r.baseline:
                continue  # eager itself: nothing compiled, nothing to judge
            if isinstance(r, StrategyRow) and r.source == MAIN_ROW:
                if r.speedup is not None:  # the cold process's figures; decided as the headline
                    r.decision_ci = None if rt.undecided_why else rt.speedup_ci
                    r.decision_method = (
                        "the main analysis: the headline's decision interval across processes "
                        "(runtime.speedup_ci); the row's own figures are the cold process's"
                        + (f" (not decided: {rt.undecided_why})" if rt.undecided_why else "")
                    )
                continue
            speedup = _speedup(r)
            if speedup is None:
                continue
            state = row_state(_eager_median(r), rt.processes)
            if state:  # its process timed eager unlike the headline's: the spread cannot judge it
                r.decision_ci, r.decision_method = None, state
                continue
            own = r.after_side.speedup_ci if isinstance(r, FixRow) else r.speedup_ci
            r.decision_ci, r.decision_method = row_decision_interval(
                speedup, own, spread, k, processes=n
            )


def _speedup(row: FixRow | StrategyRow) -> float | None:
    return row.after_side.speedup if isinstance(row, FixRow) else row.speedup


def from_strategies(report: Report) -> list[FixRow]:
    """Shape and region fixes, read from the strategy rows already measured (nothing compiled again)."""
    st = report.strategies
    out = []
    from .recommend import main_shape_row, trade

    dyn = {r.name: r for r in st.dynamic or []}
    base = main_shape_row(list(dyn.values())) or dyn.get("static")
    for name, line in (
        ("marked", "torch._dynamo.mark_dynamic(x, dim)  # before the first call"),
        ("dynamic", "torch.compile(model, dynamic=True)"),
    ):
        r = dyn.get(name)
        if not r or not base or r is base:
            continue
        fewer = r.recompiles < base.recompiles
        wins, trade_text = trade(r, base, RULES) if r.shapes and base.shapes else (fewer, "")
        outcome = (
            FixOutcome.HELPS
            if wins and not r.limit_hit
            else FixOutcome.FEWER_RECOMPILES
            if fewer and not r.limit_hit
            else FixOutcome.NO_EFFECT
        )
        out.append(
            FixRow(
                fix=line,
                kind="dynamic",
                name=name,
                addresses=["recompiles"],
                before=FixSide.of(recompiles=base.recompiles, compile_s=base.compile_s),
                after=FixSide.of(
                    recompiles=r.recompiles, compile_s=r.compile_s, limit_hit=r.limit_hit
                ),
                outcome=outcome,
                why=f"strategy row '{name}' vs '{base.name}': "
                f"{base.recompiles} → {r.recompiles} recompiles"
                + (f"; {trade_text}" if trade_text else ""),
                source="strategies.dynamic",
            )
        )
    if st.regions and st.regions.regions:
        from .recommend import recommend  # the same recommendation the verdict shows

        rec = recommend(report, RULES).get("regions") or {}
        picked = rec.get("choice") or []
        out.append(
            FixRow(
                fix="compile only: "
                + (", ".join(picked) if picked else "(no clean, faster region)"),
                kind="regions",
                name="regions",
                addresses=["graph breaks"],
                after=FixSide.of(
                    expected_gain_s_per_forward=rec.get("expected_gain_s_per_forward")
                ),
                outcome=FixOutcome.HELPS if picked else FixOutcome.NO_EFFECT,
                why=rec.get("text") or "",
                source="strategies.regions",
            )
        )
    return out


def attach_gains(report: Report) -> None:
    """What fixing each break gains, measured where a fix that addresses it was tried with the real
    backend (it replaces the bound from the profile), then the findings ranked by that gain."""
    from ..report.break_gain import rank_key

    median = report.runtime.compiled.median_s
    findings = {f.id: f for f in report.graph_breaks.unique or []}
    for row in report.fixes or []:
        frac = row.gain_fraction  # None unless tried in a fresh process (FixRow.measured)
        if frac is None:
            continue
        for fid in row.addresses or []:
            f = findings.get(fid)
            if f is None or (f.gain_source == "tried" and (f.gain_fraction or 0) >= frac):
                continue
            f.gain_fraction, f.gain_source, f.gain_fix = frac, "tried", row.fix
            f.gain_s_per_call = frac * median if median else None
            f.gain_method = (
                f"measured: `{row.fix}` tried in a separate process; share of a compiled call saved = "
                "1 − speedup before / speedup after (each paired against eager in its own process)"
            )
    report.graph_breaks.unique = sorted(
        report.graph_breaks.unique or [],
        key=lambda f: rank_key(f.gain_s_per_call, f.cost_s_per_call),
    )


def main_row(report: Report) -> StrategyRow:
    """The real backend's row: the main analysis, reused (never compiled a second time)."""
    rt = report.runtime
    return StrategyRow(
        backend=(report.options or {}).get("backend"),
        speedup=rt.speedup,
        speedup_ci=rt.speedup_ci,
        numerics_passed=report.numerics.passed,
        graph_breaks=report.graph_breaks.count,
        source="main analysis",
    )


def ablation_layer(report: Report, rows: list[StrategyRow]) -> Ablation | None:
    """Which layer the loss or the drift comes from, from eager / aot_eager / the real backend side
    by side: the first layer already slower, joined by every layer below it that cannot tell
    (neither slower nor within the equivalence margin: the loss may start there). With no graph
    compiled no backend ran, and the loss is Dynamo's whatever the rows say."""
    if not rows:
        return None
    real = main_row(report)
    by = {r.backend: r for r in rows if r.backend}
    layers = [
        ("eager", "Dynamo (guards, graph breaks, the Python around compiled regions)"),
        ("aot_eager", "AOTAutograd (its runtime wrappers, functionalization)"),
        (real.backend, f"the {real.backend} backend's kernels"),
    ]
    table = [dataclasses.replace(by[b], backend=b) for b, _ in layers[:2] if b in by] + [real]

    def row_of(b: str | None) -> StrategyRow | None:
        return real if b == real.backend else by.get(b)

    text = _slower_layer(layers, row_of)
    if report.graphs.count == 0 and text is not None:
        text = (
            "nothing was compiled (no graph on a call), so no backend ran: every row timed the "
            "same eager code, and the loss comes from Dynamo (its per-call cost around the frames "
            "it skipped)"
        )
    drift = next(
        (b for b, _ in layers if (r := row_of(b)) is not None and r.numerics_passed is False),
        None,
    )
    if drift:
        what = dict(layers)[drift]
        text = (text + "; " if text else "") + f"outputs first drift with backend={drift!r}: {what}"
    return Ablation(rows=table, layer=text)


def _slower_layer(layers: list[tuple], row_of) -> str | None:
    """'already 0.92× with backend='aot_eager' (backend='eager' cannot tell: 0.78–1.32×): the loss
    comes from Dynamo (…) or AOTAutograd (…)'; None when no layer is slower."""
    undecided: list[tuple[str, str, StrategyRow]] = []
    for b, what in layers:
        r = row_of(b)
        if r is None:
            continue
        if r.significantly_slower:
            whats = " or ".join([w for _, w, _ in undecided] + [what])
            unsure = "; ".join(
                f"backend={u!r} cannot tell: {units.span(ur.decision_interval)}"
                for u, _, ur in undecided
            )
            return (
                f"already {r.speedup:.2f}× with backend={b!r}"
                + (f" ({unsure})" if unsure else "")
                + f": the loss comes from {whats}"
            )
        if not equivalent(r.decision_interval) and not (r.decision_interval[0] or 0) >= 1:
            undecided.append((b, what, r))
    return None


def advice(report: Report) -> list[Advice]:
    """One advice line per tried fix (a fix that did not help says so, so nobody tries it again)."""
    out = []
    for row in report.fixes or []:
        summary = row.summary
        text = (
            f"Tried `{row.fix}`: {row.outcome}"
            + (f" ({summary})" if summary else "")
            + f". {row.why or ''}"
        )
        out.append(Advice(topic="tried fix", text=text.strip(), evidence=f"fixes[{row.name}]"))
    for nt in report.fixes_not_tried or []:
        out.append(
            Advice(
                topic="tried fix",
                text=f"Not tried: {nt.name}: {nt.why}.",
                evidence="fixes_not_tried",
            )
        )
    layer = report.ablation.layer if report.ablation else None
    if layer:
        out.append(
            Advice(
                topic="which layer",
                text=layer[0].upper() + layer[1:] + ".",
                evidence="ablation.rows",
            )
        )
    return out


def annotate(report: Report) -> None:
    """Say next to each graph-break advice what trying its no-edit fix showed (so nobody tries it again)."""
    findings = {f.id: f for f in report.graph_breaks.unique or []}
    notes: dict[tuple, list[str]] = {}
    for row in report.fixes or []:
        for fid in row.addresses or []:
            f = findings.get(fid)
            if f:
                notes.setdefault((f.reason, f.file, f.line), []).append(
                    f"tried `{row.fix}`: {row.outcome}"
                )
    for a in report.verdict.advice or []:
        if a.topic != "graph break":
            continue
        for (reason, file, line), ns in notes.items():
            if f"{reason} at {file}:{line}" in (a.evidence or ""):
                a.text += " (" + "; ".join(ns) + ", see Tried.)"
