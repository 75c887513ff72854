"""One analysis, however it is asked for: `tcdoctor analyze`/`check TARGET`/`sweep` (cli.py, sweep/)
and `tcdoctor.analyze(...)` (api.py) all call `analyze` here, so they run the same steps in the
same order and give the same report.

Method. A target string (`path.py:function`) is analysed in child processes: one process at a
time under run/launcher.py, or one per rank under torch.distributed.run (run/distributed.py) when
`Options.distributed` (nproc > 1 or nnodes > 1). Each is a list of stages run by the same loop
(run/stages.py), which first checks the target before any child starts (`stages.begin`:
`target.load.precheck`, a missing file or function is one line, exit 2). Around the run: the TORCH_TRACE folders are emptied of an earlier run's logs first and
the new logs attached (tlparse) after (run/tlparse.py). A model object (`Workload`, `TrainStep`)
is analysed in this process (`_in_process`: no isolation, no warm-cache figure). Either way the
verdict is then re-derived for `expected_calls` when given (the break-even horizon), and a child's
fatal record becomes its error by `process.fatal_event_error`, the one mapping (exit 2 for a target
that cannot be used, 3 for the user's code raising before anything was measured).

Pitfalls. The exit code returned is the analysis's (0 complete, 4 a phase failed); a fatal record
raises instead, so a caller that wants the row of a failed target (sweep) catches TcdoctorError.
`questions` (checks/questions.py: check --min-speedup, --max-slowdown) reach the single-process
launcher, whose extra timing processes must decide them, and the distributed launch, whose ranks
are handed them in their spec (a distributed run times no extra processes).
"""

from __future__ import annotations

import os
import tempfile

import click

from ..checks.questions import Questions
from ..errors import EXIT_INCOMPLETE, EXIT_OK, OptionError
from ..options import Options
from ..report.model import Report
from ..target.workload import TrainStep, Workload
from .process import fatal_event_error


def analyze(
    target: str | Workload | TrainStep,
    options: Options,
    *,
    expected_calls: int | None = None,
    questions: Questions = Questions(),
    progress: bool = False,
) -> tuple[Report, int]:
    """The report of `target` under `options` and its exit code (0 complete, 4 incomplete).

    `expected_calls`: the calls the model will serve (the verdict's break-even horizon);
    `questions`: what a gate will judge, which the timed processes must decide; `progress`: each
    phase on stderr as it finishes (child processes only). Raises a TcdoctorError (one line, its exit code) when nothing could be
    measured."""
    if isinstance(target, str):
        report, code = _in_children(target, options, questions, progress)
    else:
        report = _in_process(target, options)
        code = EXIT_INCOMPLETE if report.errors else EXIT_OK
    if expected_calls:
        from ..verdict import with_verdict

        report = with_verdict(report, expected_calls=expected_calls)
    return report, code


def _in_children(
    target: str, options: Options, questions: Questions, progress: bool
) -> tuple[Report, int]:
    """Single-process or distributed, with the TORCH_TRACE folders prepared before and attached after."""
    from . import distributed, launcher
    from .tlparse import attach, prepare

    prepare(options.torch_trace)
    if options.distributed:
        report, code = distributed.analyze_distributed(
            target, options, progress=progress, questions=questions
        )
    else:
        report, code = launcher.analyze_target(
            target, options, progress=progress, questions=questions
        )
    attach(report, options)
    return report, code


def check_backend(name: str) -> None:
    """A backend name torch.compile knows, in this process (a target string's backend is looked up
    in its child, after the user's module has registered its own)."""
    from torch._dynamo.backends.registry import lookup_backend

    try:
        lookup_backend(name)
    except Exception:  # noqa: BLE001 - InvalidBackend; private module
        raise OptionError(
            f"option backend (--backend) takes a torch.compile backend registered in this process "
            f"(torch._dynamo.list_backends(exclude_tags=())), got {name!r}"
        ) from None


def _in_process(workload: Workload | TrainStep, opts: Options) -> Report:
    """The in-process analysis (the IN_PROCESS phases of report/phases/) with its own inductor cache folder;
    Dynamo's state, the thread count and TORCHINDUCTOR_CACHE_DIR are put back afterwards."""
    import torch

    check_backend(opts.backend)

    from ..probes import dynamo_state
    from ..report.phases import IN_PROCESS
    from . import isa_seed
    from .assemble import assemble
    from .runner import PhaseRunner
    from .stream import ListSink

    sink = ListSink()
    old_threads = torch.get_num_threads()
    old_cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="tcdoctor-") as cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
        isa_seed.seed_cold(cache, opts)  # --isa-probe none: the ISA probe from the probed folder
        if opts.threads is not None:  # else this process's own setting, as the user runs it
            torch.set_num_threads(opts.threads)
        try:
            PhaseRunner(workload, opts, sink).run(IN_PROCESS)
        finally:
            dynamo_state.fresh()
            torch.set_num_threads(old_threads)
            if old_cache is None:
                os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
            else:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = old_cache
    error = fatal_event_error(sink.events)
    if error:
        raise error
    data_opts = opts.to_dict()
    data_opts["in_process"] = True
    report = assemble(workload.name or type(workload.model).__name__, data_opts, sink.events, [])
    report.compile.warm_not_measured = "in-process analysis: a warm-cache compile needs a fresh process (analyse a path.py:function target)"
    return report


def echo(text: str, err: bool = False, nl: bool = True) -> None:
    """One line (or `nl=False`: part of one) for the user, on stdout or stderr (`err`): what the
    commands above the pipeline (sweep) print, without importing click themselves."""
    click.echo(text, err=err, nl=nl)
