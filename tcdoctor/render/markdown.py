"""Markdown for GitHub issue text: verdict, key table, top breaks, the rest in <details>."""
from __future__ import annotations

from ..report import Report
from . import distributed, fmt


def _esc(text: object) -> str:
    """Neutralise Markdown/HTML in strings from user code and PyTorch messages."""
    s = str(text if text is not None else "")
    for ch in ("\\", "`", "*", "_", "[", "]", "<", ">", "|", "#"):
        s = s.replace(ch, "\\" + ch)
    return s.replace("\n", " ")


def _code(text: object) -> str:
    s = str(text or "").replace("\n", " ").replace("`", "'")
    return f"`{s}`" if s else ""


def render(report: Report, top: int = 5) -> str:
    g = report.get
    v = report.data.get("verdict") or {}
    out = [f"## tcdoctor: {_esc(fmt.DECISION_TEXT.get(v.get('decision'), v.get('decision')))}", ""]
    out += [f"- {_esc(r)}" for r in v.get("reasons", [])]
    out += ["", "| figure | value | how measured |", "|---|---|---|"]
    rt = g("runtime") or {}
    rows = [
        ("graphs / graph breaks", f"{fmt.count(g('graphs.count'))} / {fmt.count(g('graph_breaks.count'))}", "torch._dynamo.explain + graph-break log, one call"),
        ("recompiles", fmt.count(g("recompiles.count")) + (" (limit hit!)" if g("recompiles.limit_hit") else ""), "CompilationMetrics over inputs then each variant"),
        ("guards", fmt.count(g("guards.count")), "CompilationMetrics.guard_count"),
        ("guard overhead / call", fmt.seconds(g("guards.overhead_s_per_call")), "profiler 'TorchDynamo Cache Lookup'"),
        ("eager / compiled median", f"{fmt.seconds(g('runtime.eager.median_s'))} / {fmt.seconds(g('runtime.compiled.median_s'))}", _esc(rt.get("method", ""))),
        ("speedup", fmt.ratio(g("runtime.speedup"), g("runtime.speedup_ci")), "ratio of medians, paired bootstrap CI"),
        ("compile cold / warm", f"{fmt.seconds(g('compile.cold_s'))} / {fmt.seconds(g('compile.warm_s'))}", "first call; warm = fresh process, same cache dir"),
        ("break-even", f"{v['break_even_calls']:,} calls" if v.get("break_even_calls") else "n/a (not faster)", "(cold compile − eager call) / saving per call"),
        ("peak memory eager / compiled", f"{fmt.nbytes(g('memory.eager_peak_bytes'))} / {fmt.nbytes(g('memory.compiled_peak_bytes'))}", _esc(g("memory.method") or "")),
        ("numerics", fmt.NA if g("numerics.passed") is None else ("pass" if g("numerics.passed") else "**FAIL**") + f", max abs err {fmt.sci(g('numerics.max_abs_err'))}", "vs eager, judged against fp64"),
    ]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    findings = g("graph_breaks.unique") or []

    def item(f: dict) -> str:
        return (f"- **{_esc(f['reason'])}** at {_code(str(f['file']) + ':' + str(f['line']))} {_code(f.get('code'))}"
                + (f" ×{f['occurrences']}" if f["occurrences"] > 1 else "") + (" (frame skipped: runs eagerly)" if f.get("frame_skipped") else "")
                + _esc(fmt.break_site(f)))

    if findings:
        out += ["", f"### Graph breaks ({len(findings)} unique)", ""] + [item(f) for f in findings[:top]]
        if len(findings) > top:
            out += ["", "<details><summary>" + f"{len(findings) - top} more</summary>", ""] + [item(f) for f in findings[top:]] + ["", "</details>"]
    events = g("recompiles.events") or []
    if events:
        out += ["", "### Recompiles", ""] + [f"- {_code(e['function'])} on {_esc(e['variant'])}: {_code(e['reason'])}" for e in events]
    recs = v.get("recommendations") or {}
    if recs:
        out += ["", "### Compile strategies", ""] + [f"- **{_esc(k)}**: {_esc(r['text'])}" for k, r in recs.items()]
    if v.get("advice"):
        out += ["", "<details><summary>Advice</summary>", ""] + [f"- {_esc(a['text'])}" for a in v["advice"]] + ["", "</details>"]
    out += distributed.markdown_lines(report)  # rank table and the log to attach (render/distributed.py)
    for e in report["errors"]:
        out.append(f"\n> **Error in {_esc(e['phase'])}:** {_esc(e['message'])}")
    env = g("environment") or {}
    out += ["", f"<sub>tcdoctor {_esc(g('tool.version'))}, torch {_esc(env.get('torch'))}, {_esc(env.get('device'))}, backend {_esc(g('options.backend'))}, "
            f"{_esc(env.get('threads'))} thread(s); `tcdoctor analyze {_esc(report['target'])}`</sub>", ""]
    return "\n".join(out)
