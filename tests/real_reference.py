"""What PyTorch itself records for a target, in a fresh process: the independent reference that the
real-model tests compare tcdoctor against.

``pytorch_counts(path)`` starts ``sys.executable`` on this file, which imports the target by path,
calls its build function, compiles the model with ``torch.compile(model, backend=...)`` and feeds it
the workload's inputs and then each variant once, in order. It counts what Dynamo's own loggers emit
(``torch._dynamo.guards.__recompiles``: one "Recompiling function ..." record per recompile;
``torch._dynamo.symbolic_convert.__graph_breaks``: one record per graph break) and reads
``torch._dynamo.utils.counters["graph_break"]``. Nothing from tcdoctor's probes is used; the target
itself may import tcdoctor for its Workload/TrainStep class, which is read only through attributes.

Calls follow tcdoctor's rules: the first call is ``model(*args, **kwargs)``; a tuple variant replaces the
positional args (same kwargs); a dict variant replaces the kwargs (same args); a callable variant is
called with the model and then the inputs are fed again. Calls run under ``torch.no_grad()`` unless the
workload has ``grad=True`` (a TrainStep-like spec with an optimizer runs its forward with grad too; only
the forward is fed, as the spec's ``inputs``/``kwargs``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

_MARK = "REAL_REFERENCE_JSON:"


def pytorch_counts(
    target_path: str, func: str = "build", backend: str = "eager", timeout: float = 600
) -> dict:
    """Run the target in a fresh subprocess and return PyTorch's own figures:
    ``{"recompiles": n, "graph_break_records": n, "counters_graph_break": n}``."""
    target_path = os.path.abspath(target_path)
    env = dict(os.environ)
    env.pop("TORCH_LOGS", None)  # our own set_logs decides what is logged
    env.setdefault("HF_HUB_OFFLINE", "1")
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), target_path, func, backend],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=os.path.dirname(target_path),
    )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(_MARK):
            return json.loads(line[len(_MARK) :])
    raise RuntimeError(
        f"reference run failed for {target_path}:{func} (rc={proc.returncode})\n"
        f"stdout tail:\n{proc.stdout[-2000:]}\nstderr tail:\n{proc.stderr[-4000:]}"
    )


# --------------------------------------------------------------------------------------- child side


def capture_graph_breaks() -> list[str]:
    """Collect Dynamo's graph-break log records from now on; returns the list they are appended to.

    ``set_logs()`` sets ``propagate=False`` on ``torch._dynamo``, so the handler goes there, alone."""
    import logging

    import torch

    records: list[str] = []

    class Grab(logging.Handler):
        def emit(self, record):
            if record.name.endswith("__graph_breaks"):
                records.append(record.getMessage())

    torch._logging.set_logs(graph_breaks=True)
    logger = logging.getLogger("torch._dynamo")
    for h in list(logger.handlers):
        logger.removeHandler(h)
    logger.addHandler(Grab())
    return records


def break_kind(message: str) -> str:
    """A graph-break record's short reason (the line before its ``Explanation:``)."""
    lines = [ln.strip() for ln in message.split("Graph Break Reason:", 1)[-1].splitlines()]
    for i, ln in enumerate(lines):
        if ln.startswith("Explanation:"):
            return [x for x in lines[:i] if x][-1]
    return lines[0]


def dynamo_figures(records: list[str]) -> dict:
    """What PyTorch recorded in this process: graph-break records and their kinds, the graph_break
    counter, unique graphs, compiled frames (CompilationMetrics entries) and their guards."""
    from torch._dynamo.utils import counters, get_compilation_metrics

    metrics = get_compilation_metrics()
    return {
        "records": len(records),
        "kinds": sorted(break_kind(m) for m in records),
        "graph_break_counter": sum(counters["graph_break"].values()),
        "graphs": counters["stats"]["unique_graphs"],
        "frames": len(metrics),
        "guards": sum(m.guard_count or 0 for m in metrics),
    }


def _load(target_path: str, func: str):
    import importlib.util

    folder = os.path.dirname(target_path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = "_real_reference_target_" + os.path.splitext(os.path.basename(target_path))[0]
    spec = importlib.util.spec_from_file_location(name, target_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return getattr(module, func)()


def _spec(result):
    """(model, args, kwargs, variants, grad) from what build() returned."""
    if isinstance(result, tuple):
        if len(result) == 2:
            model, args = result
            kwargs = {}
        elif len(result) == 3:
            model, args, kwargs = result
        else:
            raise TypeError(f"build() returned a tuple of {len(result)} items")
        variants, grad = [], False
    else:
        model = result.model
        args = getattr(result, "inputs", ())
        kwargs = getattr(result, "kwargs", None) or {}
        variants = list(getattr(result, "variants", None) or [])
        grad = bool(getattr(result, "grad", False))
        if (
            getattr(result, "optimizer", None) is not None
            or getattr(result, "train_step", None) is not None
        ):
            grad = True  # a training spec: its forward runs with autograd on
    if isinstance(args, list):
        args = tuple(args)
    elif not isinstance(args, tuple):
        args = (args,)
    return model, args, dict(kwargs or {}), variants, grad


def _child(target_path: str, func: str, backend: str) -> dict:
    import contextlib
    import logging

    import torch
    import torch._dynamo
    from torch._dynamo.utils import counters

    model, args, kwargs, variants, grad = _spec(_load(target_path, func))

    torch._dynamo.reset()
    counters.clear()
    torch._logging.set_logs(recompiles=True, graph_breaks=True)

    seen = {"recompiles": 0, "graph_break_records": 0}

    class Count(logging.Handler):
        def emit(self, record):
            if record.name == "torch._dynamo.guards.__recompiles":
                if "Recompiling function" in record.getMessage():
                    seen["recompiles"] += 1
            elif record.name == "torch._dynamo.symbolic_convert.__graph_breaks":
                seen["graph_break_records"] += 1

    handler = Count(level=logging.DEBUG)
    # set_logs() sets propagate=False on torch._dynamo, so a root handler would see nothing.
    logging.getLogger("torch._dynamo").addHandler(handler)

    compiled = torch.compile(model, backend=backend)
    calls = [(args, kwargs)]
    for variant in variants:
        if (
            callable(variant)
            and not isinstance(variant, (tuple, dict))
            and not isinstance(variant, torch.Tensor)
        ):
            calls.append(variant)
        elif isinstance(variant, dict):
            calls.append((args, dict(variant)))
        elif isinstance(variant, (tuple, list)):
            calls.append((tuple(variant), kwargs))
        else:  # a lone tensor
            calls.append(((variant,), kwargs))

    ctx = contextlib.nullcontext() if grad else torch.no_grad()
    with ctx:
        for call in calls:
            if callable(call):
                call(model)
                compiled(*args, **kwargs)
            else:
                a, k = call
                compiled(*a, **k)

    logging.getLogger("torch._dynamo").removeHandler(handler)
    return {
        "recompiles": seen["recompiles"],
        "graph_break_records": seen["graph_break_records"],
        "counters_graph_break": int(sum(counters["graph_break"].values())),
    }


if __name__ == "__main__":
    _path, _func, _backend = sys.argv[1], sys.argv[2], sys.argv[3]
    _result = _child(_path, _func, _backend)
    sys.stdout.flush()
    print(_MARK + json.dumps(_result), flush=True)
