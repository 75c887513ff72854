"""Short terminal summary: verdict, key figures, the top findings, the ranks of a distributed run."""

from __future__ import annotations

from dataclasses import dataclass

from tabulate import tabulate

from .. import units
from ..report import phases
from ..report.model import Report
from ..report.sections import (
    CompileGraphs,
    Distributed,
    GraphBreak,
    Regions,
    StrategyRow,
    TorchTrace,
    Verdict,
)
from . import attribution, compile_table, patches, ranks, remedy_table
from .base import Renderer


def _decided(v: Verdict) -> bool:
    """A report saved before the verdict ran (or with it stripped) has an empty Verdict."""
    return v.decision is not None


def _break_even(v: Verdict) -> str:
    if v.break_even_calls:
        return units.calls(v.break_even_calls)
    return "never (compiled not faster)" if _decided(v) else units.NA


def _figures(report: Report) -> list[list[str]]:
    """The key-figure table: one row per figure, each written by its units.py formatter."""
    gb, rc, gu, rt = report.graph_breaks, report.recompiles, report.guards, report.runtime
    c, m, n = report.compile, report.memory, report.numerics
    frac = gu.overhead_fraction
    return [
        [
            "graphs / graph breaks",
            units.pair(units.count, report.graphs.count, gb.count)
            + (f" ({gb.skipped_frames} skipped frame(s))" if gb.skipped_frames else ""),
        ],
        [
            "recompiles",
            units.count(rc.count)
            + ("  RECOMPILE LIMIT HIT: running eagerly" if rc.limit_hit else ""),
        ],
        ["guards (first call)", units.count(gu.count)],
        [
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
        ],
        ["eager median / call", units.seconds(rt.eager.median_s)],
        ["compiled median / call", units.seconds(rt.compiled.median_s)],
        [
            "speedup",
            units.ratio(rt.speedup, rt.speedup_ci, level=rt.ci_level)
            + (f"; {units.another_run(rt.prediction_interval)}" if rt.prediction_interval else "")
            + (
                f", across {len(rt.processes)} processes: {units.processes(rt.processes)}"
                if rt.processes and len(rt.processes) > 1
                else (f", {rt.samples} paired samples" if rt.samples else "")
            ),
        ],
        *([["processes", units.stopped(rt.sequence)]] if rt.sequence else []),
        *([["allocator regimes", units.regimes(rt.regimes, rt.ci_level)]] if rt.regimes else []),
        ["compile: cold / warm", units.pair(units.seconds, c.cold_s, c.warm_s)],
        ["break-even (cold)", _break_even(report.verdict)],
        [
            "peak memory eager / compiled",
            units.pair(units.nbytes, m.eager_peak_bytes, m.compiled_peak_bytes),
        ],
        *(
            [["memory growth", attribution.memory_summary(m.attribution)]]
            if m.attribution is not None
            else []
        ),
        [
            "numerics",
            units.numerics_status(n.passed)
            + ("" if n.passed is None else f" (max abs err {units.sci(n.max_abs_err)})"),
        ],
        *([["numerics drift", attribution.drift_summary(n.drift)]] if n.drift else []),
        *phases.figure_rows(report),  # a probe's own section's row (Phase.row)
    ]


def _break_line(f: GraphBreak) -> str:
    cost = f.gain_text
    return (
        f"  {f.file}:{f.line} {f.reason}"
        + (f" ×{f.occurrences}" if f.occurrences > 1 else "")
        + (f" [{f.skipped_text}]" if f.frame_skipped else "")
        + f.site_text
        + (f"  [{cost}]" if cost else "")
    )


@dataclass(frozen=True)
class TerminalRenderer(Renderer):
    """The summary `tcdoctor analyze` and `tcdoctor report` print; `limit` caps the graph breaks,
    recompiles and compiled frames listed (the JSON and HTML reports have them all)."""

    name = "terminal"
    limit: int = 5

    def render(self, report: Report) -> str:
        env, v, limit = report.environment, report.verdict, self.limit
        lines = [
            f"tcdoctor: {report.target}  (torch {env.get('torch', '?')}, {env.get('device', '?')}, "
            f"backend {report.options.get('backend')}, {units.threads(env)})",
            "",
        ]
        if _decided(v):
            lines.append(f"VERDICT: {units.decision_text(v.decision)}")
            lines += [f"  - {r}" for r in v.reasons]
            lines.append("")
        lines.append(tabulate(_figures(report), tablefmt="simple"))
        findings = report.graph_breaks.unique
        if findings:
            lines += ["", "Graph breaks:"]
            lines += [_break_line(f) for f in findings[:limit]]
            if len(findings) > limit:
                lines.append(f"  … and {len(findings) - limit} more")
        lines += _tried_lines(report)
        lines += _compile_table_lines(report.compile.graphs, limit)
        lines += _attribution_lines(report)
        lines += _remedy_lines(report)
        events = report.recompiles.events
        if events:
            lines += ["", "Recompiles:"]
            lines += [f"  {e.function} on {e.variant}: {e.reason}" for e in events[:limit]]
        lines += _strategy_lines(report)
        lines += _rank_lines(report.distributed)
        lines += _trace_lines(report.torch_trace)
        for e in report.errors:
            lines.append(f"ERROR in phase {e['phase']}: {e['message']}")
        return "\n".join(lines)


def _attribution_lines(report: Report) -> list[str]:
    """The graphs that hold the compiled call's extra memory, and the modules where numbers drift."""
    out: list[str] = []
    for title, headers, rows, notes in (
        (
            attribution.MEMORY_TITLE,
            attribution.MEMORY_HEADERS,
            attribution.memory_rows(report.memory.attribution, basename=True),
            attribution.memory_notes(report.memory.attribution, method=False),
        ),
        (
            attribution.DRIFT_TITLE,
            attribution.DRIFT_HEADERS,
            attribution.drift_rows(report.numerics.drift, basename=True),
            attribution.drift_notes(report.numerics.drift, report.fixes, method=False),
        ),
    ):
        if rows:
            out += ["", f"{title}:", tabulate(rows, headers=headers, tablefmt="simple")]
            out += [f"  {line}" for line in notes]
    return out


def _remedy_lines(report: Report) -> list[str]:
    """Cold, warm and each tried remedy's first call and speed, and the lines under them."""
    if not remedy_table.shown(report):
        line = remedy_table.skipped_line(report)
        return ["", line] if line else []
    table = tabulate(remedy_table.rows(report), headers=remedy_table.HEADERS, tablefmt="simple")
    return ["", f"{remedy_table.TITLE}:", table] + [
        f"  {line}" for line in remedy_table.notes(report, method=False)
    ]


def _compile_table_lines(graphs: CompileGraphs | None, limit: int) -> list[str]:
    """The frames that took most of the cold compile time (file names only), and the check; how
    they were measured is in the JSON, HTML and Markdown (a terminal shows figures)."""
    if not graphs or not graphs.rows:
        return []
    table = tabulate(
        [compile_table.cells(r, basename=True) for r in graphs.rows[:limit]],
        headers=compile_table.HEADERS,
        tablefmt="simple",
    )
    rest = compile_table.rest_line(graphs, limit)
    return (
        ["", f"{compile_table.TITLE}:", table]
        + ([f"  {rest}"] if rest else [])
        + [f"  {line}" for line in compile_table.check_lines(graphs, method=False)]
    )


def _rank_lines(sec: Distributed | None) -> list[str]:
    """A distributed run's rank table and the lines under it (render/ranks.py's text)."""
    if not sec:
        return []
    table = tabulate(ranks.rows(sec), headers=ranks.HEADERS, tablefmt="simple")
    return ["", "Ranks:", table] + ["  " + line for line in ranks.summary_lines(sec)]


def _trace_lines(tt: TorchTrace | None) -> list[str]:
    """Where the structured compile logs are, and tlparse's report of them or the command."""
    if not tt:
        return []
    if tt.index:
        return ["", f"Structured compile logs: {tt.dir}; tlparse report: {tt.index}"]
    return ["", f"Structured compile logs: {tt.dir}; render them with: {tt.command}"]


def _timed_table(rows: list[StrategyRow]) -> str:
    """Modes or training ways: each row timed paired against eager."""
    return tabulate(
        [
            [
                r.name,
                "—" if r.baseline else units.first_call(r.first_call_s, r.first_call_cache),
                units.seconds(r.median_s),
                r.vs_eager(),  # with its decision interval, where the report made one
                units.nbytes(r.peak_bytes),
                r.note or ("" if r.numerics_passed is not False else "numerics FAIL"),
            ]
            for r in rows
        ],
        headers=["", "first call", "median", "vs eager", "peak mem", ""],
        tablefmt="simple",
    )


def _dynamic_table(rows: list[StrategyRow]) -> str:
    """One row per shape setting."""
    return tabulate(
        [
            [
                r.name,
                r.compiles,
                units.seconds(r.compile_s),
                "yes" if r.limit_hit else "",
                ", ".join(units.seconds(x["median_s"]) for x in r.shapes),
            ]
            for r in rows
        ],
        headers=["", "compiles", "compile time", "limit hit", "compiled median per shape"],
        tablefmt="simple",
    )


def _regions_table(reg: Regions) -> str:
    return tabulate(
        [
            [
                r.name,
                r.module,
                {True: "yes", False: "NO", None: "-"}[r.fullgraph],
                units.seconds(r.eager_median_s),
                units.seconds(r.median_s),
                r.vs_eager(),  # with its decision interval, where the report made one
            ]
            for r in reg.regions
        ],
        headers=["region", "module", "fullgraph", "eager", "compiled", "speedup"],
        tablefmt="simple",
    )


def _strategy_lines(report: Report) -> list[str]:
    st, recs = report.strategies, report.verdict.recommendations or {}
    out: list[str] = []

    def section(title: str, table: str, rec_key: str) -> None:
        out.extend(["", f"{title}:", table])
        if rec_key in recs:
            out.append(f"  -> {recs[rec_key]['text']}")

    if st.modes:
        section("Modes", _timed_table(st.modes), "mode")
    if st.training:
        section("Training step", _timed_table(st.training), "training")
    if st.dynamic:
        section("Dynamic shapes", _dynamic_table(st.dynamic), "dynamic")
    reg = st.regions
    if reg:
        auto = ", tried because the model breaks a lot" if reg.automatic else ""
        section(f"Regions (depth {reg.depth}{auto})", _regions_table(reg), "regions")
    for f in st.failed:
        out.append(f"strategy {f['strategy']} failed: {f['message']}")
    for f in st.not_run:
        out.append(f"strategy {f['strategy']}: not measured ({f['why']})")
    return out


def _tried_lines(report: Report) -> list[str]:
    """Fixes tried in fresh processes (before → after), and which layer a loss comes from."""
    out: list[str] = []
    rows = patches.other_rows(report)
    if rows:
        out += ["", "Tried (no source edit):"]
        for row in rows:
            summary = row.summary
            out.append(f"  {row.fix}: {row.outcome}" + (f" ({summary})" if summary else ""))
    for row in patches.patch_rows(report):
        out += ["", f"Source patch {patches.heading(row)}"]
        out += [f"  {line}" for line in patches.check_lines(row)]
        out.append(f"  measured: {patches.measured(row)}")
        if row.patch is not None and row.patch.note:
            out.append(f"  note: {row.patch.note}")
        out += [f"    {line}" for line in patches.diff_of(row).splitlines()]
    layer = report.ablation.layer if report.ablation else None
    if layer:
        out += ["", f"Which layer: {layer}"]
    return out
