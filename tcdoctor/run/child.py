"""Child process entry: `python -m tcdoctor.run.child SPEC.json` (a ChildSpec, run/spec.py).

Sets the inductor cache dir and thread count before torch compiles anything, arms
faulthandler so a hang or crash leaves the stack behind, then runs a PhaseRunner. Exits with
os._exit once its events are fsynced: torch's interpreter teardown is slow and measures nothing.
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import time
import warnings

from ..errors import EXIT_INTERNAL
from ..experiments.specs import Spec
from ..units import MACHINE_PROBED_CACHE, WARM_PROCESS_CACHE
from .spec import ChildSpec, ChildSpecError

WAIT_POLL_S = 0.01
# The warm child waits for its go signal while the cold child times its calls: a 10 ms poll woke it
# 100 times a second, and each wake-up preempted the timed threads (25 of the cold process's pairs
# were rerun under load on a quiet machine, against 0-4 in the other processes). 1 s costs the
# warm start at most that (the parent sends go as the cold child exits), and wakes it once a second
# (tests/test_own_load.py).
GO_POLL_S = 1.0


def _wait_for(path: str, timeout_s: float | None, poll_s: float = WAIT_POLL_S) -> dict | None:
    """Block until the parent (or sibling) writes `path`; None if the parent went away or time ran out."""
    parent = os.getppid()
    end = time.monotonic() + (timeout_s if timeout_s is not None else 1e9)
    while time.monotonic() < end:
        if os.path.exists(path):
            try:
                with open(path) as fh:
                    return json.load(fh)
            except ValueError:
                pass
        if os.getppid() != parent:
            return None
        time.sleep(poll_s)
    return None


def main(spec_path: str) -> int:
    try:
        spec = ChildSpec.read(spec_path)
    except ChildSpecError as exc:  # parent and child disagree: tcdoctor's bug, in one line
        print(f"tcdoctor: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    if spec.role == "rank":  # one rank of a distributed analysis (run/rank.py): files per RANK
        from .rank import per_rank

        spec = per_rank(spec)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = spec.cache_dir
    stacks = open(spec.stacks_path, "w")  # noqa: SIM115 - must outlive this function for faulthandler
    faulthandler.enable(file=stacks, all_threads=False)
    if spec.dump_after_s:
        faulthandler.dump_traceback_later(spec.dump_after_s, exit=False, file=stacks)
    warnings.filterwarnings("ignore", message=".*NumPy.*")

    from .stream import FileSink

    sink = FileSink(spec.events_path)
    options = spec.options
    import torch

    # else as the user's own process: OMP_NUM_THREADS or torch's default
    if options.threads is not None:
        torch.set_num_threads(options.threads)  # before any compile: a later change recompiles
    if spec.role == "rank":
        from .rank import run as run_rank

        return run_rank(spec, sink, options)
    from ..report.phases import COLD, TIMING, WARM
    from .runner import PhaseRunner

    per_call_s, go = None, {}
    if spec.warm:
        ready = spec.warm.ready_path
        with open(ready + ".tmp", "w") as fh:
            json.dump({"imported": True}, fh)
        os.replace(ready + ".tmp", ready)
        go = _wait_for(spec.warm.go_path, None, GO_POLL_S)
        if not go or not go.get("run"):
            sink({"event": "end", "ok": True, "skipped": True})
            return 0
        per_call_s = go.get("per_call_s")

    from .runner import load_target  # imports torch: only once faulthandler is armed

    loaded = load_target(spec.target, sink)
    if isinstance(loaded, int):
        return loaded
    workload, rebuild = loaded
    if spec.strategy:
        run = spec.strategy
        _run_strategy(run.spec, workload, options, sink, run.cache_start, run.isa_probe_s)
        sink({"event": "end", "ok": True})
        return 0
    before_compile = None
    if spec.wait_for:
        ready = spec.wait_for
        before_compile = lambda: _wait_for(ready, 120.0)  # noqa: E731 - keep the cold compile uncontended
    process = {"warm": WARM, "timing": TIMING}.get(spec.role, COLD)
    runner = PhaseRunner(
        workload,
        options,
        sink,
        per_call_hint_s=per_call_s,
        before_compile=before_compile,
        rebuild=rebuild,
        bare=process == TIMING,
    )
    runner.timing_process = spec.timing.to_dict() if spec.timing else {}
    ok = runner.run(process)
    if ok and spec.role == "cold" and "compile" in runner.results:
        from ..experiments import compile_remedies, fixes, proving, strategies
        from ..verdict.thresholds import RULES

        breaks = (runner.results.get("graph_breaks") or {}).get("graph_breaks", {}).get("count")
        planned = strategies.plan(workload, options, breaks, int(RULES["regional_auto_breaks"]))
        patch_specs, no_patch = [], []
        if options.fixes:
            before = fixes.before_figures(runner.results)
            patch_specs, no_patch = proving.plan(runner.results, spec.target, before)
        planned += fixes.plan(runner.results, options, RULES["min_speedup"], patch_specs)
        remedies, remedies_not_tried = compile_remedies.plan(workload, options, runner.results)
        planned += remedies  # after the fixes: the fix budget goes to the ablation first
        sink(
            {
                "event": "done",
                "phase": "plan",
                "data": {
                    "strategies": [s.to_dict() for s in planned],
                    "remedies_not_tried": remedies_not_tried,
                    "patches_not_planned": no_patch,
                },
            }
        )
    if ok and go.get("experiments"):
        _run_experiments(go, workload, options, sink, runner.results.get("runtime_warm"))
    sink({"event": "end", "ok": ok})
    return 0 if ok else 3


def _run_experiments(go: dict, workload, options, sink, own_timing: dict | None) -> None:
    """The experiments the parent gave the warm process (`Spec.shares_process`), once its own phases
    are done, in plan order, each as its own phase; those that count against the fix budget stop
    when it is spent (each then says so in a `not_tried` record the parent reports). A fix is
    judged against this process's own main row (`own_timing`), timed the same way in the same
    process, never against another process's pairs."""
    from ..experiments.fixes import budget_used_up, judged_in_process

    budget, spent = go.get("fix_budget_s") or 0.0, 0.0
    for d in go["experiments"]:
        spec = judged_in_process(Spec.from_dict(d), own_timing)
        if spec.uses_fix_budget and spent >= budget:
            why = budget_used_up(budget)
            sink({"event": "not_tried", "phase": spec.phase, "spec": d, "why": why})
            continue
        t0 = time.perf_counter()
        _run_strategy(spec, workload, options, sink, WARM_PROCESS_CACHE)
        if spec.uses_fix_budget:
            spent += time.perf_counter() - t0


def _run_strategy(
    spec: Spec, workload, options, sink, cache_start: str | None, isa_probe_s: float | None = None
) -> None:
    """One experiment (a strategy, a fix, an ablation backend) as one phase; a failure is its finding.
    `cache_start`: what its inductor cache held when it started (run/launcher.py), kept in its row.
    A folder seeded with the machine's probed folder is checked afterwards (`_probed`): its row
    says whether the probe was built again, and carries `isa_probe_s` (the builds the cold process
    paid) only where it was not."""
    from ..experiments import strategies
    from ..target.userframes import describe_exception

    name = spec.phase
    sink({"event": "start", "phase": name, "label": spec.label})
    t0 = time.perf_counter()
    try:
        data = strategies.run(spec, workload, options)
    except Exception as exc:  # noqa: BLE001 - a failing strategy is a finding
        sink(
            {
                "event": "failed",
                "phase": name,
                "error": describe_exception(exc),
                "spec": spec.to_dict(),
            }
        )
    else:
        sink(
            {
                "event": "done",
                "phase": name,
                "seconds": time.perf_counter() - t0,
                "data": {
                    "spec": spec.to_dict(),
                    **_probed(cache_start, isa_probe_s),
                    **data,
                },
            }
        )


def _probed(cache_start: str | None, isa_probe_s: float | None) -> dict:
    """The row's `cache_start` and, for a folder seeded with the machine's probed folder, the
    probe's builds it skipped (`isa_probe_s`). The seed is checked, not assumed: when Inductor
    built a probe library in the folder all the same (a seed of another compiler or torch build),
    the row says so and is a fresh container's first call, with nothing to add back."""
    folder = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if cache_start != MACHINE_PROBED_CACHE or not folder:
        return {"cache_start": cache_start}
    from ..probes.isa_seed import paid

    again = paid(folder)
    if again:
        return {
            "cache_start": f"empty: seeded, but Inductor built {len(again)} of its CPU ISA "
            "checks again (the seed did not match this compiler or torch)"
        }
    return {
        "cache_start": cache_start,
        **({"isa_probe_s": isa_probe_s} if isa_probe_s is not None else {}),
    }


if __name__ == "__main__":
    code = main(sys.argv[1])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
