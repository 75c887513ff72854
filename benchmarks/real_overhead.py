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
ratio, the floor without the experiments (what the by-hand side spent on them subtracted) and the
ratio to it, both speedups and their ratio, and where analyze's extra seconds went (its experiment
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
import contextlib, json, os, statistics, sys, time
import torch
if sys.argv[5] != "default":
    torch.set_num_threads(int(sys.argv[5]))
sys.path.insert(0, sys.argv[4])
from tcdoctor.target.load import load
w = load(sys.argv[1])  # only to read what build() returned: model, args, kwargs (or a TrainStep)
plan, role = json.loads(sys.argv[2]), sys.argv[3]
if getattr(w, "kind", "") == "train":  # a training step written by hand, the whole step compiled
    def step():
        w.optimizer.zero_grad(set_to_none=True)
        w.loss_fn(w.model(*w.inputs, **w.kwargs), w.targets).backward()
        w.optimizer.step()
    model, held, f = step, contextlib.nullcontext, lambda m: m()
else:
    model, held, f = w.model, torch.no_grad, lambda m: m(*w.inputs, **w.kwargs)

def patched(row):
    if row.get("config"):
        module, name = row["config"]
        cfg = torch._dynamo.config if module == "dynamo" else torch._inductor.config
        return cfg.patch(**{name: True})
    return contextlib.nullcontext()

def measure(row):  # compile as the row did, first call, 3 warm-up calls, then its paired samples
    torch._dynamo.reset()
    with patched(row):
        cm = torch.compile(model, backend=row.get("backend", "inductor"))
        t0 = time.perf_counter(); f(cm); first = time.perf_counter() - t0
        for _ in range(3):
            f(cm); f(model)
        def batch(m, k):
            t = time.perf_counter()
            for _ in range(k):
                f(m)
            return (time.perf_counter() - t) / k
        n, k = row["pairs"]
        e, c = [], []
        while len(e) < n:
            order = [(e, model), (c, cm)] if len(e) % 2 == 0 else [(c, cm), (e, model)]
            for out, m in order:
                out.append(batch(m, k))
    return {"first_call_s": first, "speedup": statistics.median(e) / statistics.median(c)}

with held():
    if role == "warm":
        cm = torch.compile(model)
        t0 = time.perf_counter(); f(cm)
        print(json.dumps({"first_call_s": time.perf_counter() - t0})); sys.exit(0)
    rows = []
    for row in plan:
        t0 = time.perf_counter()
        rows.append({**measure(row), "wall_s": time.perf_counter() - t0})
print(json.dumps({**rows[0], "rows": rows, "threads": torch.get_num_threads()}))
"""


def timed(cmd: list[str], env: dict, cwd: str = ROOT) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=cwd)
    return time.perf_counter() - t0, p.stdout


def by_hand(target: str, plan: dict, threads: str, tmp: str) -> dict:
    """The same measurements written by hand: the cold process times the main row, then (Dynamo
    reset) each ablation backend and in-process fix with its pairs; each environment fix is a process
    of its own started with that environment (against the same cache); then the warm process."""
    env = dict(
        os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "hand-cache"), HF_HUB_OFFLINE="1"
    )
    cmd = [sys.executable, "-c", BY_HAND, target]
    cold_wall, out = timed(cmd + [json.dumps(plan["in_process"]), "cold", ROOT, threads], env)
    wall = cold_wall
    for row in plan["own_process"]:
        w, _ = timed(cmd + [json.dumps([row]), "cold", ROOT, threads], {**env, **row["env"]})
        wall += w
    warm_wall, _ = timed(cmd + ["[]", "warm", ROOT, threads], env)
    got = json.loads(out.strip().splitlines()[-1])
    experiments = wall - cold_wall + sum(r["wall_s"] for r in got["rows"][1:])
    return {**got, "wall_s": wall + warm_wall, "experiments_s": experiments}


def by_hand_plan(rep: dict) -> dict:
    """What analyze measured, as rows the by-hand script repeats with the same pairs: the main
    row, each ablation backend, each fix tried with the real backend. Other experiment rows (modes,
    training ways, shapes, regions, the stance) are listed as not repeated."""
    rt = rep["runtime"]
    rows = [{"pairs": [rt["samples"], rt.get("calls_per_sample", 1)]}]
    own, skipped = [], []
    for r in (rep.get("ablation") or {}).get("rows", []):
        if r.get("source") is None and r.get("samples"):
            rows.append({"backend": r["backend"], "pairs": [r["samples"], r["calls_per_sample"]]})
    for f in rep.get("fixes") or []:
        after = f.get("after") or {}
        if not after.get("samples") or f.get("source"):
            continue
        pairs = [after["samples"], after.get("calls_per_sample") or 1]
        spec = (f.get("spec") or {}).get("fix") or {}
        if f["kind"] == "env":
            own.append({"env": spec.get("env") or {}, "pairs": pairs})
        elif f["kind"] in ("config", "inductor_config"):
            module = "dynamo" if f["kind"] == "config" else "inductor"
            rows.append({"config": [module, f["name"]], "pairs": pairs})
        else:
            skipped.append(f["name"])
    for name in rep["phases"]:
        if name.startswith("strategy:") and not name.startswith(("strategy:fix", "strategy:abl")):
            skipped.append(name.split(":", 1)[1])
    return {"in_process": rows, "own_process": own, "not_repeated": skipped}


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
        "plan": by_hand_plan(rep),
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
        "| model | run | threads | analyze wall | by-hand floor | wall ratio | floor without "
        "experiments | ratio to it | tcdoctor speedup | by-hand speedup | speedup ratio | decision "
        "| experiment children (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios: dict[str, list[tuple[float, float]]] = {}
    for run in range(args.runs):
        for target in args.targets:
            with tempfile.TemporaryDirectory() as tmp:
                t = analyze(target, pkg, flags, tmp)
                h = by_hand(target, t["plan"], args.threads or "default", tmp)
            path, _, fn = target.partition(":")
            name = os.path.basename(path) + (f":{fn}" if fn not in ("", "build") else "")
            wall, speed = t["wall_s"] / h["wall_s"], t["speedup"] / h["speedup"]
            bare = h["wall_s"] - h["experiments_s"]  # cold compile + main timing + warm process
            ratios.setdefault(name, []).append((wall, speed))
            kids = ", ".join(f"{k} {v}" for k, v in t["children"].items()) or "none"
            if t["plan"]["not_repeated"]:
                kids += "; not repeated by hand: " + ", ".join(t["plan"]["not_repeated"])
            print(
                f"| {name} | {run + 1} | {t['threads']} / {h['threads']} | {t['wall_s']:.1f} s "
                f"| {h['wall_s']:.1f} s | {wall:.2f} | {bare:.1f} s | {t['wall_s'] / bare:.2f} "
                f"| {t['speedup']:.3f}× | {h['speedup']:.3f}× "
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
