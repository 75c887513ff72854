"""PyTorch's structured compile logs (TORCH_TRACE) and tlparse, PyTorch's renderer for them.

With `--torch-trace DIR` (on by default for distributed runs, into ./tcdoctor-torch-trace, unless
`--no-torch-trace`) the analysis processes run with TORCH_TRACE set to a folder per process
(DIR/cold, DIR/warm, ...); PyTorch writes one `dedicated_log_torch_trace_[rank_R_]*.log` per process,
the rank in the name once the process group is up. After the run, when the `tlparse` executable
is installed (`pip install 'tcdoctor[tlparse]'`, a binary wheel with no dependencies), it renders
the cold logs (all ranks with `--all-ranks-html`) into DIR/tlparse, linked from the HTML report;
otherwise the report and stderr carry the one command that would. Torch-free.

The structured trace costs compile time of its own (it writes every graph and guard), so compile
figures of a traced run include it; the report says when the trace was on.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from typing import TYPE_CHECKING, Any

import click

from ..report.sections import TorchTrace

if TYPE_CHECKING:
    from ..report.model import Report

TIMEOUT_S = 300


def prepare(trace_dir: str | None) -> None:
    """Remove the structured logs an earlier run left in the per-process folders (only PyTorch's trace files)."""
    if not trace_dir:
        return
    for old in glob.glob(os.path.join(trace_dir, "*", "dedicated_log_torch_trace_*.log")):
        try:
            os.remove(old)
        except OSError:
            pass


def logs(trace_dir: str, process: str = "cold") -> list[str]:
    return sorted(glob.glob(os.path.join(trace_dir, process, "dedicated_log_torch_trace_*.log")))


def command(trace_dir: str, found: list[str]) -> list[str]:
    out = os.path.join(trace_dir, "tlparse")
    if len(found) > 1:
        return [
            "tlparse",
            os.path.join(trace_dir, "cold"),
            "-o",
            out,
            "--overwrite",
            "--no-browser",
            "--all-ranks-html",
        ]
    return [
        "tlparse",
        found[0] if found else os.path.join(trace_dir, "cold"),
        "-o",
        out,
        "--overwrite",
        "--no-browser",
    ]


def attach(report: Report, opts: Any, echo: bool = True) -> dict | None:
    """Run tlparse on the cold logs if it is installed; record logs, output and command in report.torch_trace."""
    trace_dir = getattr(opts, "torch_trace", None)
    if not trace_dir:
        return None
    found = logs(trace_dir)
    cmd = command(trace_dir, found)
    info: dict = {
        "dir": trace_dir,
        "logs": found,
        "attach": found[0] if found else None,
        "command": " ".join(cmd),
        "tlparse": None,
        "note": "compile figures of this run include the structured trace's own logging cost",
    }
    exe = shutil.which("tlparse")
    if found and exe:
        try:
            p = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=TIMEOUT_S)
            index = os.path.join(trace_dir, "tlparse", "index.html")
            info["tlparse"] = {
                "ran": p.returncode == 0,
                "exit_code": p.returncode,
                "output_dir": os.path.dirname(index),
                "index": index if os.path.exists(index) else None,
                "error": (p.stderr or p.stdout).strip()[-500:] if p.returncode else None,
            }
        except (OSError, subprocess.TimeoutExpired) as exc:
            info["tlparse"] = {"ran": False, "error": str(exc)}
    report.torch_trace = TorchTrace.from_dict(info)
    if echo:
        if not found:
            click.echo(
                f"tcdoctor: no structured compile log was written under {trace_dir}", err=True
            )
        elif info["tlparse"] and info["tlparse"].get("index"):
            click.echo(f"tcdoctor: tlparse report: {info['tlparse']['index']}", err=True)
        else:
            why = (
                "tlparse failed: " + str(info["tlparse"].get("error"))
                if info["tlparse"]
                else "tlparse is not installed (pip install 'tcdoctor[tlparse]')"
            )
            click.echo(
                f"tcdoctor: structured compile logs in {trace_dir}; {why}; render them with: {info['command']}",
                err=True,
            )
    return info
