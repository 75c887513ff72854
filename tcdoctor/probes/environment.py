"""The environment phase: what the analysis ran on and what it analysed, stated with every report.

Versions, device, threads (and where the thread count came from), backend and mode, the workload's
kind, inputs and variants, and the copies' fidelity: this phase runs the fidelity check first
(`PhaseRunner.check_copies`, before anything is measured), so a hang or crash in the first call of
the user's code is reported here, with the stack.

Pitfall: the thread count is this process's; a child pins it with --threads or OMP_NUM_THREADS, the
in-process API keeps the user's own setting (`threads_source` says which).
"""

from __future__ import annotations

import os
import platform

import torch

from ..target.userframes import python_version
from .context import PhaseContext
from .recompiles import describe_call, describe_variant


def threads_source(threads: int | None, in_child: bool) -> str:
    """Where the analysis's intra-op thread count came from (the report states it with the figure)."""
    if threads is not None:
        return "--threads"
    if os.environ.get("OMP_NUM_THREADS"):
        return "OMP_NUM_THREADS"
    return "torch's default in a fresh process" if in_child else "this process's own setting"


def phase_environment(ctx: PhaseContext) -> dict:
    ctx.check_copies()
    w, device = ctx.workload, ctx.device
    dname = (
        torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else (platform.processor() or platform.machine())
    )
    return {
        "torch": torch.__version__,
        "python": python_version(),
        "platform": platform.platform(terse=True),
        "device": str(device),
        "device_name": dname,
        "cuda": torch.version.cuda if device.type == "cuda" else None,
        "threads": torch.get_num_threads(),
        "threads_source": threads_source(ctx.options.threads, ctx.owns_original),
        "cpu_count": os.cpu_count(),
        "backend": ctx.options.backend,
        "mode": ctx.options.mode or "default",
        "compile_kwargs": {k: repr(v) for k, v in w.compile_kwargs.items()},
        "grad": w.grad,
        "autocast": str(w.autocast).replace("torch.", "") if w.autocast is not None else None,
        "state": ctx.pristine.method,
        "state_check": ctx.pristine.check,
        "workload": {
            "kind": w.kind,
            "name": w.name,
            "model": type(w.model).__name__,
            "subject": ctx.label,
            "inputs": describe_call(w.call_args),
            "variants": [describe_variant(i, v, w) for i, v in enumerate(w.variants, 1)],
            "parameters": sum(p.numel() for p in w.model.parameters())
            if isinstance(w.model, torch.nn.Module)
            else None,
            # only when the Workload gives one: what run/launcher.py's serving stage reads to start the serving section
            **({"traffic": w.traffic.info()} if getattr(w, "traffic", None) is not None else {}),
            # a Generation (target/generation.py): the serving section's generation parts run
            **({"generation": w.generation_info()} if hasattr(w, "generation_info") else {}),
        },
    }
