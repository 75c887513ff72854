"""When compiled is wrong: the compiled graph and the call that first diverge from eager, whether it
is a compiler bug or precision, and a reproducer for PyTorch's tracker (issue 64).

Runs only when the numerics phase failed (`passed is False`); an analysis whose numerics pass, or
were not measured, runs nothing and pays nothing. Then `python -m tcdoctor.probes.diverge TARGET`
runs in a fresh process (fresh Dynamo state, its own Inductor cache, BUDGET_S of its own or what
the analysis's --timeout leaves, killed past it; under MIN_BUDGET_S left it does not start): it compiles the target as the user does, compares each compiled graph's outputs with the
same graph run eagerly, call by call, on the real inputs recorded at the graph's boundary, names the
first that diverges, writes `tcdoctor-repro.py` and the recorded inputs, and runs that script in a
fresh process of its own (probes/diverge.py, probes/repro_script.py).

Classification (`classify`), from the script's own runs on the diverging call:
- aot_eager outside allclose at the dtype's tolerance: "aot" (AOTAutograd or a decomposition);
- Inductor in float64 within allclose at float64's tolerance (1e-7) of eager in float64: "precision"
  (the float32 difference is rounding, which float64 shrinks by about nine orders);
- Inductor in float64 still outside it, while aot_eager agrees: "compiler_bug", most likely
  Inductor's: a wrong value, not rounding;
- anything not run or not reproduced alone: not classified, and why.
The classification never rests on the in-program comparison alone (that only finds the call).

Pitfalls: the in-process API gives no target file a fresh process can rebuild (not measured, why);
a training step's graphs are not compared (their backward is not replayed); a graph rerun from its
code can be specialised differently, so "not reproduced alone" is said, not assumed away.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..report.attribution import DivergingCall, Rerun
from ..report.record import Record
from ..report.sections import Numerics
from .context import PhaseContext

DIVERGE_MODULE = "tcdoctor.probes.diverge"
BUDGET_S = 900  # the search's own budget (the child process's), reproducer runs included
IMPORT_S = 60  # over the budget, for the child's imports and build() before its clock starts
MARGIN_S = 30  # kept of the analysis's --timeout after the search (the report is still sent)
MIN_BUDGET_S = 90  # less than this left: not run (one Inductor compile and the script's runs)
FP64_TOL = 1e-7

METHOD = (
    "only when numerics fail, in a fresh process: the target compiled as the user compiles it, each "
    "compiled graph's outputs compared call by call with the same FX graph run eagerly and in "
    "float64 on the real inputs at its boundary (clones), by the numerics rule; the first failing "
    "call names the graph (compile id, function, file:line, guards) and the call (shapes, scalars); "
    "its code and inputs written as tcdoctor-repro.py, run alone in a fresh process with Inductor, "
    "aot_eager and Inductor in float64: aot_eager off = AOTAutograd or a decomposition; Inductor "
    "in float64 agreeing = precision; Inductor still off in float64 while aot_eager agrees = "
    "compiler bug, most likely"
)


def _sci(x: Any) -> str:
    return f"{x:.3g}" if isinstance(x, (int, float)) else "?"


REPRODUCED = (
    0.1  # run alone, a failing output is off by at least this share of its in-program error
)


def reproduced(ind: Rerun, seen: dict[int, float] | None) -> str | None:
    """None when the run alone shows the in-program difference (an output that failed there is
    outside allclose alone, by at least REPRODUCED of its error there); else why not."""
    if not seen:
        return None
    alone = {o.get("output"): o for o in ind.outputs or []}
    for i, err in seen.items():
        o = alone.get(i)
        if o and not o.get("allclose") and (o.get("max_abs_err") or 0.0) >= REPRODUCED * err:
            return None
    i, err = max(seen.items(), key=lambda kv: kv[1])
    got = (alone.get(i) or {}).get("max_abs_err")
    return (
        f"not reproduced alone: in the program output {i} was off by {_sci(err)}, run alone by "
        f"{_sci(got)} (the divergence depends on what ran before it in the program)"
    )


def classify(
    runs: Sequence[Rerun], backend: str = "inductor", seen: dict[int, float] | None = None
) -> tuple[str | None, str]:
    """(kind, words) from the reproducer's runs (`backend`, `fp64`, `max_abs_err`, `allclose`,
    per-output `outputs`); `seen`: the outputs that failed in the program and their error there."""
    by = {(r.backend, bool(r.fp64)): r for r in runs}
    ind, aot, ind64 = (
        by.get((backend, False)),
        by.get(("aot_eager", False)),
        by.get((backend, True)),
    )
    if ind is None or aot is None:
        return None, "not classified: the reproducer's runs are missing"
    why = reproduced(ind, seen)
    if why is not None:
        return None, why
    if not aot.allclose:
        return "aot", (
            f"AOTAutograd or a decomposition: aot_eager differs from eager too (max abs error "
            f"{_sci(aot.max_abs_err)}), so the loss is below {backend}"
        )
    if ind.allclose:
        return None, (
            "not classified: the graph run alone agrees with eager "
            f"(max abs error {_sci(ind.max_abs_err)}); inside the program it did not"
        )
    if ind64 is None:
        return None, f"not classified: {backend} in float64 did not run"
    if ind64.allclose:
        return "precision", (
            f"precision: in float64 {backend} agrees with eager (max abs error "
            f"{_sci(ind64.max_abs_err)}), so the float32 difference "
            f"({_sci(ind.max_abs_err)}) is rounding"
        )
    return "compiler_bug", (
        f"a compiler bug, most likely ({backend.capitalize()}): aot_eager matches eager "
        f"(max abs error {_sci(aot.max_abs_err)}), {backend} is off by "
        f"{_sci(ind.max_abs_err)} and still by {_sci(ind64.max_abs_err)} in float64, "
        "where rounding would shrink it below 1e-7"
    )


def phase_miscompile(ctx: PhaseContext) -> dict:
    """The phase (run/runner.py's PhaseRunner as `ctx`): the search when numerics failed."""
    if ctx.results.get("numerics") is None:
        return {"not_measured": "the numerics phase did not finish"}
    numerics = Numerics.from_dict(ctx.results["numerics"])  # the phase's result, typed
    if numerics.passed is not False:
        why = numerics.not_measured or "numerics did not fail"
        return {"checked": False, "reason": why, "method": "not run: runs only when numerics fail"}
    if ctx.workload.kind == "train":
        return {"not_measured": "a training step: its graphs' backward is not replayed alone yet"}
    from .drift import target_of

    target = target_of(ctx.workload)
    if target is None:
        return {
            "not_measured": "the workload was not loaded from a target file (in-process API): a "
            "fresh process cannot rebuild it"
        }
    budget = min(BUDGET_S, time_left(ctx.options.timeout_s) - IMPORT_S - MARGIN_S)
    if budget < MIN_BUDGET_S:
        return {
            "checked": True,
            "reason": "numerics failed",
            "not_measured": f"{max(0, budget + IMPORT_S):.0f} s of the analysis's --timeout were "
            f"left, the search needs {MIN_BUDGET_S + IMPORT_S} s (analyse again with a larger "
            "--timeout)",
        }
    opts = ctx.options
    out = run_search(target, opts.backend, opts.mode, opts.fallback_random, budget)
    data = finish(out, target, opts.backend)
    if data.get("kind") not in ("compiler_bug", "aot") and out.folder:
        shutil.rmtree(out.folder, ignore_errors=True)  # nothing of it goes beside the reports
        data["folder"] = None
    return data


def time_left(timeout_s: float) -> float:
    """At most what this process has left of the analysis's --timeout (the run's deadline came
    before this process started, so this overestimates by that delay: MARGIN_S covers it)."""
    import psutil

    return timeout_s - (time.time() - psutil.Process().create_time())


@dataclass
class Reruns(Record):
    """The reproducer run alone (probes/diverge.py `run_script`): its `runs`, or why not."""

    runs: list[Rerun] = field(default_factory=list)
    not_run: str | None = None


@dataclass
class Search(Record):
    """probes/diverge.py's JSON, read once where it comes back (`run_search`): the diverging call
    (`found`) and its graph's `site`, the reproducer's folder and inputs (`saved`), its runs
    (`reruns`: {runs} or {not_run}); `not_measured` where a step could not run."""

    found: dict[str, Any] | None = None
    site: dict[str, Any] | None = None
    reruns: Reruns | None = None
    folder: str | None = None
    saved: list[dict] | None = None
    saved_bytes: int | None = None
    cost_s: float | None = None
    calls_compared: int | None = None
    graphs_compared: int | None = None
    why_none: str | None = None
    not_measured: str | None = None


def run_search(
    target: str, backend: str, mode: str | None, fallback_random: bool, budget: float = BUDGET_S
) -> Search:
    """probes/diverge.py in a fresh process, its own Inductor cache; its JSON, or why not."""
    folder = tempfile.mkdtemp(prefix="tcdoctor-repro-")
    cmd = [sys.executable, "-m", DIVERGE_MODULE, target, "--out", folder, "--backend", backend]
    cmd += ["--budget", f"{budget:.0f}"] + (["--mode", mode] if mode else [])
    cmd += ["--fallback-random"] if fallback_random else []
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(folder, "inductor-cache"))
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=budget + IMPORT_S, env=env)
    except subprocess.TimeoutExpired:
        shutil.rmtree(folder, ignore_errors=True)
        return Search(not_measured=f"the search ran over its {budget + IMPORT_S:.0f} s")
    finally:
        shutil.rmtree(env["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)
    cost = round(time.monotonic() - t0, 1)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1][:300]
        return Search(not_measured=f"the search's process failed: {tail}", cost_s=cost)
    return Search.from_dict({**json.loads(lines[-1]), "cost_s": cost, "folder": folder})


def finish(out: Search, target: str, backend: str) -> dict:
    """The record: the search's findings, the classification, the script and issue for a bug."""
    from . import repro_script

    data: dict[str, Any] = {
        "checked": True,
        "reason": "numerics failed",
        "method": METHOD,
        "cost_s": out.cost_s,
        "calls_compared": out.calls_compared,
        "graphs_compared": out.graphs_compared,
        "why_none": out.why_none,
    }
    if out.not_measured and not out.found:
        return {**data, "not_measured": out.not_measured}
    data.update(found=out.found, site=out.site)
    if not out.found:
        return data
    if out.not_measured:  # found, but not written (too large, cannot be scripted)
        data["not_written"] = out.not_measured
        data["verdict"] = f"not classified: no reproducer ({out.not_measured})"
        return data
    data.update(folder=out.folder, saved=out.saved, saved_bytes=out.saved_bytes)
    reruns = out.reruns or Reruns()
    if reruns.not_run:
        data["reruns_not_run"] = reruns.not_run
        data["verdict"] = f"not classified: the reproducer did not run ({reruns.not_run})"
        return data
    data["reruns"] = [r.to_dict() for r in reruns.runs]
    seen = {  # the failing rows of the diverging call, read as the report reads them
        int(str(o.path).split()[-1]): o.max_abs_err or 0.0
        for o in DivergingCall.from_dict(out.found).outputs or []
        if str(o.path).startswith("output ")
    }
    data["kind"], data["verdict"] = classify(reruns.runs, backend, seen)
    script = os.path.join(out.folder, repro_script.SCRIPT_NAME)
    if data["kind"] in ("compiler_bug", "aot"):
        with open(script) as f:
            data["script"] = f.read()
        command = f"tcdoctor analyze {target} --backend {backend}"
        data["issue"] = repro_script.issue_text(
            out.found, out.site or {}, data["reruns"], command, _version()
        )
    else:
        data["not_written"] = (
            "the divergence is precision, not a bug: no reproducer is offered"
            if data["kind"] == "precision"
            else "not classified as a bug: no reproducer is offered"
        )
    return data


def _version() -> str:
    from ..version import __version__

    return __version__
