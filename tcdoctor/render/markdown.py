"""Markdown for GitHub issue text: verdict, key table, top breaks, the rest in <details>."""

from __future__ import annotations

from .. import units
from ..report import Report
from . import distributed


def _esc(text: object) -> str:
    """Neutralise Markdown/HTML in strings from user code and PyTorch messages."""
    s = str(text if text is not None else "")
    for ch in ("\\", "`", "*", "_", "[", "]", "<", ">", "|", "#"):
        s = s.replace(ch, "\\" + ch)
    return s.replace("\n", " ")


def _code(text: object) -> str:
    s = str(text or "").replace("\n", " ").replace("`", "'")
    return f"`{s}`" if s else ""


def _pair(show, a, b) -> str:
    return f"{show(a)} / {show(b)}"


def _numerics(passed: object, err: object) -> str:
    status = units.numerics_status(passed)
    if passed is None:
        return status
    return (f"**{status}**" if passed is False else status) + f", max abs err {units.sci(err)}"


def render(report: Report, top: int = 5) -> str:
    g = report.get
    v = report.data.get("verdict") or {}
    out = [f"## tcdoctor: {_esc(units.decision_text(v.get('decision')))}", ""]
    out += [f"- {_esc(r)}" for r in v.get("reasons", [])]
    out += ["", "| figure | value | how measured |", "|---|---|---|"]
    rt = g("runtime") or {}
    limit_hit = " (limit hit!)" if g("recompiles.limit_hit") else ""
    be = units.calls(v["break_even_calls"]) if v.get("break_even_calls") else "n/a (not faster)"
    rows = [
        (
            "graphs / graph breaks",
            _pair(units.count, g("graphs.count"), g("graph_breaks.count")),
            "torch._dynamo.explain + graph-break log, one call",
        ),
        (
            "recompiles",
            units.count(g("recompiles.count")) + limit_hit,
            "CompilationMetrics over inputs then each variant",
        ),
        ("guards", units.count(g("guards.count")), "CompilationMetrics.guard_count"),
        (
            "guard overhead / call",
            units.seconds(g("guards.overhead_s_per_call")),
            "profiler 'TorchDynamo Cache Lookup'",
        ),
        (
            "eager / compiled median",
            _pair(units.seconds, g("runtime.eager.median_s"), g("runtime.compiled.median_s")),
            _esc(rt.get("method", "")),
        ),
        (
            "speedup",
            units.ratio(g("runtime.speedup"), g("runtime.speedup_ci")),
            "ratio of medians, paired bootstrap CI",
        ),
        (
            "compile cold / warm",
            _pair(units.seconds, g("compile.cold_s"), g("compile.warm_s")),
            "first call; warm = fresh process, same cache dir",
        ),
        ("break-even", be, "(cold compile − eager call) / saving per call"),
        (
            "peak memory eager / compiled",
            _pair(units.nbytes, g("memory.eager_peak_bytes"), g("memory.compiled_peak_bytes")),
            _esc(g("memory.method") or ""),
        ),
        (
            "numerics",
            _numerics(g("numerics.passed"), g("numerics.max_abs_err")),
            "vs eager, judged against fp64",
        ),
    ]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    findings = g("graph_breaks.unique") or []

    def item(f: dict) -> str:
        cost = units.break_cost(f, first=f is findings[0])
        return (
            f"- **{_esc(f['reason'])}** at {_code(str(f['file']) + ':' + str(f['line']))} {_code(f.get('code'))}"
            + (f" ×{f['occurrences']}" if f["occurrences"] > 1 else "")
            + (" (frame skipped: runs eagerly)" if f.get("frame_skipped") else "")
            + _esc(units.break_site(f))
            + (f" — {_esc(cost)}" if cost else "")
        )

    if findings:
        out += ["", f"### Graph breaks ({len(findings)} unique)", ""] + [
            item(f) for f in findings[:top]
        ]
        if len(findings) > top:
            out += (
                ["", "<details><summary>" + f"{len(findings) - top} more</summary>", ""]
                + [item(f) for f in findings[top:]]
                + ["", "</details>"]
            )
    fixes = report.data.get("fixes") or []
    if fixes:
        out += ["", "### Tried (no source edit)", ""] + [
            f"- {_code(row['fix'])}: **{_esc(row.get('outcome'))}**"
            + (f" ({_esc(units.fix_summary(row))})" if units.fix_summary(row) else "")
            for row in fixes
        ]
    layer = (report.data.get("ablation") or {}).get("layer")
    if layer:
        out += ["", f"**Which layer:** {_esc(layer)}"]
    events = g("recompiles.events") or []
    if events:
        out += ["", "### Recompiles", ""] + [
            f"- {_code(e['function'])} on {_esc(e['variant'])}: {_code(e['reason'])}"
            for e in events
        ]
    recs = v.get("recommendations") or {}
    if recs:
        out += ["", "### Compile strategies", ""] + [
            f"- **{_esc(k)}**: {_esc(r['text'])}" for k, r in recs.items()
        ]
    if v.get("advice"):
        out += (
            ["", "<details><summary>Advice</summary>", ""]
            + [f"- {_esc(a['text'])}" for a in v["advice"]]
            + ["", "</details>"]
        )
    out += distributed.markdown_lines(
        report
    )  # rank table and the log to attach (render/distributed.py)
    for e in report["errors"]:
        out.append(f"\n> **Error in {_esc(e['phase'])}:** {_esc(e['message'])}")
    env = g("environment") or {}
    out += [
        "",
        f"<sub>tcdoctor {_esc(g('tool.version'))}, torch {_esc(env.get('torch'))}, {_esc(env.get('device'))}, backend {_esc(g('options.backend'))}, "
        f"{_esc(env.get('threads'))} thread(s); `tcdoctor analyze {_esc(report['target'])}`</sub>",
        "",
    ]
    return "\n".join(out)
