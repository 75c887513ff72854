"""What every proof reads (`ProofContext`) and what it returns: named checks, each
`{"passed": bool, "detail": str}`, merged into the patch's `checks` in the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

Checks = dict[str, dict[str, Any]]  # check name -> {"passed": bool, "detail": str}


@dataclass
class ProofContext:
    """The workload and its patched copy's, pristine copies of each, the device, the plan, the
    calls made, what each printed, and where the original and the copy live.

    `observations`: for a rule that needed the eager run first, what the line (or function) read
    and produced on each call, with its inputs kept (`(how, observed, args)`, or `(how, None,
    None)` where it did not run). `original`: the user's module as the analysis loaded it (its
    functions are the original's), found before the copy's modules replaced it."""

    w: Any
    pw: Any
    fresh_o: Callable[[], Any]
    fresh_p: Callable[[], Any]
    device: Any
    planned: Any  # rewrite.Rewrite
    made: list[tuple[str, Any]]
    said_orig: dict
    said_patch: dict
    path: str  # the user's file (traced for the original's lines)
    copy_path: str  # the patched file in the copy
    observations: list[tuple[str, dict, tuple] | tuple[str, None, None]] = field(
        default_factory=list
    )
    original: Any = None  # the user's module, as loaded for the analysis


ProofFn = Callable[[ProofContext], Checks]
