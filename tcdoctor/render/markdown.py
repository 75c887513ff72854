"""Markdown for GitHub issue text: verdict, key table, top breaks, the rest in <details>."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .. import units
from ..report.model import Report
from ..report.sections import CompileGraphs, Distributed, GraphBreak, TorchTrace
from . import attribution, compile_table, patches, ranks, remedy_table
from .base import Renderer


def _esc(text: object) -> str:
    """Neutralise Markdown/HTML in strings from user code and PyTorch messages."""
    s = str(text if text is not None else "")
    for ch in ("\\", "`", "*", "_", "[", "]", "<", ">", "|", "#"):
        s = s.replace(ch, "\\" + ch)
    return s.replace("\n", " ")


def _code(text: object) -> str:
    s = str(text or "").replace("\n", " ").replace("`", "'")
    return f"`{s}`" if s else ""


def _numerics(passed: object, err: object) -> str:
    status = units.numerics_status(passed)
    if passed is None:
        return status
    return (f"**{status}**" if passed is False else status) + f", max abs err {units.sci(err)}"


def _figures(report: Report) -> list[tuple[str, str, str]]:
    """The key-figure table: figure, value (units.py's text), how it was measured."""
    rt, c, m, n, v = report.runtime, report.compile, report.memory, report.numerics, report.verdict
    limit_hit = " (limit hit!)" if report.recompiles.limit_hit else ""
    be = units.calls(v.break_even_calls) if v.break_even_calls else "n/a (not faster)"
    return [
        (
            "graphs / graph breaks",
            units.pair(units.count, report.graphs.count, report.graph_breaks.count),
            "your compile's first call: PyTorch's counters + graph-break log"
            if report.graphs.source
            else "torch._dynamo.explain + graph-break log, one call",
        ),
        (
            "recompiles",
            units.count(report.recompiles.count) + limit_hit,
            "CompilationMetrics over inputs then each variant",
        ),
        ("guards", units.count(report.guards.count), "CompilationMetrics.guard_count"),
        (
            "guard overhead / call",
            units.seconds(report.guards.overhead_s_per_call),
            "calls with and without guard evaluation (skip_guard_eval_unsafe); profiler "
            f"'TorchDynamo Cache Lookup': {units.seconds(report.guards.profiler_overhead_s_per_call)}"
            if report.guards.by_removal
            else "profiler 'TorchDynamo Cache Lookup'",
        ),
        (
            "eager / compiled median",
            units.pair(units.seconds, rt.eager.median_s, rt.compiled.median_s),
            _esc(rt.method),
        ),
        (
            "speedup",
            units.ratio(rt.speedup, rt.speedup_ci, level=rt.ci_level)
            + (f"; {units.another_run(rt.prediction_interval)}" if rt.prediction_interval else "")
            + (f"; {units.processes(rt.processes)}" if rt.processes else "")
            + (f"; {units.stopped(rt.sequence)}" if rt.sequence else ""),
            _esc(rt.across_method) if rt.across_method else "ratio of medians, paired bootstrap CI",
        ),
        *(
            [
                (
                    "allocator regimes",
                    _esc(units.regimes(rt.regimes, rt.ci_level)),
                    "minor page faults per call",
                )
            ]
            if rt.regimes
            else []
        ),
        (
            "compile cold / warm",
            units.pair(units.seconds, c.cold_s, c.warm_s),
            "first call; warm = fresh process, same cache dir",
        ),
        ("break-even", be, "(cold compile − eager call) / saving per call"),
        (
            "peak memory eager / compiled",
            units.pair(units.nbytes, m.eager_peak_bytes, m.compiled_peak_bytes),
            _esc(m.method),
        ),
        *(
            [
                (
                    "memory growth",
                    _esc(attribution.memory_summary(m.attribution)),
                    _esc(_method(m.attribution)),
                )
            ]
            if m.attribution is not None
            else []
        ),
        ("numerics", _numerics(n.passed, n.max_abs_err), "vs eager, judged against fp64"),
        *(
            [("numerics drift", _esc(attribution.drift_summary(n.drift)), _esc(_method(n.drift)))]
            if n.drift
            else []
        ),
    ]


def _method(rec: object) -> str:
    return getattr(rec, "method", None) or ""


def _attribution(report: Report) -> list[str]:
    """The graphs holding the extra memory and the modules where numbers drift, with their notes."""
    out: list[str] = []
    a, d = report.memory.attribution, report.numerics.drift
    for title, headers, rows, notes in (
        (
            attribution.MEMORY_TITLE,
            attribution.MEMORY_HEADERS,
            attribution.memory_rows(a),
            attribution.memory_notes(a),
        ),
        (
            attribution.DRIFT_TITLE,
            attribution.DRIFT_HEADERS,
            attribution.drift_rows(d),
            attribution.drift_notes(d, report.fixes),
        ),
    ):
        if rows:
            out += _table(title, headers, [[_esc(c) for c in row] for row in rows])
            out += [""] + [f"- {_esc(line)}" for line in notes]
    return out


def _break_item(f: GraphBreak) -> str:
    cost = f.gain_text
    return (
        f"- **{_esc(f.reason)}** at {_code(str(f.file) + ':' + str(f.line))} {_code(f.code)}"
        + (f" ×{f.occurrences}" if f.occurrences > 1 else "")
        + (f" ({_esc(f.skipped_text)})" if f.frame_skipped else "")
        + _esc(f.site_text)
        + (f" — {_esc(cost)}" if cost else "")
    )


def _breaks(findings: list[GraphBreak], top: int) -> list[str]:
    """The top breaks as a list, the rest folded into <details>."""
    if not findings:
        return []
    items = [_break_item(f) for f in findings]
    out = ["", f"### Graph breaks ({len(findings)} unique)", ""] + items[:top]
    if len(findings) > top:
        out += ["", f"<details><summary>{len(findings) - top} more</summary>", ""]
        out += items[top:] + ["", "</details>"]
    return out


def _tried(report: Report) -> list[str]:
    out: list[str] = []
    rows = patches.other_rows(report)
    if rows:
        out += ["", "### Tried (no source edit)", ""]
        for row in rows:
            summary = row.summary
            out.append(
                f"- {_code(row.fix)}: **{_esc(row.outcome)}**"
                + (f" ({_esc(summary)})" if summary else "")
            )
    for row in patches.patch_rows(report):
        out += ["", f"### Source patch {_esc(patches.heading(row))}", ""]
        out += [f"- {_esc(line)}" for line in patches.check_lines(row)]
        out.append(f"- measured: {_esc(patches.measured(row))}")
        if row.patch is not None and row.patch.note:
            out.append(f"- note: {_esc(row.patch.note)}")
        fence = "````" if "```" in patches.diff_of(row) else "```"
        out += ["", fence + "diff", patches.diff_of(row), fence]
    layer = report.ablation.layer if report.ablation else None
    if layer:
        out += ["", f"**Which layer:** {_esc(layer)}"]
    return out


def _table(title: str, headers: list[str], rows: list[list[str]]) -> list[str]:
    """A titled Markdown table of cells already escaped."""
    lines = ["", f"### {title}", "", "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return lines + ["| " + " | ".join(cells) + " |" for cells in rows]


def _remedy_table(report: Report) -> list[str]:
    """Cold, warm and each tried remedy's first call and speed, and the lines under them."""
    if not remedy_table.shown(report):
        line = remedy_table.skipped_line(report)
        return ["", _esc(line)] if line else []
    rows = [
        [_esc(c) for c in row[:-1]] + [_code(row[-1]) if row[-1] else ""]
        for row in remedy_table.rows(report)
    ]
    return (
        _table(remedy_table.TITLE, remedy_table.HEADERS, rows)
        + [""]
        + [f"- {_esc(line)}" for line in remedy_table.notes(report)]
    )


def _compile_table(graphs: CompileGraphs | None, top: int) -> list[str]:
    """The `top` frames that took most of the cold compile time, the check and the method."""
    if not graphs or not graphs.rows:
        return []
    rows = [[_esc(c) for c in compile_table.cells(r)] for r in graphs.rows[:top]]
    out = _table(compile_table.TITLE, compile_table.HEADERS, rows)
    rest = compile_table.rest_line(graphs, top)
    out += [""] + ([_esc(rest), ""] if rest else [])
    out += [f"- {_esc(line)}" for line in compile_table.check_lines(graphs)]
    return out + [f"- how: {_esc(graphs.method)}"]


def _ranks(sec: Distributed | None) -> list[str]:
    """A distributed run's rank table and the lines under it (render/ranks.py's text, escaped)."""
    if not sec:
        return []
    out = [
        "",
        f"### Ranks ({len(sec.ranks)} of {sec.world_size})",
        "",
        "| " + " | ".join(ranks.HEADERS[:-1]) + " | |",
        "|" + "---|" * len(ranks.HEADERS),
    ]
    out += ["| " + " | ".join(_esc(c) for c in row) + " |" for row in ranks.rows(sec)]
    return out + [""] + [f"- {_esc(line)}" for line in ranks.summary_lines(sec)]


def _trace(tt: TorchTrace | None) -> list[str]:
    """The structured compile log to attach to a PyTorch issue, and how to render it."""
    if not tt:
        return []
    attach = tt.attach
    out = [
        "",
        f"Structured compile log (TORCH_TRACE) to attach to a PyTorch issue: `{attach}`"
        + (
            f" (and the other ranks' logs in `{os.path.dirname(attach)}`)"
            if len(tt.logs) > 1
            else ""
        )
        if attach
        else "No structured compile log was written.",
    ]
    if not tt.index:
        out.append(f"Render it with `{tt.command}`")
    return out


@dataclass(frozen=True)
class MarkdownRenderer(Renderer):
    """Issue-ready Markdown (`--md`); `top` graph breaks are listed, the rest folded away, and
    the `top` compiled frames that took most of the cold compile time."""

    name = "markdown"
    top: int = 5

    def render(self, report: Report) -> str:
        v = report.verdict
        out = [f"## tcdoctor: {_esc(units.decision_text(v.decision))}", ""]
        out += [f"- {_esc(r)}" for r in v.reasons]
        out += ["", "| figure | value | how measured |", "|---|---|---|"]
        out += [f"| {a} | {b} | {c} |" for a, b, c in _figures(report)]
        out += _breaks(report.graph_breaks.unique, self.top)
        out += _tried(report)
        out += _compile_table(report.compile.graphs, self.top)
        out += _attribution(report)
        out += _remedy_table(report)
        events = report.recompiles.events
        if events:
            out += ["", "### Recompiles", ""] + [
                f"- {_code(e.function)} on {_esc(e.variant)}: {_code(e.reason)}" for e in events
            ]
        recs = v.recommendations or {}
        if recs:
            out += ["", "### Compile strategies", ""] + [
                f"- **{_esc(k)}**: {_esc(r['text'])}" for k, r in recs.items()
            ]
        if v.advice:
            out += ["", "<details><summary>Advice</summary>", ""]
            out += [f"- {_esc(a.text)}" for a in v.advice] + ["", "</details>"]
        out += _ranks(report.distributed)
        out += _trace(report.torch_trace)
        for e in report.errors:
            out.append(f"\n> **Error in {_esc(e['phase'])}:** {_esc(e['message'])}")
        env = report.environment
        out += [
            "",
            f"<sub>tcdoctor {_esc(report.tool.get('version'))}, torch {_esc(env.get('torch'))}, "
            f"{_esc(env.get('device'))}, backend {_esc(report.options.get('backend'))}, "
            f"{_esc(units.threads(env))}; `tcdoctor analyze {_esc(report.target)}`</sub>",
            "",
        ]
        return "\n".join(out)
