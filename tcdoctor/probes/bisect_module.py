"""PyTorch's `CompilerBisector` on one module of a target, alone, in the process that runs this file:

    python -m tcdoctor.probes.bisect_module path/to/model.py:build block.total [--backend inductor]

The drift search (probes/drift.py) names a module; this narrows its drift to a backend, a
subsystem (a pass, a config change, the lowerings) and, for a bisected subsystem, the number of its
applications that first breaks it, as `torch._inductor.compiler_bisector.CompilerBisector.do_bisect`
reports. Method: one eager call of the model built by the target records the module's real inputs
(forward hooks, `drift.record`); the module's float64 copy gives the reference; each bisection step
resets Dynamo, compiles the module alone (the bisector picks the backend and disables subsystems) and
judges its output against eager and fp64 by the numerics rule (`drift.judge_module`). The last stdout line
is the JSON result. Pitfalls: each step is a compile (dozens for Inductor's lowerings), so it runs only
when asked; the bisector keeps its state in a temporary directory of its own.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from typing import Any

import torch

from ..target.load import load_with_rebuild
from . import calls, drift
from .numerics import to_fp64


def bisect(target: str, module: str) -> dict:
    workload, _ = load_with_rebuild(target)
    model = workload.model
    device = calls.detect(model, workload.call_args)
    rec = drift.record(model, lambda: calls.call(model, workload.call_args, workload, device))
    if module not in rec:
        return {"not_run": f"{module!r} was not called in the eager call"}
    args, kwargs, eager_out = rec[module]
    mod = model.get_submodule(module)
    with torch.no_grad():
        fp64 = copy.deepcopy(mod).to(torch.float64)(*to_fp64(args), **to_fp64(kwargs))

    def passes() -> bool:
        torch._dynamo.reset()
        with torch.no_grad():
            out = torch.compile(copy.deepcopy(mod))(*args, **kwargs)
        return bool(drift.judge_module(module, eager_out, out, fp64, workload.autocast)["passed"])

    from torch._inductor.compiler_bisector import CompilerBisector

    result = CompilerBisector.do_bisect(passes)
    if result is None:
        return {"verdict": "no backend or subsystem reproduces the drift alone"}
    blamed = {k: getattr(result, k, None) for k in ("backend", "subsystem", "bisect_number")}
    words = f"backend {blamed['backend']}" + (
        f", subsystem {blamed['subsystem']}" if blamed["subsystem"] else ""
    )
    info = str(getattr(result, "debug_info", None) or "")[:500]
    if blamed["bisect_number"] is not None and info and info != blamed["subsystem"]:
        words += f": {info} (application {blamed['bisect_number']})"
    return {"verdict": words, **blamed, "debug_info": info}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tcdoctor.probes.bisect_module")
    p.add_argument("target")
    p.add_argument("module")
    p.add_argument("--backend", default="inductor", help="the backend the analysis used")
    a = p.parse_args(argv)
    out: dict[str, Any] = bisect(a.target, a.module)
    out["command"] = drift.bisect_command(a.target, a.module, a.backend)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
