"""tcdoctor's own cost and fidelity on real models: `tcdoctor analyze` with its defaults vs the floor
any such analysis needs, done by hand.

The by-hand floor: (1) a fresh process imports torch, builds the target, compiles it cold (its own
empty inductor cache), makes the first call, then times eager and compiled interleaved: the same
number of paired samples, each of the same number of back-to-back calls, as analyze's main
runtime row took (read from its JSON, so by hand runs after analyze); (2) a second fresh process
compiles against the same cache (the warm-cache figure). Both at the thread count the user's
process gets (torch's default, or OMP_NUM_THREADS), as analyze's default is; `--threads N` passes N
to both. A TrainStep target is timed by hand as the step people write (zero_grad, forward, loss,
backward, optimizer.step) with the whole step compiled, which is tcdoctor's main training figure.

tcdoctor: `analyze` with its defaults (tried fixes, the ablation, strategy children included:
everything a user gets); `--flags "..."` adds flags. Prints per model and run: both walls, their
ratio, both speedups and their ratio, and where analyze's extra seconds went (its experiment
children); then the median ratios per model.

`--pkg DIR` times the `analyze` of another tcdoctor tree (e.g. `git archive 9a2b138 | tar -x -C DIR`,
an earlier version); the by-hand side is unchanged.

Usage: python benchmarks/real_overhead.py [--runs 3] [--threads N] [--flags "..."] [--pkg DIR] [TARGET ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = [
    "benchmarks/resnet18.py:build",  # a conv net: the glibc malloc fix is planned
    "tests/targets/real/lstm_lm.py:build",  # a tried config fix (allow_rnn) and the ablation
    "tests/targets/real/transformer_encoder.py:build",  # nothing to fix
]

BY_HAND = r"""
import json, os, statistics, sys, time
import torch
if sys.argv[5] != "default":
    torch.set_num_threads(int(sys.argv[5]))
sys.path.insert(0, sys.argv[4])
from tcdoctor.target.load import load
w = load(sys.argv[1])  # only to read what build() returned: model, args, kwargs (or a TrainStep)
pairs, role = json.loads(sys.argv[2]), sys.argv[3]
if getattr(w, "kind", "") == "train":  # a training step written by hand, the whole step compiled
    import contextlib
    def step():
        w.optimizer.zero_grad(set_to_none=True)
        w.loss_fn(w.model(*w.inputs, **w.kwargs), w.targets).backward()
        w.optimizer.step()
    model, held, f = step, contextlib.nullcontext, lambda m: m()
else:
    model, held, f = w.model, torch.no_grad, lambda m: m(*w.inputs, **w.kwargs)
with held():
    cm = torch.compile(model)
    t0 = time.perf_counter(); f(cm); first = time.perf_counter() - t0
    if role == "warm":
        print(json.dumps({"first_call_s": first})); sys.exit(0)
    for _ in range(3):
        f(cm); f(model)
    def batch(m, k):
        t = time.perf_counter()
        for _ in range(k):
            f(m)
        return (time.perf_counter() - t) / k
    n, k = pairs
    e, c = [], []
    while len(e) < n:
        order = [(e, model), (c, cm)] if len(e) % 2 == 0 else [(c, cm), (e, model)]
        for out, m in order:
            out.append(batch(m, k))
print(json.dumps({"first_call_s": first, "speedup": statistics.median(e) / statistics.median(c),
                  "threads": torch.get_num_threads()}))
"""


def timed(cmd: list[str], env: dict, cwd: str = ROOT) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=cwd)
    return time.perf_counter() - t0, p.stdout


def by_hand(target: str, pairs: list[int], threads: str, tmp: str) -> dict:
    env = dict(
        os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "hand-cache"), HF_HUB_OFFLINE="1"
    )
    cmd = [sys.executable, "-c", BY_HAND, target, json.dumps(pairs)]
    cold_wall, out = timed(cmd + ["cold", ROOT, threads], env)
    warm_wall, _ = timed(cmd + ["warm", ROOT, threads], env)
    return {"wall_s": cold_wall + warm_wall, **json.loads(out.strip().splitlines()[-1])}


def analyze(target: str, pkg: str | None, flags: list[str], tmp: str) -> dict:
    out = os.path.join(tmp, "r.json")
    path, _, fn = target.partition(":")
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    if pkg:
        env["PYTHONPATH"] = pkg + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, "-m", "tcdoctor", "analyze", f"{os.path.join(ROOT, path)}:{fn}"]
    cmd += [*flags, "--quiet", "--json", out, "--html", ""]
    wall, _ = timed(cmd, env, cwd=pkg or ROOT)
    rep = json.load(open(out))
    rt = rep["runtime"]
    children = {
        name.split(":", 1)[1]: round(st.get("seconds") or 0.0, 1)
        for name, st in rep["phases"].items()
        if name.startswith("strategy:")
    }
    return {
        "wall_s": wall,
        "speedup": rt["speedup"],
        "pairs": [rt["samples"], rt.get("calls_per_sample", 1)],
        "threads": rep["environment"].get("threads"),
        "decision": rep["verdict"]["decision"],
        "children": children,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("targets", nargs="*", default=DEFAULT)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", default=None, help="passed to both sides (default: torch's)")
    ap.add_argument("--flags", default="", help="more analyze flags, one string")
    ap.add_argument("--pkg", default=None)
    args = ap.parse_args()
    pkg = os.path.abspath(args.pkg) if args.pkg else None
    flags = shlex.split(args.flags) + (["--threads", args.threads] if args.threads else [])
    print(
        "| model | run | threads | analyze wall | by-hand floor | wall ratio | tcdoctor speedup "
        "| by-hand speedup | speedup ratio | decision | experiment children (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ratios: dict[str, list[tuple[float, float]]] = {}
    for run in range(args.runs):
        for target in args.targets:
            with tempfile.TemporaryDirectory() as tmp:
                t = analyze(target, pkg, flags, tmp)
                h = by_hand(target, t["pairs"], args.threads or "default", tmp)
            path, _, fn = target.partition(":")
            name = os.path.basename(path) + (f":{fn}" if fn not in ("", "build") else "")
            wall, speed = t["wall_s"] / h["wall_s"], t["speedup"] / h["speedup"]
            ratios.setdefault(name, []).append((wall, speed))
            kids = ", ".join(f"{k} {v}" for k, v in t["children"].items()) or "none"
            print(
                f"| {name} | {run + 1} | {t['threads']} / {h['threads']} | {t['wall_s']:.1f} s "
                f"| {h['wall_s']:.1f} s | {wall:.2f} | {t['speedup']:.3f}× | {h['speedup']:.3f}× "
                f"| {speed:.3f} | {t['decision']} | {kids} |",
                flush=True,
            )
    print()
    for name, rs in ratios.items():
        print(
            f"{name}: median wall ratio {statistics.median(r[0] for r in rs):.2f} "
            f"(max {max(r[0] for r in rs):.2f}); median speedup ratio "
            f"{statistics.median(r[1] for r in rs):.3f} over {len(rs)} run(s)"
        )


if __name__ == "__main__":
    main()
