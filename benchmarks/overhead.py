"""Cost of tcdoctor itself: `tcdoctor analyze` vs a minimal script doing the work any analysis must do.

(a) minimal: a fresh process imports torch, builds the sample, compiles it cold, makes the first call,
    then runs the same number of eager and compiled calls that tcdoctor's timing phase made.
(b) tcdoctor analyze on the same sample with the same budget (its own fresh cold cache).
Prints both wall times and the ratio b/a. Usage: python benchmarks/overhead.py [samples/mlp.py:build] [--budget 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

MINIMAL = r"""
import os, sys, time, importlib.util
import torch
torch.set_num_threads(1)
spec = importlib.util.spec_from_file_location("t", sys.argv[1]); mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
model, inputs = getattr(mod, sys.argv[2])()
inputs = inputs if isinstance(inputs, tuple) else (inputs,)
calls = int(sys.argv[3])
with torch.no_grad():
    cm = torch.compile(model)
    cm(*inputs)
    for _ in range(calls):
        model(*inputs)
        cm(*inputs)
"""


def run(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("target", nargs="?", default="samples/mlp.py:build")
    ap.add_argument("--budget", type=float, default=5.0)
    args = ap.parse_args()
    path, func = args.target.rsplit(":", 1)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        env_b = dict(os.environ)
        b = run(
            [
                sys.executable,
                "-m",
                "tcdoctor",
                "analyze",
                args.target,
                "--budget",
                str(args.budget),
                "--json",
                out,
                "--html",
                "",
            ],
            env_b,
        )
        rep = json.load(open(out))
        rt = rep["runtime"]
        calls = rt["samples"] * rt["calls_per_sample"] + rt["warmup_calls"]
        env_a = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "minimal-cache"))
        a = run([sys.executable, "-c", MINIMAL, path, func, str(calls)], env_a)
    print(f"target {args.target}, budget {args.budget}s, {calls} eager+compiled call pairs in both")
    print(f"(a) minimal cold compile + same timed calls: {a:.1f} s")
    print(
        f"(b) tcdoctor analyze:                        {b:.1f} s  (cold {rep['compile']['cold_s']:.1f} s, warm {rep['compile']['warm_s']:.1f} s)"
    )
    print(f"ratio b/a = {b / a:.2f}")


if __name__ == "__main__":
    main()
