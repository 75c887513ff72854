"""What every proof reads (`ProofContext`) and what it returns: named checks (`Checks`), each a
typed `Check` (passed, detail: report/sections/fixes.py), merged into the patch's `checks` in the
report."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable

from ....report.sections.fixes import Check

if TYPE_CHECKING:
    import torch

    from ....target.workload import CallArgs, Workload
    from ...rewrite.base import Rewrite

Checks = dict[str, Check]  # check name -> its Check

__all__ = ["Check", "Checks", "ProofContext", "ProofFn"]


@dataclass
class ProofContext:
    """The workload and its patched copy's, pristine copies of each, the device, the plan, the
    calls made, what each printed, and where the original and the copy live.

    `observations`: for a rule that needed the eager run first, what the line (or function) read
    and produced on each call, with its inputs kept (`(how, observed, args)`, or `(how, None,
    None)` where it did not run). `original`: the user's module as the analysis loaded it (its
    functions are the original's), found before the copy's modules replaced it."""

    w: Workload
    pw: Workload
    fresh_o: Callable[[], Any]  # a pristine copy of the original's model (pair.fresh_copies)
    fresh_p: Callable[[], Any]
    device: torch.device
    planned: Rewrite
    made: list[tuple[str, CallArgs]]  # (how, the call's inputs): sandbox.calls
    said_orig: dict  # what the calls printed, warned and logged (sandbox.joined)
    said_patch: dict
    path: str  # the user's file (traced for the original's lines)
    copy_path: str  # the patched file in the copy
    observations: list[tuple[str, dict, tuple] | tuple[str, None, None]] = field(
        default_factory=list
    )
    original: ModuleType | None = None  # the user's module, as loaded for the analysis


ProofFn = Callable[[ProofContext], Checks]
