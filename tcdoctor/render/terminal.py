"""Short terminal summary: verdict, key figures, the top findings."""

from __future__ import annotations

from tabulate import tabulate

from .. import units
from ..report import Report
from . import distributed


def _pair(show, a, b) -> str:
    return f"{show(a)} / {show(b)}"


def render(report: Report, limit: int = 5) -> str:
    g = report.get
    v = report.data.get("verdict") or {}
    lines = [
        f"tcdoctor: {report['target']}  (torch {g('environment.torch', '?')}, {g('environment.device', '?')}, "
        f"backend {g('options.backend')}, {g('environment.threads', '?')} thread(s))",
        "",
    ]
    if v:
        lines.append(f"VERDICT: {units.decision_text(v.get('decision'))}")
        lines += [f"  - {r}" for r in v.get("reasons", [])]
        lines.append("")
    skipped, passed = g("graph_breaks.skipped_frames"), g("numerics.passed")
    samples, frac = g("runtime.samples"), g("guards.overhead_fraction")
    rows = [
        [
            "graphs / graph breaks",
            _pair(units.count, g("graphs.count"), g("graph_breaks.count"))
            + (f" ({skipped} skipped frame(s))" if skipped else ""),
        ],
        [
            "recompiles",
            units.count(g("recompiles.count"))
            + ("  RECOMPILE LIMIT HIT: running eagerly" if g("recompiles.limit_hit") else ""),
        ],
        ["guards (first call)", units.count(g("guards.count"))],
        [
            "guard overhead / call",
            units.seconds(g("guards.overhead_s_per_call"))
            + (f" ({units.percent(frac)} of a compiled call)" if frac is not None else ""),
        ],
        ["eager median / call", units.seconds(g("runtime.eager.median_s"))],
        ["compiled median / call", units.seconds(g("runtime.compiled.median_s"))],
        [
            "speedup",
            units.ratio(g("runtime.speedup"), g("runtime.speedup_ci"))
            + (f", {samples} paired samples" if samples else ""),
        ],
        ["compile: cold / warm", _pair(units.seconds, g("compile.cold_s"), g("compile.warm_s"))],
        [
            "break-even (cold)",
            units.calls(v["break_even_calls"])
            if v.get("break_even_calls")
            else "never (compiled not faster)"
            if v
            else units.NA,
        ],
        [
            "peak memory eager / compiled",
            _pair(units.nbytes, g("memory.eager_peak_bytes"), g("memory.compiled_peak_bytes")),
        ],
        [
            "numerics",
            units.numerics_status(passed)
            + ("" if passed is None else f" (max abs err {units.sci(g('numerics.max_abs_err'))})"),
        ],
    ]
    lines.append(tabulate(rows, tablefmt="simple"))
    findings = g("graph_breaks.unique") or []
    if findings:
        lines += ["", "Graph breaks:"]
        for i, f in enumerate(findings[:limit]):
            cost = units.break_cost(f, first=i == 0)
            lines.append(
                f"  {f['file']}:{f['line']} {f['reason']}"
                + (f" ×{f['occurrences']}" if f["occurrences"] > 1 else "")
                + (" [frame skipped: runs eagerly]" if f.get("frame_skipped") else "")
                + units.break_site(f)
                + (f"  [{cost}]" if cost else "")
            )
        if len(findings) > limit:
            lines.append(f"  … and {len(findings) - limit} more")
    lines += tried_lines(report)
    events = g("recompiles.events") or []
    if events:
        lines += ["", "Recompiles:"]
        for e in events[:limit]:
            lines.append(f"  {e['function']} on {e['variant']}: {e['reason']}")
    lines += strategy_lines(report)
    lines += distributed.terminal_lines(
        report
    )  # rank table and structured-trace pointer (render/distributed.py)
    for e in report["errors"]:
        lines.append(f"ERROR in phase {e['phase']}: {e['message']}")
    return "\n".join(lines)


def strategy_lines(report: Report) -> list[str]:
    st = report.data.get("strategies") or {}
    recs = (report.data.get("verdict") or {}).get("recommendations") or {}
    out: list[str] = []

    def table(title: str, rows: list[dict], rec_key: str) -> None:
        if not rows:
            return
        out.extend(["", f"{title}:"])
        out.append(
            tabulate(
                [
                    [
                        r["name"],
                        "—" if r.get("baseline") else units.seconds(r.get("first_call_s")),
                        units.seconds(r.get("median_s")),
                        units.ratio(r.get("speedup"), r.get("speedup_ci")),
                        units.nbytes(r.get("peak_bytes")),
                        r.get("note")
                        or ("" if r.get("numerics_passed") is not False else "numerics FAIL"),
                    ]
                    for r in rows
                ],
                headers=["", "first call", "median", "vs eager", "peak mem", ""],
                tablefmt="simple",
            )
        )
        if rec_key in recs:
            out.append(f"  -> {recs[rec_key]['text']}")

    table("Modes", st.get("modes") or [], "mode")
    table("Training step", st.get("training") or [], "training")
    dyn = st.get("dynamic") or []
    if dyn:
        out.extend(["", "Dynamic shapes:"])
        out.append(
            tabulate(
                [
                    [
                        r["name"],
                        r["compiles"],
                        units.seconds(r["compile_s"]),
                        "yes" if r.get("limit_hit") else "",
                        ", ".join(units.seconds(x["median_s"]) for x in r["shapes"]),
                    ]
                    for r in dyn
                ],
                headers=["", "compiles", "compile time", "limit hit", "compiled median per shape"],
                tablefmt="simple",
            )
        )
        if "dynamic" in recs:
            out.append(f"  -> {recs['dynamic']['text']}")
    reg = st.get("regions")
    if reg:
        out.extend(
            [
                "",
                f"Regions (depth {reg['depth']}{', tried because the model breaks a lot' if reg.get('automatic') else ''}):",
            ]
        )
        out.append(
            tabulate(
                [
                    [
                        r["name"],
                        r["module"],
                        {True: "yes", False: "NO", None: "-"}[r.get("fullgraph")],
                        units.seconds(r.get("eager_median_s")),
                        units.seconds(r.get("median_s")),
                        units.ratio(r.get("speedup"), r.get("speedup_ci")),
                    ]
                    for r in reg["regions"]
                ],
                headers=["region", "module", "fullgraph", "eager", "compiled", "speedup"],
                tablefmt="simple",
            )
        )
        if "regions" in recs:
            out.append(f"  -> {recs['regions']['text']}")
    for f in st.get("failed") or []:
        out.append(f"strategy {f['strategy']} failed: {f['message']}")
    return out


def tried_lines(report: Report) -> list[str]:
    """Fixes tried in fresh processes (before → after), and which layer a loss comes from."""
    out: list[str] = []
    fixes = report.data.get("fixes") or []
    if fixes:
        out += ["", "Tried (no source edit):"]
        for row in fixes:
            summary = units.fix_summary(row)
            out.append(
                f"  {row['fix']}: {row.get('outcome')}" + (f" ({summary})" if summary else "")
            )
    layer = (report.data.get("ablation") or {}).get("layer")
    if layer:
        out += ["", f"Which layer: {layer}"]
    return out
