"""The rank table (and the structured-trace pointer) in every output: terminal, Markdown, HTML.

Each renderer calls one function here with the typed Report and adds what it returns; nothing is
shown for a report without a `distributed` or `torch_trace` section. Both sections are free-form
dicts on the Report (`report.distributed`, `report.torch_trace`), so the row helpers read dicts.
"""

from __future__ import annotations

import html as _html
import os
from typing import TYPE_CHECKING

from .. import units
from ..units import relative_link

if TYPE_CHECKING:
    from ..report.model import Report

HEADERS = [
    "rank",
    "host",
    "graphs",
    "breaks",
    "recompiles",
    "guards",
    "first call (cold)",
    "first call (warm)",
    "step median (95% CI)",
    "peak mem",
    "",
]


def _ci(r: dict) -> str:
    ci = r.get("step_ci_s")
    med = units.seconds(r.get("step_median_s"))
    return med + (f" ({units.seconds(ci[0])}–{units.seconds(ci[1])})" if ci else "")


def _status(r: dict, sec: dict) -> str:
    marks = []
    if r.get("finished") is False:
        marks.append("DID NOT FINISH")
    slow = [
        p
        for p, s in (sec.get("slowest") or {}).items()
        if s.get("rank") == r.get("rank") and p in ("compile", "compile_warm", "runtime")
    ]
    if slow:
        marks.append("slowest: " + ", ".join(slow))
    return "; ".join(marks)


def rows(sec: dict) -> list[list[str]]:
    return [
        [
            str(r.get("rank")),
            str(r.get("host") or ""),
            units.count(r.get("graphs")),
            units.count(r.get("graph_breaks")),
            units.count(r.get("recompiles")),
            units.count(r.get("guards")),
            units.seconds(r.get("first_call_s")),
            units.seconds(r.get("warm_first_call_s")),
            _ci(r),
            units.nbytes(r.get("peak_bytes")),
            _status(r, sec),
        ]
        for r in sec.get("ranks") or []
    ]


def _skew(sec: dict, key: str) -> str:
    val, frac = sec.get(key + "_s"), sec.get(key + "_fraction")
    return units.seconds(val) + (
        f" ({frac:.1%} of the {units.seconds(sec.get('timeout_s'))} timeout)"
        if frac is not None
        else ""
    )


def summary_lines(sec: dict) -> list[str]:
    ddp = sec.get("ddp") or {}
    out = [
        f"world size {sec.get('world_size')}, backend {sec.get('backend')}, process-group timeout "
        f"{units.seconds(sec.get('timeout_s'))} ({sec.get('timeout_source') or 'as given'})",
        f"compile skew, cold/cold: {_skew(sec, 'compile_skew')}",
        f"compile skew, cold/warm (mixed cache): {_skew(sec, 'mixed_cache_skew')}",
    ]
    if ddp.get("wrapper"):
        out.append(
            f"{ddp['wrapper']}: optimize_ddp={ddp.get('optimize_ddp')} ({ddp.get('mode')}), bucket_cap_mb="
            f"{ddp.get('bucket_cap_mb')}, DDPOptimizer subgraphs at the first call: {ddp.get('subgraphs')}"
        )
    for d in sec.get("divergences") or []:
        out.append(f"DIVERGENCE: {d['text']} — hang risk: {d['risk']}")
    if sec.get("missing_ranks"):
        out.append(
            f"ranks not in this report: {sec['missing_ranks']} (other nodes: join their reports with tcdoctor merge)"
        )
    return out


def trace_lines(report: Report) -> list[str]:
    tt = report.torch_trace
    if not tt:
        return []
    tl = tt.get("tlparse") or {}
    if tl.get("index"):
        return [f"Structured compile logs: {tt['dir']}; tlparse report: {tl['index']}"]
    return [f"Structured compile logs: {tt['dir']}; render them with: {tt['command']}"]


def terminal_lines(report: Report) -> list[str]:
    sec = report.distributed
    out: list[str] = []
    if sec:
        from tabulate import tabulate

        out += ["", "Ranks:", tabulate(rows(sec), headers=HEADERS, tablefmt="simple")]
        out += ["  " + line for line in summary_lines(sec)]
    trace = trace_lines(report)
    return out + ([""] + trace if trace else [])


def _md(text: object) -> str:
    s = str(text if text is not None else "")
    for ch in ("\\", "`", "*", "_", "[", "]", "<", ">", "|", "#"):
        s = s.replace(ch, "\\" + ch)
    return s.replace("\n", " ")


def markdown_lines(report: Report) -> list[str]:
    sec = report.distributed
    out: list[str] = []
    if sec:
        out += [
            "",
            f"### Ranks ({len(sec.get('ranks') or [])} of {sec.get('world_size')})",
            "",
            "| " + " | ".join(HEADERS[:-1]) + " | |",
            "|" + "---|" * len(HEADERS),
        ]
        out += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows(sec)]
        out += [""] + [f"- {_md(line)}" for line in summary_lines(sec)]
    tt = report.torch_trace
    if tt:
        attach = tt.get("attach")
        out += [
            "",
            f"Structured compile log (TORCH_TRACE) to attach to a PyTorch issue: `{attach}`"
            + (
                f" (and the other ranks' logs in `{os.path.dirname(attach)}`)"
                if len(tt.get("logs") or []) > 1
                else ""
            )
            if attach
            else "No structured compile log was written.",
        ]
        if not (tt.get("tlparse") or {}).get("index"):
            out.append(f"Render it with `{tt['command']}`")
    return out


def html_block(report: Report, base_dir: str | None = None) -> str:
    """The rank table and the tlparse link as an HTML fragment (escaped here; the template inserts it as is)."""
    parts: list[str] = []
    if report.distributed:
        parts += _ranks_html(report.distributed)
    if report.torch_trace:
        parts += _trace_html(report.torch_trace, base_dir)
    return "\n".join(parts)


def _ranks_html(sec: dict) -> list[str]:
    e = _html.escape
    parts = [
        f"<details open><summary>Ranks ({len(sec.get('ranks') or [])} of {e(str(sec.get('world_size')))})</summary>",
        "<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in HEADERS) + "</tr>",
    ]
    for row in rows(sec):
        parts.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>")
    parts.append(
        "</table><ul>" + "".join(f"<li>{e(line)}</li>" for line in summary_lines(sec)) + "</ul>"
    )
    slow = sec.get("slowest") or {}
    if slow:
        parts.append(
            "<table><tr><th>phase</th><th>slowest rank</th><th>its time</th><th>fastest rank's time</th></tr>"
        )
        parts += [
            f"<tr><td>{e(p)}</td><td>{e(str(s.get('rank')))}</td><td>{e(units.seconds(s.get('seconds')))}</td>"
            f"<td>{e(units.seconds(s.get('fastest_s')))}</td></tr>"
            for p, s in slow.items()
        ]
        parts.append("</table>")
    how = sec.get("method") or {}
    parts.append(
        '<p class="how">' + " ".join(e(f"{k}: {v}.") for k, v in how.items()) + "</p></details>"
    )
    return parts


def _trace_html(tt: dict, base_dir: str | None) -> list[str]:
    e = _html.escape
    tl = tt.get("tlparse") or {}
    link = relative_link(tl.get("index"), base_dir)
    parts = ["<details open><summary>Structured compile logs (tlparse)</summary><p>"]
    if link:
        parts.append(f'<a href="{e(link)}">tlparse report</a> (a local file: {e(tl["index"])})')
    else:
        parts.append(
            f"Render with <code>{e(tt.get('command') or '')}</code>"
            + (
                f" (tlparse failed: {e(str(tl.get('error')))})"
                if tl.get("error")
                else " (pip install 'tcdoctor[tlparse]')"
            )
        )
    if tt.get("attach"):
        parts.append(f"<br>Attach to a PyTorch issue: <code>{e(tt['attach'])}</code>")
    parts.append(f'</p><p class="how">{e(tt.get("note") or "")}</p></details>')
    return parts
