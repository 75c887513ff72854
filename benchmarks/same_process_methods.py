"""tcdoctor's round method (probes/timing.measure) against `blocked_autorange` in ONE process,
alternating: whether a difference between tcdoctor and fresh-process scripts comes from how a sample
is taken (the two disagree here) or from the process's state (they agree here, and processes differ).

Usage: python benchmarks/same_process_methods.py path.py:build [--threads N] [--repeats 3]
       [--blocked-first]   (prints one JSON line per repeat: eager and compiled medians in
       seconds and the speedup by each method; `--blocked-first` runs blocked_autorange first)
Set TORCHINDUCTOR_CACHE_DIR to reuse compiled kernels. Issue 27: GPT-2 (2 threads) 2.85–2.96× by
tcdoctor's rounds vs 2.87–3.08× by blocked_autorange; the Adam step (2 threads) agreed at every
moment while its compiled median moved 6.2–10.7 ms within one process.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from by_hand_speedup import load  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--blocked-first", action="store_true")
    a = ap.parse_args()

    import torch
    import torch.utils.benchmark as benchmark

    from tcdoctor.probes import timing

    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(1337)
    model, args, kwargs, grad = load(a.target)
    compiled = torch.compile(model)
    ctx = contextlib.nullcontext if grad else torch.no_grad
    with ctx():
        compiled(*args, **kwargs)
        for _ in range(3):
            compiled(*args, **kwargs)
            model(*args, **kwargs)
    threads = torch.get_num_threads()

    def blocked() -> dict:
        blocks: dict[str, list[float]] = {"eager": [], "compiled": []}
        with ctx():
            for r in range(4):
                for side in ("eager", "compiled") if r % 2 == 0 else ("compiled", "eager"):
                    fn = model if side == "eager" else compiled
                    t = benchmark.Timer(
                        stmt="fn(*args, **kwargs)",
                        globals={"fn": fn, "args": args, "kwargs": kwargs},
                        num_threads=threads,
                    )
                    blocks[side].append(t.blocked_autorange(min_run_time=0.2).median)
        e, c = statistics.median(blocks["eager"]), statistics.median(blocks["compiled"])
        return {"eager_s": e, "compiled_s": c, "speedup": e / c}

    def rounds() -> dict:
        m = timing.measure(
            lambda: model(*args, **kwargs),
            lambda: compiled(*args, **kwargs),
            lambda: None,
            3.0,
            context=ctx,
        )
        return {
            "eager_s": m["eager"]["median_s"],
            "compiled_s": m["compiled"]["median_s"],
            "speedup": m["speedup"],
            "eager_faults_per_call": m["eager"]["minor_faults_per_call"],
        }

    order = (blocked, rounds) if a.blocked_first else (rounds, blocked)
    for _ in range(a.repeats):
        print(json.dumps({f.__name__: f() for f in order}), flush=True)


if __name__ == "__main__":
    main()
