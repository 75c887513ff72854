"""Short terminal summary: verdict, key figures, the top findings."""
from __future__ import annotations

from tabulate import tabulate

from ..report import Report
from . import distributed, fmt


def render(report: Report, limit: int = 5) -> str:
    g = report.get
    v = report.data.get("verdict") or {}
    lines = [f"tcdoctor: {report['target']}  (torch {g('environment.torch', '?')}, {g('environment.device', '?')}, "
             f"backend {g('options.backend')}, {g('environment.threads', '?')} thread(s))", ""]
    if v:
        lines.append(f"VERDICT: {fmt.DECISION_TEXT.get(v['decision'], v['decision'])}")
        lines += [f"  - {r}" for r in v.get("reasons", [])]
        lines.append("")
    rows = [
        ["graphs / graph breaks", f"{fmt.count(g('graphs.count'))} / {fmt.count(g('graph_breaks.count'))}"
         + (f" ({g('graph_breaks.skipped_frames')} skipped frame(s))" if g("graph_breaks.skipped_frames") else "")],
        ["recompiles", fmt.count(g("recompiles.count")) + ("  RECOMPILE LIMIT HIT: running eagerly" if g("recompiles.limit_hit") else "")],
        ["guards (first call)", fmt.count(g("guards.count"))],
        ["guard overhead / call", fmt.seconds(g("guards.overhead_s_per_call"))
         + (f" ({g('guards.overhead_fraction'):.0%} of a compiled call)" if g("guards.overhead_fraction") is not None else "")],
        ["eager median / call", fmt.seconds(g("runtime.eager.median_s"))],
        ["compiled median / call", fmt.seconds(g("runtime.compiled.median_s"))],
        ["speedup", fmt.ratio(g("runtime.speedup"), g("runtime.speedup_ci")) + (f", {g('runtime.samples')} paired samples" if g("runtime.samples") else "")],
        ["compile: cold / warm", f"{fmt.seconds(g('compile.cold_s'))} / {fmt.seconds(g('compile.warm_s'))}"],
        ["break-even (cold)", f"{v['break_even_calls']:,} calls" if v.get("break_even_calls") else "never (compiled not faster)" if v else fmt.NA],
        ["peak memory eager / compiled", f"{fmt.nbytes(g('memory.eager_peak_bytes'))} / {fmt.nbytes(g('memory.compiled_peak_bytes'))}"],
        ["numerics", fmt.NA if g("numerics.passed") is None else ("pass" if g("numerics.passed") else "FAIL") + f" (max abs err {fmt.sci(g('numerics.max_abs_err'))})"],
    ]
    lines.append(tabulate(rows, tablefmt="simple"))
    findings = g("graph_breaks.unique") or []
    if findings:
        lines += ["", "Graph breaks:"]
        for f in findings[:limit]:
            lines.append(f"  {f['file']}:{f['line']} {f['reason']}" + (f" ×{f['occurrences']}" if f["occurrences"] > 1 else "")
                         + (" [frame skipped: runs eagerly]" if f.get("frame_skipped") else "") + fmt.break_site(f))
        if len(findings) > limit:
            lines.append(f"  … and {len(findings) - limit} more")
    events = g("recompiles.events") or []
    if events:
        lines += ["", "Recompiles:"]
        for e in events[:limit]:
            lines.append(f"  {e['function']} on {e['variant']}: {e['reason']}")
    lines += strategy_lines(report)
    lines += distributed.terminal_lines(report)  # rank table and structured-trace pointer (render/distributed.py)
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
        out.append(tabulate([[r["name"], "—" if r.get("baseline") else fmt.seconds(r.get("first_call_s")), fmt.seconds(r.get("median_s")),
                              fmt.ratio(r.get("speedup"), r.get("speedup_ci")), fmt.nbytes(r.get("peak_bytes")),
                              r.get("note") or ("" if r.get("numerics_passed") is not False else "numerics FAIL")] for r in rows],
                             headers=["", "first call", "median", "vs eager", "peak mem", ""], tablefmt="simple"))
        if rec_key in recs:
            out.append(f"  -> {recs[rec_key]['text']}")

    table("Modes", st.get("modes") or [], "mode")
    table("Training step", st.get("training") or [], "training")
    dyn = st.get("dynamic") or []
    if dyn:
        out.extend(["", "Dynamic shapes:"])
        out.append(tabulate([[r["name"], r["compiles"], fmt.seconds(r["compile_s"]), "yes" if r.get("limit_hit") else "",
                              ", ".join(fmt.seconds(x["median_s"]) for x in r["shapes"])] for r in dyn],
                            headers=["", "compiles", "compile time", "limit hit", "compiled median per shape"], tablefmt="simple"))
        if "dynamic" in recs:
            out.append(f"  -> {recs['dynamic']['text']}")
    reg = st.get("regions")
    if reg:
        out.extend(["", f"Regions (depth {reg['depth']}{', tried because the model breaks a lot' if reg.get('automatic') else ''}):"])
        out.append(tabulate([[r["name"], r["module"], {True: "yes", False: "NO", None: "-"}[r.get("fullgraph")],
                              fmt.seconds(r.get("eager_median_s")), fmt.seconds(r.get("median_s")), fmt.ratio(r.get("speedup"), r.get("speedup_ci"))]
                             for r in reg["regions"]], headers=["region", "module", "fullgraph", "eager", "compiled", "speedup"], tablefmt="simple"))
        if "regions" in recs:
            out.append(f"  -> {recs['regions']['text']}")
    for f in st.get("failed") or []:
        out.append(f"strategy {f['strategy']} failed: {f['message']}")
    return out
