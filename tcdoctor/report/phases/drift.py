"""The drift-localisation phase (issue 36): when numerics fail or come within 2× of the tolerance,
the deepest module whose own output drifts on exact inputs (probes/drift.py; records in
report/attribution.py). Last: it compiles parts of the model, after the recompile sequence.

It fills part of the numerics section (`numerics.drift`), and its lines name the tried fix
"compile around it" (a row of the report's fixes), so its row and its layout read the whole
report (`Phase.reads`), for a report that has a drift record: one key-figure row (not checked and
why, the module named, or none found) and the modules descended through, with the lines under them.
"""

from __future__ import annotations

from typing import Any

from ... import units
from ..attribution import DriftOrigin
from ..layout import Note, Section, Table, where
from .phase import MAIN, Phase

TITLE = "Where the numbers drift"
HEADERS = [
    "module",
    "class",
    "defined at",
    "error / tol",
    "compiled err vs fp64",
    "eager err vs fp64",
]


def _fill(data: dict, d: dict) -> None:
    data["numerics"]["drift"] = d


def _not_measured(data: dict, sections: tuple[str, ...], why: str) -> None:
    data["numerics"].setdefault("drift", {"not_measured": why})


def summary(d: DriftOrigin) -> str:
    """One line: not checked (why), the module named, or none found."""
    if d.not_measured:
        return f"not measured ({d.not_measured})"
    if not d.checked:
        return f"not localised: {d.reason}"
    o = d.origin
    if not o:
        return f"no single module drifts on exact inputs ({d.modules_compared} compared)"
    name = o.name or "the whole model"  # the root module's name is ''
    return (
        f"origin {name} ({o.class_}): compiled err vs fp64 "
        f"{units.sci(o.err_vs_fp64)}, eager {units.sci(o.eager_err_vs_fp64)}"
    )


def _reads(report: Any) -> Any:
    """The report, when it holds a drift record (None: a report made before drift existed)."""
    return report if report.numerics.drift is not None else None


def _row(report: Any) -> tuple[str, str, str]:
    d = report.numerics.drift
    return ("numerics drift", summary(d), d.method or "")


def layout(report: Any) -> Section:
    """The modules descended through to where the numbers drift, and the lines under them."""
    d = report.numerics.drift
    return Section(
        TITLE,
        summary=summary(d),
        tables=(Table(HEADERS, _rows(d), code=(1, 2)),),
        notes=_notes(d, report.fixes),
    )


def _rows(d: DriftOrigin) -> list[list[str]]:
    """The modules descended through, the origin last."""
    if not d.checked or not d.path:
        return []
    return [
        [
            p.name or "(whole model)",
            p.class_ or "",
            where(p.class_file, p.class_line),
            f"{p.ratio if p.ratio is not None else 0.0:.3g}",
            units.sci(p.err_vs_fp64),
            units.sci(p.eager_err_vs_fp64),
        ]
        for p in d.path
    ]


def _notes(d: DriftOrigin, fixes: Any) -> tuple[Note, ...]:
    """The tried fix 'compile around it' (a row of the report's fixes), PyTorch's bisector, the method."""
    if not d.checked or not d.origin:
        return ()
    out = []
    for row in fixes or ():
        if row.kind == "disable_module":
            figures = row.summary
            out.append(
                f"compile around it, tried: {row.fix}: {row.outcome}"
                + (f" ({figures})" if figures else "")
            )
    b = d.bisector
    if b:
        verdict = b.verdict or f"not run ({b.not_run})"
        out.append(f"CompilerBisector on {d.origin.name} alone: {verdict}")
        if b.command:
            out.append(f"rerun it: {b.command}")
    elif d.origin.name:
        out.append("CompilerBisector: not run (the analysis ran without it)")
    return (*(Note(line) for line in out), Note(f"method: {d.method}", how=True))


PHASES = (
    Phase(
        "drift",
        MAIN,
        (),
        measure="tcdoctor.probes.drift:phase_drift",
        order=135,
        fill=_fill,
        not_measured=_not_measured,
        reads=_reads,
        row=_row,
        layout=layout,
    ),
)
