"""The serving section (issue 55), described once (report/layout.py) for every format: the
traffic's key figures and the operating model (every format), the latency per side, the compiles
during traffic and the shape strategies (every format, long tables cut in the terminal and the
Markdown), then the warm-up, the restart, host time and threads, the ahead-of-time part and what
was not measured (the files). render/outline.py places them in one fold, the latency chart
(render/charts.py `latency`) above the latency table in the HTML.

Every figure is written by units.py; every part that was not measured says why (the section's
`not_measured`, or the part's own). The operating model and the strategy named best are the
verdict's (verdict/serving.py, `Verdict.serving`): the strategies' table marks the row the verdict
names and no other, so the two never disagree.

Pitfalls: a compile's guard is PyTorch's text (escaped by each format's one escaper); the
compiles of the user's own warm-up are start-up cost and are listed apart from the traffic's; a
side's percentiles are over the requests it served (a rejected request has none).
"""

from __future__ import annotations

from .. import units
from ..report.layout import Note, Row, Section, Table, Text, notes
from ..report.model import Report
from ..report.sections.generation import GenCompile, GenStrategy
from ..report.sections.percentiles import percentile, served
from ..report.sections.serving import (
    MADE,
    OperatingModel,
    ServedSide,
    ServeStrategy,
    Serving,
    TrafficCompile,
)
from .breaks import more_line
from .serving_parts import (
    aot_section,
    host_section,
    restart_section,
    threads_text,
    unmeasured,
    warmup_rows,
    warmup_section,
)

TITLE = "Serving"
MODEL = "Operating model for this traffic"
LATENCY = "Latency per request under traffic"
COMPILES = "Compiles during traffic"
STRATEGIES = "Shape strategies on the traffic"
NOT_MEASURED = "Serving: not measured"
BEST = "← best"


def fold_title(s: Serving) -> str:
    """The HTML fold's summary: 'Serving: 200 requests replayed (p99 2.67 s compiled)'."""
    n = s.traffic.requests if s.traffic else None
    p99 = f" (p99 {units.seconds(s.p99_s)} compiled)" if s.p99_s is not None else ""
    return f"{TITLE}: {units.count(n)} requests replayed{p99}"


def _side_line(side: ServedSide | None) -> str:
    if side is None:
        return units.NA
    return " / ".join(units.seconds(x) for x in (side.p50_s, side.p90_s, side.p99_s, side.max_s))


def key_rows(s: Serving) -> tuple[Row, ...]:
    """The traffic's key figures, one row each (every format)."""
    replay = s.replay
    eager, compiled = (replay.eager, replay.compiled) if replay else (None, None)
    t = s.traffic
    traffic = (
        f"{units.count(t.requests)} requests, {units.count(t.distinct_shapes)} distinct shapes: "
        f"{t.description}"
        if t
        else units.NA
    )
    rows = [
        Row("traffic", traffic, (t.method if t else "") or ""),
        Row("p50 / p90 / p99 / max eager", _side_line(eager) if eager else unmeasured(s, "replay")),
        Row(
            "p50 / p90 / p99 / max compiled",
            _side_line(compiled) if compiled else unmeasured(s, "replay"),
            "compile stalls included: the first requests pay them, as a server's cold start does",
        ),
    ]
    if compiled is not None:
        rows += _compile_rows(s, compiled)
    rows += warmup_rows(s)
    return tuple(rows) + _later_rows(s)


def _compile_rows(s: Serving, side: ServedSide) -> list[Row]:
    """The compiles during traffic, the time they cost, the eager fallback."""
    fallback = (
        f"{len(side.fallback_requests)} request(s): {units.indices(side.fallback_requests)}"
        if side.fallback_requests
        else "none"
    )
    return [
        Row(
            "compiles during traffic",
            f"{units.count(s.traffic_compiles)} ({units.seconds(side.compile_s)} lost to compiles)",
            "CompilationMetrics entries PyTorch added during each request",
        ),
        Row(
            f"served by the eager fallback after recompile_limit ({units.count(side.recompile_limit)})",
            fallback,
            "PyTorch's limit record, then its guard-complete hook on each later request",
            alarm=bool(side.fallback_requests),
        ),
    ]


def _later_rows(s: Serving) -> tuple[Row, ...]:
    """The restart, requests/s per process, the threads and AOT, one row each."""
    r, h, th, aot = s.restart, s.host, s.threads, s.aot
    restart = (
        f"first request {units.seconds(r.first_request_s)} after the spawn; {'; '.join(r.hit)}"
        if r
        else unmeasured(s, "proof", "restart")
    )
    if h and h.eager and h.compiled:
        rps = f"eager {units.rate(h.eager.max_rps)}, compiled {units.rate(h.compiled.max_rps)}"
        if h.skip_guards:
            rps += f", skip_guard_eval_unsafe {units.rate(h.skip_guards.max_rps)}"
    else:
        rps = unmeasured(s, "host")
    return (
        Row("restart (a fresh process)", restart, (r.method if r else "") or ""),
        Row("requests/s per process (1 / host time)", rps, (h.method if h else "") or ""),
        Row("threads", threads_text(s), (th.method if th else "") or ""),
        Row("ahead of time (AOT)", aot_text(s), (aot.method if aot else "") or ""),
    )


def aot_text(s: Serving) -> str:
    """AOT in one line: does not export (where, why), or its load and p50/p99, or why not."""
    aot = s.aot
    if aot is None:
        return unmeasured(s, "aot")
    if aot.unexported:
        where, why = aot.unexported
        return f"does not export{f' at {where}' if where else ''}: {why}"
    if aot.p50_s is None:
        return f"exported; {units.NA} ({aot.unserved_why or 'no request served'})"
    return (
        f"load {units.seconds(aot.load_s)}, p50 / p99 {units.seconds(aot.p50_s)} / "
        f"{units.seconds(aot.p99_s)}, numerics {aot.numerics_status or units.NA}"
    )


def section(report: Report) -> Section | None:
    """The key figures of the serving section (every format); None without one."""
    s = report.serving
    if s is None:
        return None
    return Section(
        TITLE,
        detail=f"{units.count(s.traffic.requests if s.traffic else None)} requests",
        rows=key_rows(s),
    )


def model_section(report: Report) -> Section | None:
    """The verdict's operating model: its line, the strategy named best, how it relates to the
    headline (every format), and the figures behind it (the files)."""
    om: OperatingModel | None = report.verdict.serving
    if report.serving is None or om is None:
        return None
    lines = [Note(f"→ {om.text}")] if om.text else []
    lines += [Note(om.strategy_text)] if om.strategy_text else []
    lines += [Note(om.relation)] if om.relation else []
    lines += [Note(f"behind it: {f}", how=True) for f in om.figures]
    return Section(MODEL, notes=tuple(lines))


def latency_section(report: Report) -> Section | None:
    """Each side's percentiles: eager, compiled, compiled after the warm-up, the AOT package."""
    s = report.serving
    if s is None or s.replay is None:
        return None
    headers = (
        "",
        "served",
        "p50",
        "p90",
        "p99",
        "max",
        "compiles",
        "lost to compiles",
        "eager fallback",
    )
    rows = []
    for name, side in (("eager", s.replay.eager), ("compiled (cold start)", s.replay.compiled)):
        if side is None:
            continue
        made = sum(1 for c in side.compiles if c.kind in MADE)
        rows.append([
            name, _served(side.latencies_s), *_pcts(side.p50_s, side.p90_s, side.p99_s, side.max_s),
            units.count(made) if name != "eager" else "—",
            units.seconds(side.compile_s) if name != "eager" else "—",
            units.count(len(side.fallback_requests)) if name != "eager" else "—",
        ])  # fmt: skip
    proof = s.warmup.proof if s.warmup else None
    if proof is not None and any(x is not None for x in proof.latencies_s):
        rows.append([
            "compiled after the warm-up", _served(proof.latencies_s),
            *_pcts(*(percentile(proof.latencies_s, q) for q in (0.5, 0.9, 0.99, 1.0))),
            units.count(len(proof.compiled_requests)) + " would", "—", "—",
        ])  # fmt: skip
    if s.aot and s.aot.served:
        lat = s.aot.latencies_s
        rows.append([
            "AOT package", _served(lat),
            *_pcts(*(percentile(lat, q) for q in (0.5, 0.9, 0.99, 1.0))), "0", "—", "—",
        ])  # fmt: skip
    how = (
        "One request at a time, each synced before and after; percentiles by nearest rank over the "
        "requests served (stats.nearest_rank). Compiled after the warm-up: the proof's replay in a "
        "fresh process under fail_on_recompile ('would': requests that would have compiled)."
    )
    return Section(
        LATENCY, tables=(Table(headers, rows, detail=(7,)),), notes=(Note(how, how=True),)
    )


def _served(latencies: list) -> str:
    return "{} of {}".format(*served(latencies))


def _pcts(*xs: float | None) -> list[str]:
    return [units.seconds(x) for x in xs]


def compiles_section(report: Report) -> Section | None:
    """Each compile during traffic: the request, its shapes, its seconds, the guard that failed
    (PyTorch's words); the eager fallback's requests; the user's warm-up's compiles apart."""
    s = report.serving
    side = s.compiled if s else None
    if s is None or side is None:
        return None
    rows = [_compile_cells(c) for c in side.compiles]
    table = Table(
        ("request", "shapes", "seconds", "kind", "function", "guard that failed (PyTorch)"),
        rows,
        code=(1,),
        detail=(4,),
        more=more_line(len(rows)),
    )
    lines = []
    if side.limit_hit:
        lines.append(
            f"recompile_limit ({units.count(side.recompile_limit)}) reached at request "
            f"{side.limit_hit.get('request')}: {side.limit_hit.get('message') or ''}".rstrip(": ")
        )
    if side.fallback_requests:
        lines.append(
            f"served by the eager fallback: requests {units.indices(side.fallback_requests, 20)}"
        )
    user = s.warmup.user if s.warmup else None
    if user is not None:
        lines.append(
            f"your warm-up compiled {user.made} time(s) before the traffic "
            f"({units.seconds(user.compile_s)}: start-up cost, not counted above)"
        )
    if side.stopped:
        lines.append(f"the replay stopped early: {side.stopped}")
    return Section(COMPILES, count=len(rows), tables=(table,) if rows else (), notes=notes(lines))


def guard_text(c: TrafficCompile | GenCompile) -> str:
    """A compile's cause in a compiles table (the traffic's and the generation's): the guard that
    failed in PyTorch's words, or what its kind says instead."""
    return c.reason or (
        "recompile_limit reached: served eagerly" if c.kind == "limit"
        else (c.fail_reason or "failed") if c.kind == "failed"
        else "first compile of the frame"
    )  # fmt: skip


def _compile_cells(c: TrafficCompile) -> list[str]:
    return [
        units.count(c.request), Text(c.shapes or units.NA), units.seconds(c.seconds),
        c.kind or "", c.function or "", guard_text(c),
    ]  # fmt: skip


def strategy_cells(
    r: ServeStrategy | GenStrategy, figures: list[str], extra: list[str], reference: bool, vs: str
) -> list[Text | str]:
    """One strategy's row in a strategies table (the traffic's shape strategies and the
    generation's cache strategies): its name (and label), its figures, its compiles and warm-up
    (cold), the table's `extra` cells, its interval against the reference (`vs` on the
    reference's own row)."""
    return [
        Text(f"{r.name} ({r.label})" if r.label else (r.name or ""), r.name or ""),
        *figures,
        units.count(r.compiles),
        units.seconds(r.warmup_s),
        *extra,
        vs if reference else units.paired(r.interval),
    ]


def strategies_section(report: Report) -> Section | None:
    """Each strategy on the traffic: p50, p99, compiles, warm-up, the eager fallback, its interval
    against torch.compile as the target compiles it; the best marked where the verdict names it."""
    s = report.serving
    if s is None:
        return None
    best = report.verdict.serving.strategy if report.verdict.serving else None
    rows = [
        [
            *strategy_cells(
                r,
                [units.seconds(r.p50_s), units.seconds(r.p99_s)],
                [units.count(len(r.fallback_requests))],
                r.name == "automatic",
                "reference",
            ),
            BEST if best and r.name == best else "",
        ]
        for r in s.strategies
    ]
    lines = [f"{name}: {units.NA} ({why})" for name, why in _strategies_not_run(s)]
    lines += [_fallback_line(r) for r in s.strategies if r.fallback_requests]
    lines += [f"{r.name}: stopped early: {r.stopped}" for r in s.strategies if r.stopped]
    if not rows and not lines:
        return None
    headers = ("strategy", "p50", "p99", "compiles", "warm-up (cold)", "eager fallback",
               "time vs torch.compile (interval)", "")  # fmt: skip
    how = (
        "Each strategy in a fresh process with an empty cache: a cold pass (its compiles, its "
        "warm-up's cost), then a steady pass (p50, p99). Interval: the ratio of medians against "
        "the reference, paired by request, widened by the largest spread between the reference's "
        "processes; 'faster' or 'slower' only when it excludes 1."
    )
    table = (Table(headers, rows, detail=(4,)),) if rows else ()
    return Section(STRATEGIES, tables=table, notes=notes(lines) + (Note(how, how=True),))


def _fallback_line(r: ServeStrategy) -> str:
    """'static: recompile_limit (8) reached at request 9; served by the eager fallback: requests
    10, 11, … (165 in all)'."""
    hit = r.limit_hit or {}
    reached = (
        f"recompile_limit ({units.count(r.recompile_limit)}) reached at request "
        f"{hit.get('request')}; "
        if hit
        else ""
    )
    return f"{r.name}: {reached}served by the eager fallback: requests " + units.indices(
        r.fallback_requests, 20
    )


def _strategies_not_run(s: Serving) -> list[tuple[str, str]]:
    names = ("strategies", "static", "dynamic", "marked", "padded", "regional")
    out = [(n, s.not_measured[n]) for n in names if s.not_measured.get(n)]
    out += [(r.name or "?", r.not_measured) for r in s.strategies if r.not_measured]
    return out


def not_measured_section(report: Report) -> Section | None:
    """Each part not measured, with why (the files; the key rows say it too)."""
    s = report.serving
    if s is None or not s.not_measured:
        return None
    return Section(NOT_MEASURED, notes=notes([f"{k}: {v}" for k, v in s.not_measured.items()]))


def details(report: Report, base_dir: str | None = None) -> list[Section]:
    """The files' sections: the warm-up, the restart, host time and threads, AOT; `base_dir`: the
    HTML's folder (the warm-up script's link is relative to it)."""
    s = report.serving
    if s is None:
        return []
    found = (warmup_section(s, base_dir), restart_section(s), host_section(s), aot_section(s))
    return [sec for sec in found if sec is not None]
