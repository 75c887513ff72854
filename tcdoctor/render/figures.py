"""The key-figure table, described once (report/layout.py) for every format: one `Row` per figure,
its label, its value (units.py's text) and how it was measured. The terminal shows label and value,
the Markdown and the HTML the three; a phase's own row (`Phase.row`) comes last in all of them.

The HTML's key-figure tiles (`tiles`) are a section too: one `Row` per tile, its label, its value
and the line under it (`alarm`: a warning, as a recompile limit hit); render/outline.py places
them above the HTML's folds, and a tile added here is drawn with no template edited.
"""

from __future__ import annotations

from .. import units
from ..report import phases
from ..report.layout import Row, Section
from ..report.model import Report
from ..report.sections import Verdict
from ..report.sections.outputs import mutates_text

TITLE = "Key figures"
TILES = "At a glance"


def decided(v: Verdict) -> bool:
    """A report saved before the verdict ran (or with it stripped) has an empty Verdict."""
    return v.decision is not None


def _break_even(v: Verdict) -> str:
    if v.break_even_calls:
        return units.calls(v.break_even_calls)
    return "never (compiled not faster)" if decided(v) else units.NA


def forward_calls(report: Report) -> str:
    """What a break-even's calls are in a generation report: calls of the single forward the
    runtime section times, on the target's inputs (not a decode step's shapes), never tokens or
    requests; and the generation's own decision is not this figure's (it may not be faster where
    the forward is). '' elsewhere."""
    if report.serving is None or report.serving.generation is None:
        return ""
    return (
        "calls of the single forward timed on the target's inputs, not decode steps, tokens or "
        "requests: the generation's own speed is its section's"
    )


def _with_forward_calls(text: str, report: Report) -> str:
    return f"{text}; {calls}" if (calls := forward_calls(report)) else text


def _method(rec: object) -> str:
    return getattr(rec, "method", None) or ""


def section(report: Report) -> Section:
    """Every key figure of the report, in the order the formats show them."""
    return Section(TITLE, rows=(*_counts(report), *_speed(report), *_cost(report)))


def _counts(report: Report) -> list[Row]:
    """Graphs and breaks, recompiles, guards and their cost per call."""
    gb, rc, gu = report.graph_breaks, report.recompiles, report.guards
    frac = gu.overhead_fraction
    return [
        Row(
            "graphs / graph breaks",
            units.pair(units.count, report.graphs.count, gb.count)
            + (f" ({gb.skipped_frames} skipped frame(s))" if gb.skipped_frames else ""),
            "your compile's first call: PyTorch's counters + graph-break log"
            if report.graphs.source
            else "torch._dynamo.explain + graph-break log, one call",
        ),
        Row(
            "recompiles",
            units.count(rc.count)
            + ("  RECOMPILE LIMIT HIT: running eagerly" if rc.limit_hit else ""),
            "CompilationMetrics over inputs then each variant",
        ),
        Row("guards (first call)", units.count(gu.count), "CompilationMetrics.guard_count"),
        Row(
            "guard overhead / call",
            units.seconds(gu.overhead_s_per_call)
            + (
                f" ({units.percent(frac)} of a compiled call"
                + (" timed in the same samples" if gu.by_removal else "")
                + ")"
                if frac is not None
                else ""
            )
            + (
                f", guards removed (profiler: {units.seconds(gu.profiler_overhead_s_per_call)})"
                if gu.by_removal
                else ""
            ),
            "calls with and without guard evaluation (skip_guard_eval_unsafe)"
            if gu.by_removal
            else "profiler 'TorchDynamo Cache Lookup'",
        ),
    ]


def _speed(report: Report) -> list[Row]:
    """Eager and compiled per call, the speedup across processes, the allocator regimes."""
    rt = report.runtime
    how = rt.sides_method  # the processes the headline was decided on, where not the cold one
    return [
        Row("eager median / call", units.seconds(rt.eager.median_s), how or rt.method or ""),
        Row("compiled median / call", units.seconds(rt.compiled.median_s), how or ""),
        Row(
            "speedup",
            units.ratio(rt.speedup, rt.speedup_ci, level=rt.ci_level)
            + (f"; {units.another_run(rt.prediction_interval)}" if rt.prediction_interval else "")
            + (
                f", across {len(rt.processes)} processes: {units.processes(rt.processes)}"
                if rt.processes and len(rt.processes) > 1
                else (f", {rt.samples} paired samples" if rt.samples else "")
            ),
            rt.across_method or "ratio of medians, paired bootstrap CI",
        ),
        *([Row("processes", units.stopped(rt.sequence))] if rt.sequence else []),
        *(
            [
                Row(
                    "allocator regimes",
                    units.regimes(rt.regimes, rt.ci_level),
                    "minor page faults per call",
                )
            ]
            if rt.regimes
            else []
        ),
    ]


def _cost(report: Report) -> list[Row]:
    """Compile time and break-even, memory, numerics, then the phases' own rows (memory growth,
    numerics drift: report/phases/memory_graphs.py, drift.py)."""
    c, m, n = report.compile, report.memory, report.numerics
    return [
        Row(
            "compile: cold / warm",
            units.pair(units.seconds, c.cold_s, c.warm_s),
            "first call; warm = fresh process, same cache dir",
        ),
        *(
            (
                Row(
                    "cold, machine probed",
                    units.seconds(c.probed_cold_s),
                    "the cold first call on a machine that has compiled before: less Inductor's "
                    "CPU ISA probe builds, paid once per cache folder (the cold figure is a fresh "
                    "container's)",
                ),
            )
            if c.probed_cold_s is not None
            else ()
        ),
        Row(
            "break-even (cold)",
            _break_even(report.verdict),
            _with_forward_calls("(cold compile − eager call) / saving per call", report),
        ),
        Row(
            "peak memory eager / compiled",
            units.pair(units.nbytes, m.eager_peak_bytes, m.compiled_peak_bytes),
            m.method or "",
        ),
        Row(
            "first-call memory eager / compiled",
            units.pair(
                units.nbytes, m.eager_first_call_peak_bytes, m.compiled_first_call_peak_bytes
            ),
            m.first_call_method or "",
        ),
        Row(
            "held after warm-up eager / compiled",
            units.held_pair(m.eager_held_bytes, m.compiled_held_bytes, m.compiled_pool_bytes),
            m.held_method
            or (f"not measured: {m.held_not_measured}" if m.held_not_measured else ""),
        ),
        Row(
            "numerics",
            units.numerics_status(n.passed)
            + ("" if n.passed is None else f" (max abs err {units.sci(n.max_abs_err)})"),
            "vs eager, judged against fp64"
            + (f"; the call {changes}" if (changes := mutates_text(n.mutates)) else ""),
        ),
        *phases.figure_rows(report),  # a phase's own row (Phase.row)
    ]


def tiles(report: Report) -> Section:
    """The HTML's key-figure tiles: the speedup, the breaks, the recompiles, the compile time, the
    break-even and the numerics, each with its line underneath."""
    rt, rc, c, n = report.runtime, report.recompiles, report.compile, report.numerics
    calls = report.verdict.break_even_calls
    breaks = units.count(report.graph_breaks.count)
    recompiles = units.count(rc.count)
    rows = (
        Row(
            "speedup (median ratio)", units.ratio(rt.speedup), units.ci(rt.speedup_ci, rt.ci_level)
        ),
        Row("graph breaks", breaks, f"{units.count(report.graphs.count)} graph(s)"),
        Row("recompiles", recompiles, "limit hit", alarm=True)
        if rc.limit_hit
        else Row("recompiles", recompiles, f"limit {_blank(rc.limit)}"),
        Row("compile cold / warm", units.seconds(c.cold_s), f"warm {units.seconds(c.warm_s)}"),
        Row(
            "break-even",
            units.calls(calls) if calls else "never",
            _with_forward_calls("cold cache", report),
        ),
        Row("numerics", units.numerics_status(n.passed), f"max abs err {units.sci(n.max_abs_err)}"),
        *_serving_tile(report),
    )
    return Section(TILES, rows=rows)


def _serving_tile(report: Report) -> tuple[Row, ...]:
    """The p99 under traffic (compiled, compile stalls included), where serving was measured; a
    warning where the eager fallback served requests or the warm-up is not proven."""
    s = report.serving
    if s is None or s.compiled is None:
        return ()
    side = s.compiled
    line = f"{units.count(s.traffic_compiles)} compile(s) during traffic"
    if side.fallback_requests:
        return (Row("p99 under traffic", units.seconds(s.p99_s), "eager fallback", alarm=True),)
    if s.proven is False:
        return (Row("p99 under traffic", units.seconds(s.p99_s), "warm-up not proven", alarm=True),)
    proven = "; warm-up proven" if s.proven else ""
    return (Row("p99 under traffic", units.seconds(s.p99_s), line + proven),)


def _blank(value: object) -> str:
    """A figure a report did not record, as nothing (a limit no recompile reached)."""
    return "" if value is None else str(value)
