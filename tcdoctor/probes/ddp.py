"""DDP's optimizer in Dynamo: which mode split the graphs, with what bucket cap, into how many subgraphs.

With `torch._dynamo.config.optimize_ddp` in its default mode ("ddp_optimizer"), Dynamo splits each
graph it compiles inside a `DistributedDataParallel` forward at DDP's bucket boundaries, so that
gradient all-reduces of one bucket can overlap the backward of the next; every piece is a graph of
its own for the backend. Dynamo says how many it made on logger `torch._dynamo.backends.distributed`
at INFO: "DDPOptimizer used bucket cap %s and created %d buckets" (one record per compiled graph).
That record is the count reported here, taken per analysis phase; nothing is inferred.

The subgraphs are DDP's split of Dynamo's graphs, never graphs of their own: the graph_breaks
phase traces with DDPOptimizer off (its graph count is Dynamo's `unique_graphs`), so it logs no
split; the compile phase and later ones run DDPOptimizer as the user's job does, and the count at
the compile phase's first call is the one reported.
"""

from __future__ import annotations

import logging
import re
from typing import Any

LOGGER = "torch._dynamo.backends.distributed"
_CREATED = re.compile(r"DDPOptimizer used bucket cap (?P<cap>\d+) and created (?P<n>\d+) buckets")


class DdpLog(logging.Handler):
    """Attached for the whole rank process; `phase` is set by the caller as phases start."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.phase = "load"
        self.records: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            m = _CREATED.search(record.getMessage())
            if m:
                self.records.append(
                    {
                        "phase": self.phase,
                        "bucket_cap_bytes": int(m["cap"]),
                        "subgraphs": int(m["n"]),
                    }
                )
        except Exception:  # noqa: BLE001 - a log record must never break the analysis
            pass


def attach() -> DdpLog:
    """Listen to DDPOptimizer's INFO record without letting it reach the terminal."""
    handler = DdpLog()
    logger = logging.getLogger(LOGGER)
    # The logger is registered with torch._logging ("ddp"): every set_logs() (tcdoctor's probes call it)
    # resets its level to WARNING. Asking the instance instead of its level keeps INFO records coming,
    # the way torch keeps its own trace log enabled. Handlers it does not own stay attached.
    default = logger.isEnabledFor
    logger.isEnabledFor = lambda level: level >= logging.INFO or default(level)  # type: ignore[method-assign]
    logger.addHandler(handler)
    return handler


def _find_ddp(obj: Any) -> Any:
    from torch.nn.parallel import DistributedDataParallel

    if isinstance(obj, DistributedDataParallel):
        return obj
    fn_self = getattr(obj, "__self__", None)  # a bound method of a wrapped model
    if isinstance(fn_self, DistributedDataParallel):
        return fn_self
    return None


def wrapper_of(model: Any) -> dict:
    """What wraps the model: DDP (with its bucket cap), FSDP, or nothing."""
    ddp = _find_ddp(model)
    if ddp is not None:
        cap = getattr(ddp, "bucket_bytes_cap", None)
        return {
            "wrapper": "DistributedDataParallel",
            "bucket_cap_bytes": cap,
            "bucket_cap_mb": cap / (1024 * 1024) if cap else None,
            "find_unused_parameters": getattr(ddp, "find_unused_parameters", None),
            "static_graph": getattr(ddp, "static_graph", None),
        }
    names = {type(m).__name__ for m in model.modules()} if hasattr(model, "modules") else set()
    if names & {"FullyShardedDataParallel"} or any(n.startswith("FSDP") for n in names):
        return {"wrapper": "FullyShardedDataParallel"}
    return {"wrapper": None}


def summary(handler: DdpLog, model: Any) -> dict:
    """The DDP figures of one rank: mode, bucket cap, subgraphs at the first compiled call and per phase."""
    import torch._dynamo

    try:
        from torch._dynamo.utils import get_optimize_ddp_mode

        mode = get_optimize_ddp_mode()
    except Exception:  # noqa: BLE001 - private API
        mode = None
    first = [r for r in handler.records if r["phase"] == "compile"]
    by_phase: dict[str, int] = {}
    for r in handler.records:
        by_phase[r["phase"]] = by_phase.get(r["phase"], 0) + r["subgraphs"]
    caps = {r["bucket_cap_bytes"] for r in handler.records}
    return {
        "optimize_ddp": repr(torch._dynamo.config.optimize_ddp),
        "mode": mode,
        **wrapper_of(model),
        "logged_bucket_cap_bytes": sorted(caps)[0] if len(caps) == 1 else sorted(caps) or None,
        "subgraphs": sum(r["subgraphs"] for r in first) if first else None,
        "graphs_split": len(first),
        "subgraphs_by_phase": by_phase,
        "method": (
            "DDPOptimizer's own INFO record on logger torch._dynamo.backends.distributed ('used bucket cap B "
            "and created N buckets'), one per graph it split; subgraphs = N summed over the graphs of the "
            "compile phase's first compiled call"
        ),
    }
