"""The graph breaks and the recompiles of a report, described once (report/layout.py) for every
format: one row per unique break (where, the reason, the code, how often, whether Dynamo skipped
the frame, where in a library it happens and that code, what fixing it would gain, the function,
PyTorch's explanation, its hints and its page on the break), the steps Dynamo could not trace that
left no graph-break log entry (`unlogged_fallbacks`, a line each), what a graph break is as
counted here (the method); and one row per recompile (which function, on which variant, the guard
that failed, its compile time).

The terminal draws the narrow columns (where, reason, how often, skipped frame, library, gain);
the code, the function, the explanation, the hints and the page are detail columns the Markdown
and the HTML add (the HTML links the page; a long table gets its filter box there).

Pitfalls: a break column that is empty in every row (no break skipped a frame, none in a library,
none with a doc page) is left out, so a report of plain breaks stays narrow; `where` is a `Text`
whose short form is the file name without its folders; PyTorch's hints for a break in code the user
did not write are for that code's authors, and the cell says so (the advice says what the user can
do); a page is a link only when it is an http(s) address (a saved report is data, not markup).
"""

from __future__ import annotations

from .. import units
from ..report.layout import Note, Section, Table, Text, where
from ..report.model import Report
from ..report.sections import GraphBreak, GraphBreaks, Recompiles

TITLE = "Graph breaks"
RECOMPILES = "Recompiles"
BREAK_HEADERS = (
    "where",
    "function",
    "reason",
    "code",
    "×",
    "frame",
    "in a library",
    "library code",
    "gain if fixed / call",
    "explanation",
    "PyTorch's hints",
    "PyTorch's page",
)
CODE = ("where", "function", "code", "library code")  # shown as code where a format can
WIDE = ("function", "code", "library code", "explanation", "PyTorch's hints", "PyTorch's page")
NOT_YOURS = "for that code's authors (the advice says what you can do): "


def _library_code(f: GraphBreak) -> str:
    """The library line the break happens in, for a break in code the user did not write (when
    it is not the line the code column shows already)."""
    code = "" if f.users else str(f.site and f.site.code or "")
    return "" if code == (f.code or "") else code


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?")) else text + "."


def _hints(f: GraphBreak) -> str:
    """PyTorch's hints, one sentence after another; addressed to the library's authors when the
    break is in code the user did not write."""
    hints = " ".join(_sentence(str(h).strip()) for h in f.hints or [] if str(h).strip())
    return (NOT_YOURS + hints) if hints and not f.users else hints


def _page(f: GraphBreak) -> str:
    """PyTorch's page on this break (linked in the HTML), else its graph-break id."""
    url = str(f.doc_url or "")
    if url:
        return Text(url, href=url if url.startswith(("https://", "http://")) else None)
    return str(f.gb_id or "")


def _cells(f: GraphBreak) -> list[str]:
    """One unique break's cells, in BREAK_HEADERS' order ('' where a part does not apply)."""
    return [
        where(f.file, f.line),
        str(f.function or ""),
        str(f.reason or ""),
        str(f.code or ""),
        f"×{f.occurrences}" if f.occurrences > 1 else "",
        (f.skipped_text or "") if f.frame_skipped else "",
        (f.site_text or "").removeprefix(" — "),
        _library_code(f),
        f.gain_text or "",
        str(f.explanation or ""),
        _hints(f),
        _page(f),
    ]


def more_line(total: int):
    return lambda shown: f"… and {total - shown} more" if total > shown else None


def _table(findings: list[GraphBreak]) -> Table:
    """The unique breaks, one row each, without the columns empty in every row."""
    rows = [_cells(f) for f in findings]
    keep = [
        i
        for i, h in enumerate(BREAK_HEADERS)
        if h in ("where", "reason") or any(r[i] for r in rows)
    ]
    headers = [BREAK_HEADERS[i] for i in keep]
    return Table(
        headers,
        [[r[i] for i in keep] for r in rows],
        code=tuple(k for k, h in enumerate(headers) if h in CODE),
        detail=tuple(k for k, h in enumerate(headers) if h in WIDE),
        more=more_line(len(rows)),
    )


def _not_measured(findings: list[GraphBreak]) -> tuple[Note, ...]:
    """Why what fixing a break gains was not measured: one line per reason (usually one: the
    backend or the profile phase), with how many breaks it leaves unmeasured."""
    unmeasured = [f for f in findings if not f.gain_text and f.cost_not_measured]
    whys = dict.fromkeys(str(f.cost_not_measured) for f in unmeasured)
    out = []
    for why in whys:
        n = sum(str(f.cost_not_measured) == why for f in unmeasured)
        some = f", {n} of {len(findings)} breaks" if n < len(findings) else ""
        out.append(Note(f"gain if fixed / call{some}: not measured ({why})"))
    return tuple(out)


def _unlogged(gb: GraphBreaks) -> tuple[Note, ...]:
    """Steps Dynamo could not trace and filed without a graph-break log entry: listed, not
    counted (probes/graph_breaks.py `unlogged_unimplemented`)."""
    return tuple(
        Note(
            "Dynamo also recorded, without a graph-break log entry, that it could not trace: "
            f"{u.get('reason')} ×{u.get('occurrences')} — code after it ran eagerly."
        )
        for u in gb.unlogged_fallbacks or []
        if isinstance(u, dict)
    )


def _method(gb: GraphBreaks, findings: list[GraphBreak]) -> str:
    """What a graph break is as counted here, explain's count beside it, how each gain is known."""
    out = str(gb.definition or "")
    if gb.explain_graph_break_count is not None:
        out += f" torch._dynamo.explain said: {gb.explain_graph_break_count}."
    gains = dict.fromkeys(f.gain_method for f in findings if f.gain_method)
    out += "".join(f" Gain if fixed: {m}." for m in gains)
    return out.strip()


def shown(report: Report) -> bool:
    """Whether there is a break or an unlogged step to show (else only the HTML's fold, with
    its count and what was counted)."""
    gb = report.graph_breaks
    return bool(gb.unique or _unlogged(gb))


def section(report: Report) -> Section:
    """The unique breaks, the steps Dynamo could not trace without a log entry, and what was
    counted; its summary is the count and the graphs it left (the HTML's heading)."""
    gb, findings = report.graph_breaks, report.graph_breaks.unique
    return Section(
        TITLE,
        detail=f"{len(findings)} unique",
        summary=f"{units.count(gb.count)} · graphs: {units.count(report.graphs.count)}",
        tables=(_table(findings),) if findings else (),
        notes=_not_measured(findings) + _unlogged(gb),
        method=_method(gb, findings),
    )


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
        RECOMPILES,
        detail=units.count(rec.count),
        summary="RECOMPILE LIMIT HIT" if rec.limit_hit else "",
        tables=(table,),
        notes=tuple(Note(n) for n in notes),
        method=f"{rec.source or units.NA}; {rec.variants} variant(s)",
    )
