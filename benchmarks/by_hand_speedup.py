"""The independent side of tcdoctor's fidelity checks: a plain script, in a fresh process, timing
eager and torch.compile'd calls the way PyTorch's own recipes time code.

Method: `torch.utils.benchmark.Timer.blocked_autorange` on each side (blocks of back-to-back calls,
at least `--min-run-time` seconds per side), sides alternated over `--rounds` rounds (eager first in
odd rounds, compiled first in even ones); each round's ratio is eager's median / compiled's, taken
side by side in time, and the speedup is the median of the rounds' ratios. No tcdoctor code runs
here: the target module is imported from its path and its `build()` called as a user's script would.

Pitfall (why rounds are paired): a shared virtual machine runs the same call at two speeds in phases
of seconds (a T5 call 1.45-1.6 ms or 2.2-2.9 ms in a plain loop here, CPU time = wall time, so the
host's neighbours, not this process's threads). The unpaired median of eager's 4 blocks over
compiled's 4 read 0.73-1.13 over 12 runs of benchmarks/smallconv.py (aot_eager, one thread) when a
phase fell on one side's blocks more than the other's; a round's two sides share their phase.

Usage: python benchmarks/by_hand_speedup.py path.py:build [--backend inductor] [--threads N]
       [--rounds 10] [--min-run-time 0.1]    (prints one JSON line)
Set TORCHINDUCTOR_CACHE_DIR to share compiled kernels between runs (the timing does not include it).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import random
import statistics
import sys


def load(target: str):
    """(callable, args, kwargs, grad) from `build()`: a (model, inputs) or (model, args, kwargs)
    tuple, or a tcdoctor Workload read through its public fields."""
    path, _, fn = target.partition(":")
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location("by_hand_target", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["by_hand_target"] = mod
    spec.loader.exec_module(mod)
    built = getattr(mod, fn or "build")()
    if isinstance(built, tuple):
        model, args, kwargs = (built + ({},))[:3] if len(built) == 2 else built
        args = args if isinstance(args, tuple) else (args,)
        return model, args, kwargs, False
    if hasattr(built, "train_step") or hasattr(built, "loss_fn"):
        raise SystemExit("a TrainStep is not timed by this script")
    args = built.inputs if isinstance(built.inputs, tuple) else (built.inputs,)
    return built.model, args, dict(built.kwargs or {}), bool(built.grad)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--min-run-time", type=float, default=0.1)
    a = ap.parse_args()

    import torch
    import torch.utils.benchmark as benchmark

    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(1337)
    random.seed(1337)
    model, args, kwargs, grad = load(a.target)
    compiled = torch.compile(model, backend=a.backend)
    ctx = contextlib.nullcontext if grad else torch.no_grad
    with ctx():
        compiled(*args, **kwargs)  # compile
        for _ in range(3):
            compiled(*args, **kwargs)
            model(*args, **kwargs)
    threads = torch.get_num_threads()

    def timer(fn):
        return benchmark.Timer(
            stmt="fn(*args, **kwargs)",
            globals={"fn": fn, "args": args, "kwargs": kwargs},
            num_threads=threads,
        )

    blocks: dict[str, list[float]] = {"eager": [], "compiled": []}
    with ctx():
        for r in range(a.rounds):
            order = ("eager", "compiled") if r % 2 == 0 else ("compiled", "eager")
            for side in order:
                m = timer(model if side == "eager" else compiled).blocked_autorange(
                    min_run_time=a.min_run_time
                )
                blocks[side].append(m.median)
    e, c = statistics.median(blocks["eager"]), statistics.median(blocks["compiled"])
    ratios = [x / y for x, y in zip(blocks["eager"], blocks["compiled"])]
    print(
        json.dumps(
            {
                "speedup": statistics.median(ratios),
                "round_ratios": ratios,
                "eager_median_s": e,
                "compiled_median_s": c,
                "threads": threads,
                "backend": a.backend,
                "rounds": a.rounds,
                "method": "blocked_autorange per side, sides alternated over rounds, median of the rounds' eager/compiled ratios",
            }
        )
    )


if __name__ == "__main__":
    main()
