"""The serving section (issue 55): the target's traffic replayed in fresh processes of its own,
one stage record per part (run/serving/part.py `Part`), run by run/stages.py's one loop.

When it runs: the target's Workload gives a traffic (`Workload(..., traffic=Traffic(...))`, which
the cold analysis process reports in its environment record) or `--traffic N` asks for one
(section.py `asked`; run/launcher.py's serving stage says why not otherwise). Without a traffic
nothing here runs and the analysis costs what it cost before: no process, no import. N is
`--traffic`, else the traffic's own length (its `n`, a list's length, 200 for a generator or
distribution).

The parts (`PARTS`, in run order; one module each), each in fresh processes started through
run/process.py's ChildProcess as run/child.py's "serve" role (run/serving/child.py):
1. `replay` (replay.py): the traffic served eager, then compiled; the warm-up set derived.
2. `proof` (proof.py, a COPY of the replay's cache folder: a restarted server): the restart's
   figures, then the warm-up, then the traffic under `set_stance("fail_on_recompile")`.
3. `strategies` (strategies.py), one process each: static shapes, `dynamic=True`, `mark_dynamic`
   on the dimensions that vary, padding to the Traffic's buckets, regional compilation.
4. `host` (host.py): host against device time, `skip_guard_eval_unsafe`, threads in one process.
5. `aot` (aot.py): the ahead-of-time package built in one process and served in another.

Adding a part: a module with its `PART` (its name, parent function, needs, when, weight, cache
start and the processes it starts with what each does in its child), one line in `PARTS`, and
where its results join the section (section.py `build`). The section is one `done` event (phase
"serving"); each failure (a part's process, or a request the traffic or the model could not serve)
one `failed` event: the report's errors, exit 4.

Torch-free: the parent imports it.
"""

from __future__ import annotations

import time

from ...report.events import Event
from ..stages import Run, run_stages
from . import aot, generate, generate_proof, generate_strategies, host, proof, replay, strategies
from .part import TRAINED, Part, Serve, Serving
from .section import asked, build

PARTS: tuple[Part, ...] = (
    *(replay.PART, proof.PART, strategies.PART, host.PART, aot.PART),
    # a Generation's parts (issue 60): `Part.generation`; a run runs its kind's (`Serving.served`)
    *(generate.PART, generate_proof.PART, generate_strategies.PART),
)


def process(name: str) -> Serve:
    """What the process `name` (ServeSpec.part) does in its child, from the part that starts it."""
    for part in PARTS:
        if name in part.serves:
            return part.serves[name]
    raise ValueError(f"unknown serving process {name!r}")


def stage(run: Run, workload: dict | None) -> None:
    """The serving section's events, added to `run` (run/launcher.py's serving stage, once a
    traffic is asked for). `workload`: the cold process's environment record of the workload."""
    ask = asked(run.options, workload)
    assert ask is not None  # the launcher's stage runs only when a traffic is asked for
    t0 = time.monotonic()
    how = {"questions": run.questions, "workdir": run.workdir, "deadline": run.deadline}
    serving = Serving(run.target, run.options, prog=run.prog, ask=ask, parts=PARTS, **how)
    run_parts(serving)
    seconds = time.monotonic() - t0
    data = build(serving).to_dict()  # the event carries JSON, as every phase's does
    run.events.append(Event(event="done", phase="serving", seconds=seconds, data=data))
    for f in serving.failures:
        error = {"message": f["message"], "where": None}
        run.events.append(Event(event="failed", phase=f["phase"], error=error))


def run_parts(serving: Serving) -> None:
    """The parts of the asked kind in turn (run/stages.py's loop, `Serving.served`), each within
    its share of the time left; none for a TrainStep, which is trained, not served."""
    if serving.ask.kind == "train":
        serving.not_measured["serving"] = TRAINED
        return
    run_stages(serving.served, serving)
