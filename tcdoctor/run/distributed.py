"""Parent side of a distributed analysis: the rank processes run under torch.distributed.run.

`tcdoctor analyze --nproc N TARGET` starts `python -m torch.distributed.run --nproc-per-node N
[--standalone | --nnodes .. --node-rank .. --rdzv-endpoint ..] -m tcdoctor.run.child SPEC`: PyTorch's
own launcher and rendezvous, one analysis process per rank (run/rank.py). Two launches:
- cold: every rank with an empty inductor cache of its own (cache/rank{R}) runs the cold child's
  phases (environment, eager, graph breaks, compile, runtime, numerics, recompiles);
- warm: a second launch against the same per-rank cache dirs runs the warm compile and memory.
Each rank streams its phase events to rank{R}.events (fsynced), so a crash, hang or kill of one
rank keeps every finished phase of every rank. One single-process report is assembled per rank;
the report returned is the lowest rank's, with the `distributed` section (report/distributed.py)
and every rank's errors, named by rank. The two launches and the report are `STAGES`, run by
run/stages.py's one loop, as a single-process analysis's stages are (the warm launch's `when` and
budget say why it did not run: the report's `warm_not_measured`).
"""

from __future__ import annotations

import copy
import dataclasses
import glob
import os
import re
import signal
import sys
import time
from typing import Any

from ..checks.questions import Questions
from ..errors import EXIT_USAGE, ChildFailed
from ..options import Options
from ..report import distributed as dsec
from ..report.events import Event
from ..report.model import ErrorEntry, Report
from ..report.sections import Distributed, RankRow
from ..target.userframes import where_str
from ..verdict import with_verdict
from . import stages
from .assemble import assemble
from .process import (
    OUTPUT_TAIL_CHARS,
    ChildProcess,
    done,
    exited_message,
    fatal_event_error,
    finished,
    measured,
    stack_dump_after,
    stopped_at,
    timed_out_message,
)
from .spec import RANK_PLACEHOLDER, ChildSpec, RankLaunch
from .stages import Run, Stage, Where
from .stream import read_events

TERM_GRACE_S = 5.0
_ROOT_RANK = re.compile(
    r"Root Cause.*?rank\s*:\s*(?P<rank>\d+).*?exitcode\s*:\s*(?P<code>-?\d+)", re.S
)


def torchrun_command(options: Options, spec_path: str) -> list[str]:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(options.nproc)]
    if options.nnodes > 1 or options.rdzv_endpoint:
        cmd += ["--nnodes", str(options.nnodes)]
        if options.node_rank is not None:
            cmd += ["--node-rank", str(options.node_rank)]
        if options.rdzv_endpoint:
            cmd += ["--rdzv-endpoint", options.rdzv_endpoint]
        if options.rdzv_backend:
            cmd += ["--rdzv-backend", options.rdzv_backend]
    else:
        cmd += [
            "--standalone"
        ]  # a free port of its own: never collides with another job on this machine
    return cmd + ["--max-restarts", "0", "-m", "tcdoctor.run.child", spec_path]


class Launch(ChildProcess):
    """One torchrun launch: its spec (one ChildSpec every rank reads, run/spec.py), its ranks'
    files, how it ended."""

    def __init__(
        self,
        name: str,
        target: str,
        options: Options,
        workdir: str,
        deadline: float,
        trace_dir: str | None,
        questions: Questions = Questions(),
    ):
        """`questions`: what a gate asks of the timing (run/pipeline.py), in every rank's spec."""
        self.name, self.options = name, options
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        remaining = deadline - time.monotonic()
        rank_file = os.path.join(self.dir, f"rank{RANK_PLACEHOLDER}")  # each rank fills in its RANK
        self.spec = ChildSpec(
            target=target,
            role="rank",
            options=options,
            cache_dir=os.path.join(workdir, "cache", f"rank{RANK_PLACEHOLDER}"),
            events_path=rank_file + ".events",
            stacks_path=rank_file + ".stacks",
            dump_after_s=stack_dump_after(deadline, margin_s=3.0, min_left_s=5),
            distributed=RankLaunch(
                process=name,
                backend=options.dist_backend,
                timeout_s=options.pg_timeout_s,
                deadline_unix=time.time() + max(1.0, remaining - 2.0),
                pid_path=rank_file + ".pid",
                questions=questions,
            ),
        )
        spec_path = os.path.join(self.dir, "spec.json")
        super().__init__(
            torchrun_command(options, spec_path),
            self.spec,
            spec_path,
            os.path.join(self.dir, "torchrun.log"),
            trace_dir=os.path.join(trace_dir, name) if trace_dir else None,
            keep_user_trace=False,
            term_grace_s=TERM_GRACE_S,
        )

    def ranks(self) -> list[int]:
        found = {
            int(m.group(1))
            for p in glob.glob(os.path.join(self.dir, "rank*.events"))
            if (m := re.search(r"rank(\d+)\.events$", p))
        }
        if self.options.nnodes == 1 or self.options.node_rank is not None:
            first = (self.options.node_rank or 0) * self.options.nproc
            found |= set(range(first, first + self.options.nproc))
        return sorted(found)

    def events(self, rank: int) -> list[Event]:
        return read_events(os.path.join(self.dir, f"rank{rank}.events"))

    def kill(self, timed_out: bool = True) -> None:
        """torchrun first (it stops its workers), then whatever is left, by the pids the ranks wrote."""
        super().kill(timed_out)
        for pid_file in glob.glob(os.path.join(self.dir, "rank*.pid")):
            try:
                with open(pid_file) as fh:
                    pid = int(fh.read().strip())
                os.killpg(
                    pid, signal.SIGKILL
                )  # each worker leads a session of its own (torchrun starts them so)
            except (OSError, ValueError):
                pass

    def finish(self) -> tuple[dict[int, list[Event]], dict[int, dict]]:
        """Every rank's events, and a failure record for each rank that did not finish."""
        rc = self.exit_code()
        log = self.log_tail(60)
        root = _ROOT_RANK.search(log)
        root_rank, root_code = (int(root["rank"]), int(root["code"])) if root else (None, None)
        events, failures = {}, {}
        for rank in self.ranks():
            evs = self.events(rank)
            events[rank] = evs
            if finished(evs):
                continue
            phase, where = stopped_at(evs, os.path.join(self.dir, f"rank{rank}.stacks"))
            if self.timed_out:
                msg = timed_out_message(self.options.timeout_s, phase, where)
            elif root_rank == rank and root_code is not None:
                msg = exited_message(root_code, phase, where)
            elif root_rank is not None:
                msg = f"stopped by torchrun after rank {root_rank} failed, during phase '{phase}'"
            else:
                msg = f"the analysis process ended without finishing (torchrun exit code {rc}) during phase '{phase}'{where_str(where)}"
            failure = {
                "phase": phase,
                "message": f"rank {rank}: {msg}",
                "where": where,
                "rank": rank,
            }
            if root_rank == rank or root_rank is None:
                failure["output_tail"] = log[-OUTPUT_TAIL_CHARS:]
            failures[rank] = failure
        return events, failures


def _shown(events: list[Event]) -> list[Event]:
    """Progress shows the lowest rank's phases; its own bookkeeping records are not phases."""
    return [ev for ev in events if ev.phase not in ("rank", "ddp")]


def _fatal(cold: dict[int, list[Event]]) -> None:
    """A rank whose target or eager call failed: the same one-line error as a single-process run."""
    for rank, evs in sorted(cold.items()):
        error = fatal_event_error(evs, rank)
        if error:
            raise error


@dataclasses.dataclass
class Launches(Run):
    """A distributed analysis's state: `Run`'s, and its two launches' ranks' events and failures."""

    cold: Launch | None = None
    cold_events: dict[int, list[Event]] = dataclasses.field(default_factory=dict)
    warm_events: dict[int, list[Event]] = dataclasses.field(default_factory=dict)
    by_rank: dict[int, dict] = dataclasses.field(default_factory=dict)  # each rank's failure
    warm_failures: dict[int, dict] = dataclasses.field(default_factory=dict)


def _launch(run: Launches, name: str) -> tuple[Launch, dict[int, list[dict]], dict[int, dict]]:
    """One torchrun launch, waited on with the lowest rank's phases on the progress line: its
    ranks' events and failures."""
    trace = os.path.abspath(run.options.torch_trace) if run.options.torch_trace else None
    launch = Launch(name, run.target, run.options, run.workdir, run.deadline, trace, run.questions)

    def show() -> None:
        ranks = launch.ranks()
        if ranks:
            run.prog.feed(name, _shown(launch.events(ranks[0])))
        run.prog.tick()

    launch.wait(run.deadline, show if run.prog.enabled else None)
    events, failures = launch.finish()
    return launch, events, failures


def _cold(run: Launches) -> None:
    """The cold launch: every rank with an empty cache of its own; a fatal record in any rank, or
    no rank started, ends the analysis (one line)."""
    run.cold, run.cold_events, run.by_rank = _launch(run, "cold")
    if run.cold.ranks():
        run.prog.feed("cold", _shown(run.cold_events.get(run.cold.ranks()[0], [])))
    _fatal(run.cold_events)
    if not any(run.cold_events.values()):
        raise ChildFailed(
            f"torch.distributed.run started no rank: {run.cold.log_tail(8)}", EXIT_USAGE
        )


def _compiled(run: Launches) -> bool:
    return all(done(evs, "compile") is not None for evs in run.cold_events.values())


def _warm_when(run: Launches) -> str | None:
    """Why the warm launch does not run (the report's `warm_not_measured`), None when it runs."""
    if not run.options.warm:
        return "--no-warm"
    return None if _compiled(run) else "not every rank finished its compile phase"


def _warm(run: Launches) -> None:
    """The warm launch: the same per-rank cache folders again, in fresh processes."""
    _, run.warm_events, run.warm_failures = _launch(run, "warm")


def _report(run: Launches) -> None:
    """One report per rank; the lowest rank's, with the `distributed` section and every rank's
    errors, is the analysis's."""
    rows, reports = [], {}
    for rank in sorted(run.cold_events):
        evs = list(run.cold_events[rank]) + measured(run.warm_events.get(rank, []))
        fails = [f for f in (run.by_rank.get(rank), run.warm_failures.get(rank)) if f]
        shown = [ev for ev in evs if ev.phase not in ("rank", "ddp")]
        rep = assemble(run.target, run.options.to_dict(), shown + run.events, fails + run.failures)
        not_warm = run.skipped.get("warm")
        if not_warm is not None and rep.compile.warm_s is None:
            rep.compile.warm_not_measured = not_warm
        info = dsec.RankInfo.from_dict(done(evs, "rank") or {"rank": rank})
        info.finished = (
            any(ev.event == "end" for ev in run.cold_events[rank]) and rank not in run.warm_failures
        )
        reports[rank] = rep
        rows.append(dsec.rank_row(rep, info, done(run.cold_events[rank], "ddp")))
    base_rank = min(reports)
    base = reports[base_rank]
    base.errors = _rank_errors(reports)
    base.distributed = _section(run, rows, base_rank)
    run.report = with_verdict(base)


def _section(run: Launches, rows: list[RankRow], base_rank: int) -> Distributed:
    """The `distributed` section: every rank's row, the process group, the launcher."""
    options = run.options
    info0 = dsec.RankInfo.from_dict(done(run.cold_events[base_rank], "rank"))
    assert run.cold is not None  # the cold stage ran: the report needs it
    return dsec.section(
        rows,
        info0.world_size,
        info0.backend,
        options.pg_timeout_s or (600.0 if info0.backend == "nccl" else 1800.0),
        timeout_source="--pg-timeout"
        if options.pg_timeout_s
        else f"torch's default for {info0.backend}",
        analysis_pg_timeout_s=info0.pg_timeout_s,
        launcher=" ".join(run.cold.command[1:-1]) + " SPEC",
        node_rank=options.node_rank,
        nnodes=options.nnodes,
        nproc_per_node=options.nproc,
        report_rank=base_rank,
        not_measured={
            "profile": "not run in distributed analyses (time-sized chunks would give ranks different call counts)",
            "strategies": "compile strategies are compared in single-process runs only",
        },
    )


# The distributed analysis, stage by stage (run/stages.py runs them in order, as a single-process
# analysis's); a stage that adds events or failures to the run adds them to every rank's report
STAGES: tuple[Stage, ...] = (
    Stage("cold", Where.RANKS, _cold),
    Stage("warm", Where.RANKS, _warm, needs=("cold",), min_left_s=5.0, when=_warm_when),
    Stage("report", Where.PARENT, _report, needs=("cold",)),
)


def analyze_distributed(target: str, options: Options, **how: Any) -> tuple[Report, int]:
    """`STAGES`: both launches and the lowest rank's report with the `distributed` section. `how`:
    launcher.analyze_target's keep_dir, progress and questions (check TARGET's, checks/questions.py,
    which go to every rank in its spec: RankLaunch.questions)."""
    return stages.analyze(STAGES, Launches, target, options, prefix="tcdoctor-dist-", **how)


def _rank_errors(reports: dict[int, Report]) -> list[ErrorEntry]:
    """Every rank's errors in one list, each carrying its rank and naming it in the message."""
    errors = []
    for rank in sorted(reports):
        for e in map(copy.deepcopy, reports[rank].errors):
            e.rank = rank
            if not str(e.message or "").startswith(f"rank {rank}:"):
                e.message = f"rank {rank}: {e.message}"
            errors.append(e)
    return errors
