"""Python API for notebooks and tests: `tcdoctor.analyze(model, inputs) -> Report`, and
`check(report, **limits)`, the gate's checks (tcdoctor/checks) as `tcdoctor check` judges them.

Importing it (as `import tcdoctor` does, lazily) also installs the notebook hook: a Report renders
itself as HTML in Jupyter. The hook lives here, at the top, so the report data never imports a renderer.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from .checks import check as check  # the gate in Python, as `tcdoctor check` judges
from .errors import OptionError
from .options import Options
from .report.model import Report
from .target.workload import TrainStep, Workload, coerce


def analyze(
    model: Any,
    inputs: Any = None,
    *,
    kwargs: dict | None = None,
    variants: tuple = (),
    compile_kwargs: dict | None = None,
    expected_calls: int | None = None,
    isolate: bool | None = None,
    progress: bool = False,
    **options: Any,
) -> Report:
    """Analyse a target string (``"path.py:build"``, in child processes) or a model object.

    Both go through the command line's own pipeline (run/pipeline.py `analyze`): a target string
    runs as `tcdoctor analyze` runs it, distributed under torch.distributed.run with
    ``nproc=2`` (one report per rank, the lowest rank's returned with the ``distributed``
    section), and a child's fatal record raises the same error (``UserCodeError`` when build()
    or the eager call raised, ``TargetError`` for a target that cannot be used). A model object is
    analysed in this process (no isolation, no warm-cache figure: that needs a fresh process);
    Dynamo state is reset before and after. Options are the fields of ``Options`` (backend, mode,
    threads, timeout_s, budget_s, modes, nproc, ...), checked as the command line checks them: a
    bad value or an unknown name raises ``OptionError``, a ``ValueError`` naming the option and
    what it takes. ``expected_calls`` re-derives the verdict for that horizon, as
    ``--expected-calls`` does. ``progress=True`` writes each phase to stderr as it finishes
    (target strings only: the in-process analysis has no children to poll).
    """
    from .run.pipeline import analyze as run_pipeline

    opts = _options(options)
    if not isinstance(model, str):
        model = _workload(model, inputs, kwargs, variants, compile_kwargs)
    report, _ = run_pipeline(model, opts, expected_calls=expected_calls, progress=progress)
    return report


def _workload(
    model: Any, inputs: Any, kwargs: dict | None, variants: tuple, compile_kwargs: dict | None
) -> Workload | TrainStep:
    """The Workload or TrainStep to analyse. A given one is copied (shallow: the same model) so that
    `variants` and `compile_kwargs`, and whatever the analysis sets on it, never change the caller's."""
    workload = (
        copy.copy(model)
        if isinstance(model, (Workload, TrainStep))
        else coerce((model, () if inputs is None else inputs, kwargs or {}))
    )
    if variants:
        workload.variants = list(variants)
    if compile_kwargs:
        workload.compile_kwargs = dict(compile_kwargs)
    return workload


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


def _repr_html_(report: Report) -> str:
    """Jupyter's rich display of a Report: the HTML report as a fragment."""
    from .render.html import HtmlRenderer

    return HtmlRenderer(fragment=True).render(report)


Report._repr_html_ = _repr_html_  # type: ignore[attr-defined]
