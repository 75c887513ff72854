"""The miscompile phase (issue 64): when numerics fail, the compiled graph and the call that first
diverge from eager, whether it is a compiler bug or precision, and the reproducer
(probes/miscompile.py, probes/diverge.py; the record is report/attribution.py's `Miscompile`).
After drift (135): it runs below the module-level localisation, which stays.

It fills part of the numerics section (`numerics.miscompile`) and reads the whole report, as
drift.py does: one key-figure row and its own section.
"""

from __future__ import annotations

from typing import Any

from ... import units
from ..attribution import DivergingCall, GraphSite, Miscompile
from ..layout import Note, Section, Table, where
from .phase import MAIN, Phase

TITLE = "Where compiled is wrong"
KINDS = {
    "compiler_bug": "compiler bug, most likely",
    "precision": "precision",
    "aot": "AOTAutograd or a decomposition",
}


def _fill(data: dict, d: dict) -> None:
    data["numerics"]["miscompile"] = d


def _not_measured(data: dict, sections: tuple[str, ...], why: str) -> None:
    data["numerics"].setdefault("miscompile", {"not_measured": why})


def graph_name(m: Miscompile) -> str:
    """'graph 1/3 of `step` (neural_ode.py:50)'."""
    s, f = m.site or GraphSite(), m.found or DivergingCall()
    return f"graph {f.compile_id} of `{s.function or '?'}` ({units.file_line(s.file, s.line)})"


def specialised(m: Miscompile) -> str:
    """'specialised on L['t'] == 0.0; dynamic: dt, t' (what fixes and what varies)."""
    s, f = m.site or GraphSite(), m.found or DivergingCall()
    guards, dyn = s.guards or [], sorted(_local(k) for k in f.scalars or {})
    parts = [f"specialised on {', '.join(guards)}" if guards else "no scalar specialised"]
    if dyn:
        parts.append(f"dynamic: {', '.join(dyn)}")
    before = [
        f"{e.get('compile_id')} ({', '.join(e.get('guards') or []) or 'no scalar specialised'})"
        for e in s.earlier or []
    ]
    if before:
        parts.append(f"compiled after {', '.join(before)}")
    return "; ".join(parts)


def _local(source: str) -> str:
    """ "L['dt']" -> 'dt' (a local's name, as the user wrote it)."""
    return source[3:-2] if source.startswith("L['") and source.endswith("']") else source


def call_text(m: Miscompile) -> str:
    """'call 1 of the graph (compiled call 4 of the run): dt = 0.31, t = 0.69'."""
    f = m.found or DivergingCall()
    scal = ", ".join(f"{_local(k)} = {v!r}" for k, v in (f.scalars or {}).items())
    return (
        f"call {f.call} of the graph (compiled call {units.count(f.call_overall)} "
        "of the run)" + (f": {scal}" if scal else "")
    )


def summary(m: Miscompile) -> str:
    """One line: not run (why), nothing found, or the graph, its call and the kind."""
    if m.not_measured:
        return f"not measured ({m.not_measured})"
    if not m.checked:
        return f"not searched: {m.reason}"
    if not m.found:
        return f"no compiled graph diverges alone ({m.why_none})"
    return f"{graph_name(m)}, {call_text(m)}: {KINDS.get(m.kind or '', 'not classified')}"


def _reads(report: Any) -> Any:
    return report if report.numerics.miscompile is not None else None


def _row(report: Any) -> tuple[str, str, str]:
    m = report.numerics.miscompile
    return ("compiled graph that diverges", summary(m), m.method or "")


def _rows(m: Miscompile) -> list[list[str]]:
    """The diverging call's failing outputs."""
    out = []
    for o in (m.found.outputs if m.found else None) or []:
        values = (
            f"eager {o.eager_value:.6g}, compiled {o.compiled_value:.6g}"
            if o.eager_value is not None and o.compiled_value is not None
            else ""
        )
        out.append(
            [
                str(o.path),
                str(o.shape),
                units.sci(o.max_abs_err),
                units.sci(o.compiled_rmse_vs_fp64),
                units.sci(o.eager_rmse_vs_fp64),
                values,
            ]
        )
    return out


def _reruns(m: Miscompile) -> list[list[str]]:
    return [
        [
            str(r.backend) + (" (float64)" if r.fp64 else ""),
            units.sci(r.max_abs_err),
            "agrees" if r.allclose else "differs",
        ]
        for r in m.reruns
    ]


def _notes(m: Miscompile) -> tuple[Note, ...]:
    lines = [f"{graph_name(m)}: {specialised(m)}", call_text(m)]
    if m.verdict:
        lines.append(m.verdict)
    if m.reruns_not_run:
        lines.append(f"reproducer not run: {m.reruns_not_run}")
    if m.saved:
        lines.append(
            f"saved {len(m.saved)} tensors of the call ({units.nbytes(m.saved_bytes)}): "
            + ", ".join(f"{s['name']} {s['shape']} {s['dtype']}" for s in m.saved[:8])
            + (" …" if len(m.saved) > 8 else "")
        )
    if m.script_path:
        lines.append(f"reproducer: {m.script_path} (inputs {m.inputs_path}; issue {m.issue_path})")
    elif m.not_written:
        lines.append(m.not_written)
    lines.append(f"search cost {units.seconds(m.cost_s)}, {m.calls_compared} calls compared")
    return (*(Note(line) for line in lines), Note(f"method: {m.method}", how=True))


def layout(report: Any) -> Section:
    """The graph and call that diverge, the reproducer's runs alone, what was saved."""
    m = report.numerics.miscompile
    if m.not_measured or not m.checked or not m.found:
        return Section(TITLE, summary=summary(m))
    site = m.site or GraphSite()
    return Section(
        TITLE,
        summary=summary(m),
        tables=(
            Table(
                [
                    "output",
                    "shape",
                    "max abs err",
                    "compiled err vs fp64",
                    "eager err vs fp64",
                    "values",
                ],
                _rows(m),
            ),
            Table(["the graph alone", "max abs err vs eager", ""], _reruns(m)),
        ),
        notes=(Note(f"defined at {where(site.file, site.line)}"), *_notes(m)),
    )


PHASES = (
    Phase(
        "miscompile",
        MAIN,
        (),
        measure="tcdoctor.probes.miscompile:phase_miscompile",
        order=137,
        fill=_fill,
        not_measured=_not_measured,
        reads=_reads,
        row=_row,
        layout=layout,
    ),
)
