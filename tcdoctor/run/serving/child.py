"""A serving part's process, run/child.py's "serve" role: the part's process its ServeSpec names
(run/serving/__init__.py `process`), on the target's traffic.

run/child.py has set the cache folder, armed faulthandler and set the thread count before torch was
imported; here the target is loaded (its build() timed: the restart's build_s), the part's
ServeContext built (probes/traffic_replay.py) and the process's function run. A failure of the part
(an exception, a TrainStep given a traffic) is one `failed` event and an `end` that is not ok: the
parent makes it one line of the report (run/serving/part.py), the rest of the section kept.
"""

from __future__ import annotations

import time
from typing import Any

from ...report.events import Event
from ..spec import ChildSpec, ServeSpec
from .part import TRAINED


def serve(spec: ChildSpec, sink: Any, imported_unix: float) -> int:
    """Run the part's process; `imported_unix`: when torch's import ended (the restart's import)."""
    from ...target.userframes import describe_exception
    from ..runner import load_target
    from . import process

    part = spec.serve
    assert part is not None  # ChildSpec gives the serve role its ServeSpec
    spawn: dict = {"started_unix": part.started_unix, "import_s": imported_unix - part.started_unix}
    t0 = time.time()
    loaded = load_target(spec.target, sink)
    if isinstance(loaded, int):
        return loaded
    spawn["build_s"] = time.time() - t0
    workload, rebuild = loaded
    phase = f"serving {part.part}"
    if workload.kind == "train":
        sink(Event(event="failed", phase=phase, error={"message": TRAINED}))
        sink(Event(event="end", ok=False))
        return 0
    try:
        process(part.part)(_context(spec, part, workload, rebuild, sink), part, spawn)
    except Exception as exc:  # noqa: BLE001 - the part's failure is one line in the report
        sink(Event(event="failed", phase=phase, error=describe_exception(exc)))
        sink(Event(event="end", ok=False))
        return 0
    sink(Event(event="end", ok=True))
    return 0


def _context(spec: ChildSpec, part: ServeSpec, workload: Any, rebuild: Any, sink: Any) -> Any:
    """The part's ServeContext: the workload, fresh copies of it, the traffic, its deadline."""
    from ...probes import calls
    from ...probes.traffic_replay import ServeContext
    from ...target.pristine import Pristine
    from ...target.traffic import from_workload

    device = calls.detect(workload.model, workload.call_args)
    workload.device_type = device.type
    left = part.budget_s - (time.time() - part.started_unix) - 1.0
    return ServeContext(
        workload=workload,
        fresh=Pristine(workload, rebuild).fresh,
        traffic=workload.traffic or from_workload(workload),
        n=part.requests,
        options=spec.options,
        device=device,
        deadline=time.monotonic() + left,
        sink=sink,
        target=spec.target,
        files=part.files,
    )
