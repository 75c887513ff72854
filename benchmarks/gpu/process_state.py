"""What an analysis process does before its timing, one step at a time, and what each step does to
the timing of the target's own loop (issue 56 item 1).

Why. On an H200 the two analysis processes (cold, warm) timed a GPT-2 training step 20-28% slower
on both sides than the timing-only process, which was within 8% of a by-hand script; on a quiet
CPU host the three agreed within 5%. Before its timing an analysis process has made the pristine
snapshot, run the fidelity check (one call of the original, one of a copy), the eager phase, the
explain run, the compiled first call on a copy, opened the memory windows and saved the cache
artifacts; a timing-only process does none of it. This script finds which step, if any, moves
the timing.

Method. One process, the target loaded as the analysis loads it (target/load.py). First, before
anything else, the object build() returned is compiled as a plain script compiles it (the
analysis's backend and mode), its first call made, and both sides timed as the target's loop:
each a block of --calls back-to-back calls (at least 20) with the device synchronised only at
the block's two edges, one untimed call before each block (the switch from the other side), the
sides alternating, blocks for about --line-s seconds (at least three a side): the median block's
time per call (probes/timing.py's block, as it times on an asynchronous device; on the CPU the
same blocks). Then each thing the analysis does is added, cumulatively, through tcdoctor's own
functions (run/runner.PhaseRunner and the phases it runs), and the same loop is timed again after
each, warmed up first until a compiled call compiles nothing (a step that reset Dynamo makes the
loop's callable compile again, against the warm cache): one line per step, what was added, eager
and compiled ms per call and their ratio to the first line. Two last lines: the analysis's own
subjects (its checked eager copy and its timed compiled copy) timed the same way, which tells the
process's state apart from its copies; and the analysis's own timing phase (probes/timing.measure,
as the cold process runs it), its medians as the report would show them. The summary names the
first step after which a side's median left the first line's own block range by more than
MOVED (or says nothing moved).

Pitfalls. The steps are the cold process's, in its order (environment, eager, graph_breaks,
compile, the held-memory window, cache_artifacts); the warm process runs fewer. A step's effect
is read against the first line's spread in this process, not across processes. Each line's loop
runs on the object build() returned, as a timing-only process's does; a training step trains it
as it runs. --budget stops before a step once spent (the rest said not run); the hard limit is
the caller's (benchmarks/gpu_check.sh gives it a timeout).

Usage: python benchmarks/gpu/process_state.py PATH.py:build [--device auto|cpu|cuda]
       [--backend inductor] [--mode MODE] [--threads N] [--calls 20] [--line-s 2] [--budget 110]
       [--json OUT]
Prints one line per step and a summary; --json writes the lines as they come. Exit 2 on a bad
target or device.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Callable

MIN_CALLS = 20  # a block's calls at least: the benchmark article's loop, timing.ASYNC_BLOCK_CALLS
MIN_BLOCKS = 3  # blocks a side per line at least
# A side moved when its median left the first line's block range by more than this (the range is
# the first line's own spread in this process; a few percent more is not a step's doing).
MOVED = 0.05


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("target", help="PATH.py:build (a model and inputs, a Workload or a TrainStep)")
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--mode", default=None)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--calls", type=int, default=MIN_CALLS, help=f"calls a block (≥ {MIN_CALLS})")
    ap.add_argument("--line-s", type=float, default=2.0, help="seconds of blocks a line")
    ap.add_argument("--budget", type=float, default=110.0, help="seconds before no step starts")
    ap.add_argument("--json", default=None, help="write the lines here, as they come")
    a = ap.parse_args(argv)
    a.calls = max(MIN_CALLS, a.calls)
    return a


def time_loop(
    eager: Callable[[], Any], compiled: Callable[[], Any], sync: Callable[[], None], ctx: Any, a
) -> dict:
    """The target's loop on both sides: warmed up until a compiled call compiles nothing, then
    blocks of `a.calls` calls, sides alternating, each after one untimed call, for `a.line_s`."""
    from tcdoctor.probes import timing

    warm = timing.warm_up(compiled, eager, sync, ctx)
    e: list[float] = []
    c: list[float] = []
    end = time.perf_counter() + a.line_s
    while len(e) < MIN_BLOCKS or time.perf_counter() < end:
        sides = ((eager, e), (compiled, c))
        for fn, out in sides if len(e) % 2 == 0 else sides[::-1]:
            timing._batch(fn, 1, sync, None, ctx)  # the switch from the other side, untimed
            out.append(timing._batch(fn, a.calls, sync, None, ctx))
    return {
        "eager_ms": statistics.median(e) * 1e3,
        "compiled_ms": statistics.median(c) * 1e3,
        "blocks": len(e),
        "warmup_calls": warm["warmup_calls"],
        "eager_blocks_ms": [round(x * 1e3, 4) for x in e],
        "compiled_blocks_ms": [round(x * 1e3, 4) for x in c],
    }


def steps(runner: Any, folder: str) -> list[tuple[str, Callable[[], Any]]]:
    """What the cold analysis process does before its timing, in its order, each through
    tcdoctor's own function (the snapshot is the runner's construction, made by the caller)."""
    from tcdoctor.experiments import compile_remedies
    from tcdoctor.probes import memory

    def held() -> None:  # as phase_runtime opens it: closed by the timing phase's warm-up
        runner.held = memory.Held(runner.device).start()

    return [
        ("fidelity check (environment: the original called once, a copy once)",
         lambda: runner.measure("environment")),
        ("eager phase (the checked copy's call is the reference)",
         lambda: runner.measure("eager")),
        ("explain run (graph_breaks phase, a fresh copy)",
         lambda: runner.measure("graph_breaks")),
        ("compiled first call on a copy (compile phase: Dynamo reset)",
         lambda: runner.measure("compile")),
        ("memory windows (memory.Held opened, as the timing phase does)", held),
        ("cache artifacts (torch.compiler.save_cache_artifacts)",
         lambda: compile_remedies.save_artifacts(folder)),
    ]  # fmt: skip


class Lines:
    """The lines so far: printed as they come, written to --json after each."""

    def __init__(self, a: argparse.Namespace, head: dict):
        self.a, self.head, self.lines = a, head, []

    def add(self, added: str, figures: dict, step_s: float | None = None) -> None:
        first = self.lines[0] if self.lines else figures
        line = {
            "added": added,
            **figures,
            "speedup": figures["eager_ms"] / figures["compiled_ms"],
            "eager_ratio": figures["eager_ms"] / first["eager_ms"],
            "compiled_ratio": figures["compiled_ms"] / first["compiled_ms"],
            **({"step_s": round(step_s, 3)} if step_s is not None else {}),
        }
        self.lines.append(line)
        print(
            f"{len(self.lines) - 1:>2} {added[:66]:<66} eager {line['eager_ms']:9.3f} ms  compiled "
            f"{line['compiled_ms']:9.3f} ms  ({line['eager_ratio']:.2f}×, "
            f"{line['compiled_ratio']:.2f}× the first line)",
            flush=True,
        )
        self.write()

    def skip(self, added: str, why: str) -> None:
        self.lines.append({"added": added, "not_run": why})
        print(f"   {added[:66]:<66} not run ({why})", flush=True)
        self.write()

    def moved(self) -> str:
        """The first step after which a side left the first line's block range by MOVED."""
        first = self.lines[0]
        for line in self.lines[1:]:
            for side in ("eager", "compiled"):
                blocks = first[f"{side}_blocks_ms"]
                lo, hi = min(blocks) / (1 + MOVED), max(blocks) * (1 + MOVED)
                if "not_run" not in line and not lo <= line[f"{side}_ms"] <= hi:
                    return (
                        f"first moved by: {line['added']}: {side} {line[f'{side}_ratio']:.2f}× the "
                        f"first line ({lo:.3f}–{hi:.3f} ms its block range ±{MOVED:.0%})"
                    )
        return f"nothing moved a side beyond the first line's block range ±{MOVED:.0%}"

    def write(self, **more: Any) -> None:
        if self.a.json:
            with open(self.a.json, "w", encoding="utf-8") as fh:
                json.dump({**self.head, "lines": self.lines, **more}, fh, indent=1)


def _load(a: argparse.Namespace) -> tuple[Any, Any, Any]:
    """(torch, workload, rebuild), the device checked; SystemExit(2) with one line otherwise."""
    if a.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before torch: a target picking cuda gets cpu
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)  # before any compile, as the child sets it
    from tcdoctor.errors import TcdoctorError
    from tcdoctor.target import load as target

    try:
        workload, rebuild = target.load_with_rebuild(a.target)
    except TcdoctorError as exc:
        raise SystemExit(f"process_state: {exc.message}") from None
    return torch, workload, rebuild


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    try:
        torch, w, rebuild = _load(a)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    from tcdoctor.experiments.training import Subject
    from tcdoctor.options import Options
    from tcdoctor.probes import calls, first_call
    from tcdoctor.run.runner import PhaseRunner
    from tcdoctor.target.pristine import reset_rng_state

    device = calls.detect(w.model, w.call_args)
    if a.device == "cuda" and device.type != "cuda":
        print(f"process_state: the target builds on {device}, not cuda", file=sys.stderr)
        return 2
    w.device_type = device.type
    t0, sync, ctx, ca = (
        time.perf_counter(),
        calls.synchronizer(device),
        calls.batch_context(w),
        w.call_args,
    )
    original = Subject(w)  # the object build() returned, as a timing-only process calls it
    compiled = first_call.build(original.fn, a.backend, a.mode, w.compile_kwargs)
    reset_rng_state()
    first = time.perf_counter()
    calls.call(compiled, ca, w, device)
    sync()
    head = {
        "target": a.target,
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "backend": a.backend,
        "mode": a.mode or "default",
        "threads": torch.get_num_threads(),
        "calls_per_block": a.calls,
        "first_call_s": round(time.perf_counter() - first, 3),
        "method": __doc__.split("Method. ")[1].split("\n\nPitfalls")[0].replace("\n", " "),
    }
    out = Lines(a, head)
    print(
        f"{a.target}: {head['device_name']}, torch {head['torch']}, {a.backend} "
        f"{head['mode']}, {head['threads']} thread(s), blocks of {a.calls} calls, first call "
        f"{head['first_call_s']} s",
        flush=True,
    )
    loop = (calls.one_call(original.fn, ca, w, device), calls.one_call(compiled, ca, w, device))
    out.add(
        "nothing yet: build()'s object compiled, its first call made",
        time_loop(*loop, sync, ctx, a),
    )
    folder = tempfile.mkdtemp(prefix="process_state_")
    options = Options(backend=a.backend, mode=a.mode, threads=a.threads, budget_s=a.line_s)
    s0 = time.perf_counter()
    runner = PhaseRunner(w, options, lambda ev: None, rebuild=rebuild)  # the pristine snapshot
    out.add("+ pristine snapshot (target/pristine.Pristine: a deep copy)",
            time_loop(*loop, sync, ctx, a), time.perf_counter() - s0)  # fmt: skip
    for added, step in steps(runner, folder):
        if time.perf_counter() - t0 > a.budget:
            out.skip("+ " + added, f"--budget {a.budget:g} s spent")
            continue
        s0 = time.perf_counter()
        step()
        out.add("+ " + added, time_loop(*loop, sync, ctx, a), time.perf_counter() - s0)
    _analysis_lines(out, runner, w, device, sync, ctx, a)
    summary = out.moved()
    print(summary, flush=True)
    out.write(summary=summary, wall_s=round(time.perf_counter() - t0, 1))
    return 0


def _analysis_lines(out: Lines, runner: Any, w: Any, device: Any, sync, ctx, a) -> None:
    """The analysis's own subjects timed as the loop above (its copies against the process's
    state), then its own timing phase (probes/timing.measure, as the cold process runs it)."""
    from tcdoctor.probes import calls

    if runner.compiled is None or runner.eager_subject is None:
        out.skip("the analysis's subjects", "its compile or eager phase did not run")
        return
    ca = w.call_args
    subjects = (
        calls.one_call(runner.eager_subject.fn, ca, w, device),
        calls.one_call(runner.compiled, ca, w, device),
    )
    out.add("the analysis's subjects (its checked copy, its timed compiled copy)",
            time_loop(*subjects, sync, ctx, a))  # fmt: skip
    s0 = time.perf_counter()
    rt = runner.measure("runtime")
    out.add(
        "the analysis's timing phase (probes/timing.measure, those subjects)",
        {
            "eager_ms": rt["eager"]["median_s"] * 1e3,
            "compiled_ms": rt["compiled"]["median_s"] * 1e3,
            "blocks": rt["samples"],
            "calls_per_sample": rt["calls_per_sample"],
            "eager_blocks_ms": [round(x * 1e3, 4) for x in rt["raw"]["eager_s"]],
            "compiled_blocks_ms": [round(x * 1e3, 4) for x in rt["raw"]["compiled_s"]],
        },
        time.perf_counter() - s0,
    )


if __name__ == "__main__":
    sys.exit(main())
