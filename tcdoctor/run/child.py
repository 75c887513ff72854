"""Child process entry: `python -m tcdoctor.run.child SPEC.json` (a ChildSpec, run/spec.py).

Sets the inductor cache dir and thread count before torch compiles anything, arms
faulthandler so a hang or crash leaves the stack behind, then runs its role (`_ROLES`): the cold
child's phases and then its plan (experiments/cold_plan.py), the warm child's phases once its go
message came (run/spec.py `WarmGo`) and then the experiments it was given, a timing-only child's
bare timing, an experiment child's one experiment, a rank's (run/rank.py), a serving part's process
(run/serving/child.py). Each role runs a
PhaseRunner of its process's phases. Exits with os._exit once its events are fsynced: torch's
interpreter teardown is slow and measures nothing.
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from ..errors import EXIT_INTERNAL
from ..experiments.specs import Spec
from ..report.events import Event
from ..units import MACHINE_PROBED_CACHE, WARM_PROCESS_CACHE
from .spec import ChildSpec, ChildSpecError, WarmGo

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
    """Read the spec, arm the process (cache folder, faulthandler, threads), then run its role."""
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
    # a serving part's stacks name every thread (the host part serves from several)
    faulthandler.enable(file=stacks, all_threads=spec.role == "serve")
    if spec.dump_after_s:
        faulthandler.dump_traceback_later(spec.dump_after_s, exit=False, file=stacks)
    warnings.filterwarnings("ignore", message=".*NumPy.*")

    from .stream import FileSink

    sink = FileSink(spec.events_path)
    import torch

    # else as the user's own process: OMP_NUM_THREADS or torch's default
    if spec.options.threads is not None:
        torch.set_num_threads(spec.options.threads)  # before any compile: a later change recompiles
    return _ROLES[spec.role](spec, sink)


def _load(spec: ChildSpec, sink) -> tuple[Any, Any] | int:
    """The user's workload and its rebuild (imports torch: only once faulthandler is armed), or
    the exit code of a load that failed (its record already streamed)."""
    from .runner import load_target

    return load_target(spec.target, sink)


def _phases(
    spec: ChildSpec, sink, loaded: tuple[Any, Any], process: str, **kw
) -> tuple[dict[str, Any], bool]:
    """A PhaseRunner of this process's phases (report/phases/: COLD, WARM, TIMING), run: its
    results by phase, and whether every phase ran."""
    from .runner import PhaseRunner

    workload, rebuild = loaded
    runner = PhaseRunner(workload, spec.options, sink, rebuild=rebuild, **kw)
    runner.timing_process = spec.timing.to_dict() if spec.timing else {}
    ok = runner.run(process)
    return runner.results, ok


def _end(sink, ok: bool) -> int:
    sink(Event(event="end", ok=ok))
    return 0 if ok else 3


def _cold(spec: ChildSpec, sink) -> int:
    """The cold child: its phases against the empty cache (the compile only once the warm child
    has imported torch, uncontended), then the experiments it plans (experiments/cold_plan.py)."""
    from ..experiments import cold_plan
    from ..report.phases import COLD

    loaded = _load(spec, sink)
    if isinstance(loaded, int):
        return loaded
    ready = spec.wait_for
    wait = (lambda: _wait_for(ready, 120.0)) if ready else None  # keep the cold compile uncontended
    results, ok = _phases(spec, sink, loaded, COLD, before_compile=wait)
    if ok and "compile" in results:
        planned = cold_plan.plan(loaded[0], spec.target, spec.options, results)
        sink(Event(event="done", phase="plan", data=planned.to_data()))
    return _end(sink, ok)


def _warm(spec: ChildSpec, sink) -> int:
    """The warm child: ready once torch is imported, then its go message (run/spec.py WarmGo); its
    phases against the cold child's cache, then the experiments it was given."""
    from ..report.phases import WARM

    assert spec.warm is not None  # ChildSpec gives the warm role its handshake
    ready = spec.warm.ready_path
    with open(ready + ".tmp", "w") as fh:
        json.dump({"imported": True}, fh)
    os.replace(ready + ".tmp", ready)
    found = _wait_for(spec.warm.go_path, None, GO_POLL_S)
    try:
        go = WarmGo.from_dict(found) if found is not None else None
    except ChildSpecError as exc:  # parent and child disagree: tcdoctor's bug, in one line
        print(f"tcdoctor: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    if go is None or not go.run:
        sink(Event(event="end", ok=True, skipped=True))
        return 0
    loaded = _load(spec, sink)
    if isinstance(loaded, int):
        return loaded
    results, ok = _phases(spec, sink, loaded, WARM, per_call_hint_s=go.per_call_s)
    if ok and go.experiments:
        _run_experiments(go, loaded[0], spec.options, sink, results.get("runtime_warm"))
    return _end(sink, ok)


def _timing(spec: ChildSpec, sink) -> int:
    """A timing-only child: the main row timed as a plain script calls the model (bare)."""
    from ..report.phases import TIMING

    loaded = _load(spec, sink)
    if isinstance(loaded, int):
        return loaded
    return _end(sink, _phases(spec, sink, loaded, TIMING, bare=True)[1])


def _strategy(spec: ChildSpec, sink) -> int:
    """An experiment child: one experiment (a strategy, a fix, an ablation backend, a remedy)."""
    loaded = _load(spec, sink)
    if isinstance(loaded, int):
        return loaded
    run = spec.strategy
    assert run is not None  # ChildSpec gives the strategy role its experiment
    _run_strategy(run.spec, loaded[0], spec.options, sink, run.cache_start, run.isa_probe_s)
    return _end(sink, True)


def _rank(spec: ChildSpec, sink) -> int:
    """One rank of a distributed analysis (run/rank.py)."""
    from .rank import run as run_rank

    return run_rank(spec, sink, spec.options)


def _serve(spec: ChildSpec, sink) -> int:
    """A serving part's process (run/serving/child.py): the part its ServeSpec names."""
    imported = time.time()  # torch is imported: the restart's import time ends here
    from .serving.child import serve

    return serve(spec, sink, imported)


# What each role of process does (ChildSpec.role)
_ROLES: dict[str, Callable[[ChildSpec, Any], int]] = {
    "cold": _cold,
    "warm": _warm,
    "timing": _timing,
    "strategy": _strategy,
    "rank": _rank,
    "serve": _serve,
}


def _run_experiments(go: WarmGo, workload, options, sink, own_timing: dict | None) -> None:
    """The experiments the parent gave the warm process (`Spec.shares_process`), once its own phases
    are done, in plan order, each as its own phase; those that count against the fix budget stop
    when it is spent (each then says so in a `not_tried` record the parent reports). A fix is
    judged against this process's own main row (`own_timing`), timed the same way in the same
    process, never against another process's pairs."""
    from ..experiments.fixes import IN_PROCESS, budget_used_up, judged

    budget, spent = go.fix_budget_s or 0.0, 0.0
    for planned in go.experiments:
        spec = judged(planned, own_timing, IN_PROCESS)
        if spec.uses_fix_budget and spent >= budget:
            why = budget_used_up(budget)
            sink(Event(event="not_tried", phase=spec.phase, spec=planned.to_dict(), why=why))
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
    sink(Event(event="start", phase=name, label=spec.label))
    t0 = time.perf_counter()
    try:
        data = strategies.run(spec, workload, options)
    except Exception as exc:  # noqa: BLE001 - a failing strategy is a finding
        sink(Event(event="failed", phase=name, error=describe_exception(exc), spec=spec.to_dict()))
    else:
        sink(
            Event(
                event="done",
                phase=name,
                seconds=time.perf_counter() - t0,
                data={
                    "spec": spec.to_dict(),
                    **_probed(cache_start, isa_probe_s),
                    **data,
                },
            )
        )


def _probed(cache_start: str | None, isa_probe_s: float | None) -> dict:
    """The row's `cache_start` and, for a folder seeded with the machine's probed folder, the
    probe's builds it skipped (`isa_probe_s`). The seed is checked, not assumed: when Inductor
    built a probe library in the folder all the same (a seed of another compiler or torch build),
    the row says so and is a fresh container's first call, with nothing to add back."""
    folder = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if cache_start != MACHINE_PROBED_CACHE or not folder:
        return {"cache_start": cache_start}
    from ..probes.isa_probe import paid

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
