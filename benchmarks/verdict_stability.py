"""Issue 34's table: is the verdict the same three times, and on the side fresh scripts see?

For each target: three default `tcdoctor analyze` runs (--no-fixes --no-compile-remedies, otherwise
defaults: inductor, --processes 6 as the cap) beside three fresh-process `blocked_autorange` scripts
(by_hand_speedup.py), interleaved (script, analysis, script, analysis, script, analysis) so the
machine's drift hits both sides alike. Then, on each saved report, `tcdoctor check --report R
--min-speedup X` at X = 0.8× and 1.25× of the scripts' median (the gate's exit code).

Prints one JSON line per target: the scripts, and per analysis the verdict, speedup, decision
interval, prediction interval, each process's figure, how many processes ran and why they stopped,
the wall time, and the two check exit codes.

Usage: python benchmarks/verdict_stability.py TARGET... [--threads N] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from fidelity_processes import ROOT, analysis, by_hand


def check_code(report: str, x: float) -> int:
    cmd = [sys.executable, "-m", "tcdoctor.cli", "check", "--report", report]
    cmd += ["--min-speedup", f"{x:.4f}", "--no-annotations"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, env=env).returncode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("targets", nargs="+")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    rows = []
    for target in a.targets:
        tmp = tempfile.mkdtemp(prefix="stability-")
        cache = os.path.join(tmp, "cache")
        scripts, runs = [], []
        for i in range(3):
            scripts.append(by_hand(target, a.threads, a.backend, cache))
            out = os.path.join(tmp, f"{i}.json")
            an = analysis(target, a.threads, a.backend, out)
            rep = json.load(open(out))
            rt = rep["runtime"]
            an.update(
                verdict=(rep.get("verdict") or {}).get("decision"),
                reason=((rep.get("verdict") or {}).get("reasons") or [""])[0],
                prediction=rt.get("prediction_interval"),
                sequence=rt.get("sequence"),
                excluded=[p["process"] for p in rt.get("processes") or [] if p.get("excluded")],
                report=out,
            )
            runs.append(an)
        median = statistics.median(scripts)
        for an in runs:
            an["check_at_0.8x"] = check_code(an["report"], 0.8 * median)
            an["check_at_1.25x"] = check_code(an["report"], 1.25 * median)
            lo, hi = an["ci"]
            an["ci_ratio"] = hi / lo
        row = {"target": target, "threads": a.threads, "scripts": scripts, "analyses": runs}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
