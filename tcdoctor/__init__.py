"""tcdoctor: should you torch.compile this model? Measured answers, with the evidence."""

from __future__ import annotations

__version__ = "0.1.0"

from .workload import TrainStep, Workload  # noqa: E402

__all__ = ["Workload", "TrainStep", "analyze", "Report", "__version__"]


def __getattr__(name: str):
    # Lazy: `tcdoctor report`/`check --report` must not pay for importing torch.
    if name == "Report":
        from .report import Report

        return Report
    if name == "analyze":
        from .api import analyze

        return analyze
    raise AttributeError(name)
