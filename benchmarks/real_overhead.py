"""tcdoctor's own cost and fidelity on real models: `tcdoctor analyze` vs the same work done by hand.

By hand (the floor any analysis needs): (1) a fresh process imports torch, builds the target, compiles it
cold (its own empty inductor cache), makes the first call, then times eager and compiled calls interleaved
within the same budget (batches of ~2 ms, order alternating, medians); (2) a second fresh process compiles
against the same cache (the warm-cache figure). tcdoctor: `analyze --no-fixes --no-training-ways` with the
same budget (tried fixes and the training-way comparisons are extra children that no by-hand floor
includes). A TrainStep target (BERT) is timed by hand as the step people write (zero_grad, forward, loss,
backward, optimizer.step) with the whole step compiled, which is tcdoctor's main training figure. Prints per model: both
walls and their ratio, both speedups and their ratio. Runs alternate which side goes first.

`--noise-floor` also runs the by-hand script a second time and prints by-hand ÷ by-hand: the spread two
identical minimal measurements show on this machine, against which tcdoctor's ratio is read.

`--pkg DIR` times the `analyze` of another tcdoctor tree (e.g. `git archive 3671b7d | tar -x -C DIR`, an
earlier version), passing only the flags that version has; the by-hand side is unchanged.

Usage: python benchmarks/real_overhead.py [--runs 3] [--budget 5] [--noise-floor] [--pkg DIR] [TARGET ...]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = [
    "tests/targets/real/gpt2_lm.py:build",
    "tests/targets/real/transformer_encoder.py:build",
    "tests/targets/real/lstm_lm.py:build",
    "samples/mlp.py:build",
    "tests/targets/real/bert_train.py:build",
]

BY_HAND = r"""
import json, math, os, statistics, sys, time
import torch
torch.set_num_threads(1)
sys.path.insert(0, sys.argv[4])
from tcdoctor.target.load import load
w = load(sys.argv[1])  # only to read what build() returned: model, args, kwargs (or a TrainStep)
budget, role = float(sys.argv[2]), sys.argv[3]
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
    k = max(1, math.ceil(0.002 / max(min(batch(model, 1), batch(cm, 1)), 1e-7)))
    e, c, end = [], [], time.perf_counter() + budget
    while len(e) < 10 or time.perf_counter() < end:
        pair = [(e, model), (c, cm)] if len(e) % 2 == 0 else [(c, cm), (e, model)]
        for out, m in pair:
            out.append(batch(m, k))
print(json.dumps({"first_call_s": first, "speedup": statistics.median(e) / statistics.median(c),
                  "eager_median_s": statistics.median(e), "compiled_median_s": statistics.median(c)}))
"""


def timed(cmd: list[str], env: dict, cwd: str = ROOT) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=cwd)
    return time.perf_counter() - t0, p.stdout


def by_hand(target: str, budget: float, tmp: str) -> dict:
    env = dict(
        os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "hand-cache"), HF_HUB_OFFLINE="1"
    )
    cmd = [sys.executable, "-c", BY_HAND, target, str(budget)]
    cold_wall, out = timed(cmd + ["cold", ROOT], env)
    warm_wall, _ = timed(cmd + ["warm", ROOT], env)
    return {"wall_s": cold_wall + warm_wall, **json.loads(out.strip().splitlines()[-1])}


PKG: str | None = None  # --pkg: the tcdoctor tree whose analyze is timed (None: this one)


def _pkg_env() -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    if PKG:
        env["PYTHONPATH"] = PKG + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@functools.cache
def _flags() -> list[str]:
    wanted = ["--no-fixes", "--no-training-ways", "--quiet"]
    if not PKG:
        return wanted
    help_text = subprocess.run(
        [sys.executable, "-m", "tcdoctor", "analyze", "--help"],
        env=_pkg_env(),
        capture_output=True,
        text=True,
        cwd=PKG,
    ).stdout
    return [f for f in wanted if f in help_text]


def analyze(target: str, budget: float, tmp: str) -> dict:
    out = os.path.join(tmp, "r.json")
    path, _, fn = target.partition(":")
    cmd = [
        sys.executable,
        "-m",
        "tcdoctor",
        "analyze",
        f"{os.path.join(ROOT, path)}:{fn}",
        "--budget",
        str(budget),
        *_flags(),
        "--json",
        out,
        "--html",
        "",
    ]
    wall, _ = timed(cmd, _pkg_env(), cwd=PKG or ROOT)
    rep = json.load(open(out))
    return {
        "wall_s": wall,
        "speedup": rep["runtime"]["speedup"],
        "first_call_s": rep["compile"].get("cold_s", rep["compile"].get("first_call_s")),
        "eager_median_s": rep["runtime"]["eager"]["median_s"],
        "compiled_median_s": rep["runtime"]["compiled"]["median_s"],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("targets", nargs="*", default=DEFAULT)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--budget", type=float, default=5.0)
    ap.add_argument("--noise-floor", action="store_true")
    ap.add_argument("--pkg", default=None)
    args = ap.parse_args()
    global PKG
    PKG = os.path.abspath(args.pkg) if args.pkg else None
    print(
        "| model | run | analyze wall | by-hand wall | wall ratio | tcdoctor speedup | by-hand speedup | speedup ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for run in range(args.runs):
        for target in args.targets:
            with tempfile.TemporaryDirectory() as tmp:
                if (run + args.targets.index(target)) % 2 == 0:
                    t, h = analyze(target, args.budget, tmp), by_hand(target, args.budget, tmp)
                else:
                    h, t = by_hand(target, args.budget, tmp), analyze(target, args.budget, tmp)
                h2 = by_hand(target, args.budget, tmp) if args.noise_floor else None
            path, _, fn = target.partition(":")
            name = os.path.basename(path) + (f":{fn}" if fn not in ("", "build") else "")
            if h2:
                print(
                    f"  noise floor: by hand {h['speedup']:.3f}× vs again {h2['speedup']:.3f}×: "
                    f"ratio {h['speedup'] / h2['speedup']:.3f}",
                    flush=True,
                )
            if os.environ.get("TCD_MEDIANS"):
                print(
                    f"  medians: tcdoctor eager {t['eager_median_s'] * 1e6:.0f} µs, compiled "
                    f"{t['compiled_median_s'] * 1e6:.0f} µs; by hand eager {h['eager_median_s'] * 1e6:.0f} µs, "
                    f"compiled {h['compiled_median_s'] * 1e6:.0f} µs",
                    flush=True,
                )
            print(
                f"| {name} | {run + 1} | {t['wall_s']:.1f} s | {h['wall_s']:.1f} s | {t['wall_s'] / h['wall_s']:.2f} "
                f"| {t['speedup']:.3f}× | {h['speedup']:.3f}× | {t['speedup'] / h['speedup']:.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
