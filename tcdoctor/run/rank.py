"""One rank of a distributed analysis, inside a process started by torch.distributed.run.

The rank runs the same phases as the single-process cold (or warm) child, through the same
PhaseRunner, with three additions:
- the default process group is initialised before the target is loaded (gloo on CPU, NCCL on
  CUDA), so `build()` can wrap its model in DistributedDataParallel or FSDP as the user's own
  code does; its timeout is the smaller of the job's timeout and the time the analysis has left,
  so a rank that dies makes the others fail their collective instead of hanging past the deadline;
- a second, gloo group makes every rank take the same loop decisions in the time-bounded timing
  phase (`probes/timing.AGREE`) and lines ranks up before the compiled first call, so a model
  with a collective per call never waits for a rank that stopped calling. Each agreement carries
  its phase: ranks in different phases (one rank's compile failed, so it skips timing) stop
  agreeing and decide alone, instead of pairing unrelated collectives;
- DDPOptimizer's own log record is captured (`probes/ddp.py`) and reported with the phases.
File names carry the rank (RANK from torchrun): rank{R}.events, rank{R}.stacks, cache/rank{R};
what the rank reads is its ChildSpec (run/spec.py), the launch's own entries in `distributed` (among
them what a gate asks, `questions`: one launch times no extra processes, so no rank adds any).
"""

from __future__ import annotations

import datetime
import os
import time
from typing import Any

from ..errors import EXIT_INTERNAL
from ..report.distributed import RankInfo
from ..report.events import Event
from .spec import ChildSpec, RankLaunch

DEFAULT_TIMEOUT_S = 1800.0  # torch.distributed's default process-group timeout (default_pg_timeout)


def per_rank(spec: ChildSpec) -> ChildSpec:
    """The spec with its paths' {rank} filled in from torchrun's RANK (ChildSpec.for_rank)."""
    return spec.for_rank(os.environ.get("RANK", "0"))


class Rank:
    def __init__(self, launch: RankLaunch, sink: Any):
        import torch
        import torch.distributed as dist

        self.dist = dist
        self.rank = int(os.environ.get("RANK", "0"))
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.backend = launch.backend or ("nccl" if torch.cuda.is_available() else "gloo")
        if self.backend == "nccl":
            torch.cuda.set_device(self.local_rank)
        left = max(5.0, launch.deadline_unix - time.time())
        timeout = datetime.timedelta(seconds=min(launch.timeout_s or DEFAULT_TIMEOUT_S, left))
        if launch.pid_path:
            with open(launch.pid_path, "w") as fh:
                fh.write(str(os.getpid()))
        dist.init_process_group(self.backend, timeout=timeout)
        self.group = (
            dist.new_group(backend="gloo", timeout=timeout) if self.backend != "gloo" else None
        )
        self.broken: str | None = None
        self.phase = "load"
        from ..probes import ddp

        self.ddp_log = ddp.attach()
        self._sink = sink
        sink(
            Event(
                event="done",
                phase="rank",
                data=RankInfo(
                    rank=self.rank,
                    world_size=self.world_size,
                    local_rank=self.local_rank,
                    backend=self.backend,
                    pg_timeout_s=timeout.total_seconds(),
                    host=os.uname().nodename,
                    pid=os.getpid(),
                ).to_dict(),
            )
        )

    def sink(self, event: Event) -> None:
        """The events sink, noting which phase is running (for the DDP log and the agreements)."""
        if event.event == "start" and event.phase:
            self.phase = self.ddp_log.phase = event.phase
        self._sink(event)

    # -- agreement between ranks ------------------------------------------------
    def agree(self, value: Any, how: str) -> Any:
        """The value every rank takes: any/all of booleans, max of numbers; its own when ranks are out of step."""
        if self.broken or self.world_size == 1:
            return value
        import torch

        tag = _phase_tag(self.phase)
        mine = torch.tensor([float(tag), float(value)], dtype=torch.float64)
        everyone = [torch.zeros(2, dtype=torch.float64) for _ in range(self.world_size)]
        try:
            self.dist.all_gather(everyone, mine, group=self.group)
        except Exception as exc:  # noqa: BLE001 - a rank died or timed out: decide alone from now on
            self.broken = (
                f"agreement failed in phase {self.phase}: {type(exc).__name__}: {str(exc)[:200]}"
            )
            return value
        tags = {int(t[0].item()) for t in everyone}
        if tags != {tag}:
            self.broken = (
                f"ranks out of step in phase {self.phase} (another rank is in a different phase)"
            )
            return value
        vals = [t[1].item() for t in everyone]
        if how == "any":
            return any(vals)
        if how == "all":
            return all(vals)
        return type(value)(max(vals))

    def line_up(self) -> None:
        """All ranks start the compiled first call together (a barrier that a dead rank cannot hang)."""
        self.agree(True, "all")

    def install(self) -> None:
        from ..probes import timing

        timing.AGREE = self.agree

    def finish(self, workload: Any) -> None:
        from ..probes import ddp

        try:
            data = ddp.summary(self.ddp_log, workload.model if workload is not None else None)
        except Exception as exc:  # noqa: BLE001
            data = {"error": f"{type(exc).__name__}: {exc}"}
        data["agreement"] = self.broken or "every timing decision agreed across ranks"
        self._sink(Event(event="done", phase="ddp", data=data))
        try:
            self.dist.destroy_process_group()
        except Exception:  # noqa: BLE001 - the process exits right after
            pass


def _phase_tag(phase: str) -> int:
    return sum((i + 1) * ord(c) for i, c in enumerate(phase)) % 1_000_003


def run(spec: ChildSpec, sink: Any, options: Any) -> int:
    """The rank's whole life: process group, load, phases, DDP summary, teardown."""
    launch = spec.distributed
    assert launch is not None  # ChildSpec gives every rank spec its launch
    from ..report.phases import COLD, WARM
    from .runner import PhaseRunner, load_target

    sink(Event(event="start", phase="rank"))
    try:
        rank = Rank(launch, sink)
    except Exception as exc:  # noqa: BLE001 - rendezvous or backend failure: say so, fatal
        from ..target.userframes import describe_exception

        # not the user's code (none has run yet): tcdoctor's setup or the environment failed
        sink(
            Event(
                event="failed",
                phase="rank",
                error=describe_exception(exc),
                fatal=True,
                exit_code=EXIT_INTERNAL,
            )
        )
        return EXIT_INTERNAL
    rank.install()
    sink = rank.sink
    loaded = load_target(spec.target, sink)
    if isinstance(loaded, int):
        return loaded
    workload, rebuild = loaded
    process = WARM if launch.process == "warm" else COLD
    skip = {
        "profile": (
            "not run in distributed analyses: the profiler phase sizes its chunks from time measured on "
            "each rank, so ranks would make different numbers of calls"
        ),
        # issue 36: each runs only where its own rank's figures call for it, so ranks could diverge
        "memory_graphs": "not run in distributed analyses: ranks could make different numbers of calls",
        "drift": "not run in distributed analyses: ranks could make different numbers of calls",
    }
    runner = PhaseRunner(workload, options, sink, before_compile=rank.line_up, rebuild=rebuild)
    ok = runner.run(process, skip=skip)
    rank.finish(workload)
    sink(Event(event="end", ok=ok))
    return 0 if ok else 3
