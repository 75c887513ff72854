"""Python API for notebooks and tests: `tcdoctor.analyze(model, inputs) -> Report`.

Importing it (as `import tcdoctor` does, lazily) also installs the notebook hook: a Report renders
itself as HTML in Jupyter. The hook lives here, at the top, so the report data never imports a renderer.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from typing import Any

from .errors import OptionError
from .options import Options
from .report.model import Report
from .run.assemble import assemble
from .target.workload import TrainStep, Workload, coerce


def analyze(
    model: Any,
    inputs: Any = None,
    *,
    kwargs: dict | None = None,
    variants: tuple = (),
    compile_kwargs: dict | None = None,
    isolate: bool | None = None,
    progress: bool = False,
    **options: Any,
) -> Report:
    """Analyse a target string (``"path.py:build"``, in child processes) or a model object.

    A model object is analysed in this process (no isolation, no warm-cache figure: that
    needs a fresh process); Dynamo state is reset before and after. Options are the fields of
    ``Options`` (backend, mode, threads, timeout_s, budget_s, modes, ...), checked as the command
    line checks them: a bad value or an unknown name raises ``OptionError``, a ``ValueError``
    naming the option and what it takes. ``progress=True`` writes each phase to stderr as it
    finishes (target strings only: the in-process analysis has no children to poll).
    """
    opts = _options(options)
    if isinstance(model, str):
        from .run.launcher import analyze_target

        report, _ = analyze_target(model, opts, progress=progress)
        return report
    workload = (
        model
        if isinstance(model, (Workload, TrainStep))
        else coerce((model, () if inputs is None else inputs, kwargs or {}))
    )
    if variants:
        workload.variants = list(variants)
    if compile_kwargs:
        workload.compile_kwargs = dict(compile_kwargs)
    return _in_process(workload, opts)


def _options(options: dict[str, Any]) -> Options:
    """Options from keyword arguments; an unknown name is an OptionError listing the known ones."""
    known = [f.name for f in dataclasses.fields(Options)]
    unknown = [k for k in options if k not in known]
    if unknown:
        raise OptionError(
            f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
            f"(options: {', '.join(known)})"
        )
    return Options(**options)


def _check_backend(name: str) -> None:
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


def _in_process(workload: Workload, opts: Options) -> Report:
    import torch

    _check_backend(opts.backend)

    from .probes import dynamo_state
    from .report.phases import IN_PROCESS
    from .run.runner import PhaseRunner
    from .run.stream import ListSink

    sink = ListSink()
    old_threads = torch.get_num_threads()
    old_cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="tcdoctor-") as cache:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
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
    events = sink.events
    fatal = next((ev for ev in events if ev.get("fatal")), None)
    if fatal:
        from .errors import TcdoctorError
        from .target.userframes import where_str

        raise TcdoctorError(
            f"{fatal['error']['message']}{where_str(fatal['error'].get('where'))}",
            fatal.get("exit_code") or 3,
        )
    data_opts = opts.to_dict()
    data_opts["in_process"] = True
    report = assemble(workload.name or type(workload.model).__name__, data_opts, events, [])
    report.compile.warm_not_measured = "in-process analysis: a warm-cache compile needs a fresh process (analyse a path.py:function target)"
    return report


def _repr_html_(report: Report) -> str:
    """Jupyter's rich display of a Report: the HTML report as a fragment."""
    from .render.html import HtmlRenderer

    return HtmlRenderer(fragment=True).render(report)


Report._repr_html_ = _repr_html_  # type: ignore[attr-defined]
