"""Issue 27's fidelity table: for each target, two `tcdoctor analyze` runs beside three independent
fresh-process scripts timed with `blocked_autorange` (by_hand_speedup.py), interleaved (script,
analysis, script, analysis, script) so the machine's drift hits both sides alike.

Prints, per target: each analysis's speedup with its interval and each process's own figure, the
three scripts' speedups, whether each interval (widened by 5%) holds all three, and what the extra
timing processes cost (the warm process's timing phase plus the timing-only processes up to
--processes, 3 by default).

Usage: python benchmarks/fidelity_processes.py TARGET... [--threads N] [--backend inductor]
       [--json out.json]   (analyses run with --no-fixes --no-compile-remedies, otherwise defaults;
       the scripts share one TORCHINDUCTOR_CACHE_DIR, so only the first compiles cold)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def analysis(target: str, threads: int | None, backend: str, out: str) -> dict:
    cmd = [sys.executable, "-m", "tcdoctor.cli", "analyze", target, "--backend", backend]
    cmd += ["--no-fixes", "--no-compile-remedies", "-q", "--json", out, "--html", ""]
    cmd += ["--threads", str(threads)] if threads else []
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=False, capture_output=True)
    wall = time.perf_counter() - t0
    rep = json.load(open(out))
    rt, phases = rep["runtime"], rep["phases"]
    extra_s = sum(
        (phases.get(p) or {}).get("seconds") or 0.0 for p in ("runtime_warm", "runtime_extra")
    )
    return {
        "verdict": (rep.get("verdict") or {}).get("decision"),
        "speedup": rt.get("speedup"),
        "ci": rt.get("speedup_ci"),
        "processes": [(p["process"], p["speedup"]) for p in rt.get("processes") or []],
        "regimes": rt.get("regimes"),
        "wall_s": wall,
        "extra_timing_s": extra_s,
    }


def by_hand(target: str, threads: int | None, backend: str, cache: str) -> float:
    cmd = [sys.executable, os.path.join(HERE, "by_hand_speedup.py"), target, "--backend", backend]
    cmd += ["--threads", str(threads)] if threads else []
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache)
    p = subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return json.loads(p.stdout.strip().splitlines()[-1])["speedup"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("targets", nargs="+")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    rows = []
    for target in a.targets:
        tmp = tempfile.mkdtemp(prefix="fidelity-")
        cache = os.path.join(tmp, "cache")
        scripts, analyses = [], []
        for i in range(3):
            scripts.append(by_hand(target, a.threads, a.backend, cache))
            if i < 2:
                analyses.append(
                    analysis(target, a.threads, a.backend, os.path.join(tmp, f"{i}.json"))
                )
        for an in analyses:
            lo, hi = an["ci"]
            an["holds_all_three"] = all(lo / 1.05 <= s <= hi * 1.05 for s in scripts)
        row = {"target": target, "threads": a.threads, "scripts": scripts, "analyses": analyses}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
