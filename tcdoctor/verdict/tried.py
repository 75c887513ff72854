"""Judging what was tried, in the parent: the shape and region fixes read off the strategy rows,
what fixing each break gains (measured by a tried fix, replacing the profile's bound), the layer a
loss comes from (the backend ablation), and one advice line per tried fix so nobody tries it again.

Running the fixes is `experiments/fixes.py`'s job (in the child); this module only reads rows.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from ..report.sections import Ablation, Advice, FixRow, StrategyRow

if TYPE_CHECKING:
    from ..report.model import Report


# -- in the parent ------------------------------------------------------------------------------


def from_strategies(report: Report) -> list[FixRow]:
    """Shape and region fixes, read from the strategy rows already measured (nothing compiled again)."""
    st = report.strategies
    out = []
    from .recommend import main_shape_row, trade
    from .thresholds import RULES

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
        wins, trade_text = trade(r, base, dict(RULES)) if r.shapes and base.shapes else (fewer, "")
        outcome = (
            "helps"
            if wins and not r.limit_hit
            else "fewer recompiles, no overall gain"
            if fewer and not r.limit_hit
            else "no effect"
        )
        out.append(
            FixRow(
                fix=line,
                kind="dynamic",
                name=name,
                addresses=["recompiles"],
                before={"recompiles": base.recompiles, "compile_s": base.compile_s},
                after={
                    "recompiles": r.recompiles,
                    "compile_s": r.compile_s,
                    "limit_hit": r.limit_hit,
                },
                outcome=outcome,
                why=f"strategy row '{name}' vs '{base.name}': "
                f"{base.recompiles} → {r.recompiles} recompiles"
                + (f"; {trade_text}" if trade_text else ""),
                source="strategies.dynamic",
            )
        )
    if st.regions and st.regions.regions:
        from .recommend import recommend  # the same recommendation the verdict shows

        rec = recommend(report, dict(RULES)).get("regions") or {}
        picked = rec.get("choice") or []
        out.append(
            FixRow(
                fix="compile only: "
                + (", ".join(picked) if picked else "(no clean, faster region)"),
                kind="regions",
                name="regions",
                addresses=["graph breaks"],
                before={},
                after={"expected_gain_s_per_forward": rec.get("expected_gain_s_per_forward")},
                outcome="helps" if picked else "no effect",
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
    """Which layer the loss or the drift comes from, from eager / aot_eager / the real backend side by side."""
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

    text = None
    for b, what in layers:
        r = row_of(b)
        if r and r.significantly_slower:
            text = f"already {r.speedup:.2f}× with backend={b!r}: the loss comes from {what}"
            break
    drift = next(
        (b for b, _ in layers if (r := row_of(b)) is not None and r.numerics_passed is False),
        None,
    )
    if drift:
        what = dict(layers)[drift]
        text = (text + "; " if text else "") + f"outputs first drift with backend={drift!r}: {what}"
    return Ablation(rows=table, layer=text)


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
        spec = nt.get("spec") or {}
        name = (spec.get("fix") or {}).get("name") or spec.get("backend")
        out.append(
            Advice(
                topic="tried fix",
                text=f"Not tried: {name}: {nt.get('why')}.",
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
