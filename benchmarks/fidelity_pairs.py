"""Paired, interleaved comparison: tcdoctor's speedup vs a minimal script's, on the same target.

Alternates (minimal_timing.py in a fresh process) and (tcdoctor's analysis via the launcher, cold child only)
N times, order alternating per pair. Both use warm inductor caches by default, so each run takes seconds:
the minimal script uses --cache (TORCHINDUCTOR_CACHE_DIR) and tcdoctor a kept workdir whose inductor-cache
is reused (the first tcdoctor run fills it). Speedup is the within-process eager/compiled ratio of medians,
so load from other users cancels to first order; compiled medians are printed too.

Usage: python benchmarks/fidelity_pairs.py benchmarks/resnet18.py:build [--pairs 5] [--budget 5]
       [--env KEY=VAL ...] (env for the tcdoctor side only, e.g. to test a candidate)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

TCD = r"""
import json, sys
from tcdoctor.run.launcher import analyze_target
from tcdoctor.options import Options
import dataclasses
names = {f.name for f in dataclasses.fields(Options)}
kw = dict(warm=False, budget_s=float(sys.argv[2]), fixes=False, submodules=False, dynamic=False, modes=["default"])
opts = Options(**{k: v for k, v in kw.items() if k in names})
report, code = analyze_target(sys.argv[1], opts, keep_dir=sys.argv[3])
r = report.runtime
print(json.dumps({"eager_median_s": r.eager.median_s, "compiled_median_s": r.compiled.median_s,
                  "speedup": r.speedup, "samples": r.samples, "cold_s": report.compile.cold_s}))
"""


def run(cmd, env) -> dict:
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if p.returncode != 0:
        raise SystemExit(p.stdout[-3000:] + p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--budget", type=float, default=5.0)
    ap.add_argument("--cache", default="/tmp/bias/cache")
    ap.add_argument("--keep", default="/tmp/bias/tcd-keep")
    ap.add_argument("--env", action="append", default=[])
    a = ap.parse_args()
    os.makedirs(a.keep, exist_ok=True)
    base = dict(os.environ, PYTHONPATH=ROOT)
    menv = dict(base, TORCHINDUCTOR_CACHE_DIR=a.cache)
    tenv = dict(base, **dict(kv.split("=", 1) for kv in a.env))
    mcmd = [
        sys.executable,
        os.path.join(HERE, "minimal_timing.py"),
        a.target,
        "--budget",
        str(a.budget),
    ]
    tcmd = [sys.executable, "-c", TCD, a.target, str(a.budget), a.keep]
    rows = []
    for i in range(a.pairs):
        order = [("minimal", mcmd, menv), ("tcdoctor", tcmd, tenv)]
        if i % 2:
            order.reverse()
        row = {name: run(cmd, env) for name, cmd, env in order}
        rows.append(row)
        print(
            f"pair {i}: minimal {row['minimal']['speedup']:.3f}x (c {row['minimal']['compiled_median_s'] * 1e3:.2f} ms, "
            f"e {row['minimal']['eager_median_s'] * 1e3:.2f})  tcdoctor {row['tcdoctor']['speedup']:.3f}x "
            f"(c {row['tcdoctor']['compiled_median_s'] * 1e3:.2f} ms, e {row['tcdoctor']['eager_median_s'] * 1e3:.2f})",
            flush=True,
        )
    med = {k: statistics.median(r[k]["speedup"] for r in rows) for k in ("minimal", "tcdoctor")}
    ratio = statistics.median(r["tcdoctor"]["speedup"] / r["minimal"]["speedup"] for r in rows)
    print(json.dumps({"median_speedup": med, "median_paired_ratio_tcdoctor_over_minimal": ratio}))


if __name__ == "__main__":
    main()
