"""tcdoctor: should you torch.compile this model? Measured answers, with the evidence."""

from __future__ import annotations

from .target.generation import Generation
from .target.traffic import Traffic
from .target.workload import TrainStep, Workload
from .version import __version__

__all__ = ["Workload", "TrainStep", "Traffic", "Generation", "analyze", "Report", "__version__"]


def __getattr__(name: str):
    # Lazy: `tcdoctor report`/`check --report` must not pay for importing torch.
    if name == "Report":
        from . import api  # noqa: F401 - installs the notebook hook on Report
        from .report.model import Report

        return Report
    if name == "analyze":
        from .api import analyze

        return analyze
    raise AttributeError(name)
