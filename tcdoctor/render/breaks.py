"""The graph breaks and the recompiles of a report, described once (report/layout.py) for the
terminal and the Markdown: one row per unique break (where, the reason, the code, how often,
whether Dynamo skipped the frame, where in a library it happens, what fixing it would gain) and one
per recompile (which function, on which variant, the guard that failed, its compile time).

The HTML draws the recompiles from the same description; its graph-break table stays its own (the
code and the library site in blocks, PyTorch's hints and the doc link per break, a filter box),
one column per field of the same `GraphBreak`.

Pitfall: a break column that is empty in every row (no break skipped a frame, none in a library)
is left out, so a report of plain breaks stays narrow; `where` is a `Text` whose short form is the
file name without its folders.
"""

from __future__ import annotations

from .. import units
from ..report.layout import Note, Section, Table, where
from ..report.sections import GraphBreak, Recompiles

BREAK_HEADERS = ("where", "reason", "code", "×", "frame", "in a library", "gain if fixed / call")


def _cells(f: GraphBreak) -> list[str]:
    """One unique break's cells, in BREAK_HEADERS' order ('' where a part does not apply)."""
    return [
        where(f.file, f.line),
        str(f.reason or ""),
        str(f.code or ""),
        f"×{f.occurrences}" if f.occurrences > 1 else "",
        (f.skipped_text or "") if f.frame_skipped else "",
        (f.site_text or "").removeprefix(" — "),
        f.gain_text or "",
    ]


def more_line(total: int):
    return lambda shown: f"… and {total - shown} more" if total > shown else None


def section(findings: list[GraphBreak]) -> Section | None:
    """The unique breaks, one row each (the code a detail column the terminal leaves out)."""
    if not findings:
        return None
    rows = [_cells(f) for f in findings]
    keep = [i for i in range(len(BREAK_HEADERS)) if i < 2 or any(r[i] for r in rows)]
    table = Table(
        [BREAK_HEADERS[i] for i in keep],
        [[r[i] for i in keep] for r in rows],
        code=tuple(k for k, i in enumerate(keep) if i in (0, 2)),
        detail=tuple(k for k, i in enumerate(keep) if i == 2),
        more=more_line(len(rows)),
    )
    return Section("Graph breaks", detail=f"{len(findings)} unique", tables=(table,))


def recompiles_section(rec: Recompiles) -> Section | None:
    """Each recompile (function, variant, failing guard, compile time), a hit recompile limit and
    the variants that raised; None when there is none of these."""
    events, errors = rec.events, rec.variant_errors or []
    if not (events or rec.limit_hit or errors):
        return None
    table = Table(
        ("function", "triggered by", "failing guard", "compile"),
        [
            [e.function or "", e.variant or "", e.reason or "", units.seconds(e.compile_s)]
            for e in events
        ],
        code=(0, 2),
        detail=(3,),
        more=more_line(len(events)),
    )
    notes = (
        [
            f"The recompile limit ({rec.limit}) was hit: the function now runs eagerly without "
            "telling you." + "".join(f" {m}" for m in rec.limit_messages or [])
        ]
        if rec.limit_hit
        else []
    )
    notes += [f"{e.get('variant')} raised {e.get('message')}" for e in errors]
    return Section(
        "Recompiles",
        detail=units.count(rec.count),
        tables=(table,),
        notes=tuple(Note(n) for n in notes),
        method=f"{rec.source or units.NA}; {rec.variants} variant(s)",
    )
