"""The fix tcdoctor can name for a graph break in the user's own code, or why it names none.

The verdict says "compile it after these fixes" only where such a fix exists (verdict/decision.py)
and the advice gives it as the break's "Fix:" (verdict/advice.py). A fix is one of:

- a **patch**: a source patch the analysis verified on a copy (experiments/proving/);
- a **switch**: a setting the user flips without editing the model (a `torch._dynamo.config` flag);
- a **rewrite** tcdoctor names: a tensor-valued branch (`torch.where` / `torch.cond`) for a
  data-dependent branch, a 0-dim tensor for `.item()`, the print moved out of forward;
- **PyTorch's hint** for the break, when it describes a change to the user's code that can apply.

Not a fix, and never given as one:

- the hints that only ask for a bug report or say the break is fundamental (the graph-break
  registry's generic hints: "It may be possible to write Dynamo tracing rules…", "This is likely
  to be a Dynamo bug…", "…caused by an earlier graph break…");
- a hint whose precondition the break itself rules out (`UNFIT_HINTS`): for `Tensor.tolist() with
  non-integer tensor` PyTorch hints "Ensure the input tensor to `tolist()` is an integer type",
  while Dynamo's own reason says what it observed, a tensor that is not an integer type; casting
  float scores to integers changes them, so the hint does not apply to the code that broke;
- "rewrite it with tensor ops by hand", the patch planner's words where no rule matched: it names
  no construct (experiments/rewrite/unmatched.py). Such a break is `NoFix`, with the planner's
  reason; what a rewrite by hand could gain is the break's bound (report/break_gain.py), which the
  verdict gives beside "don't compile (yet)".

Pitfall: the reason- and hint-based rules read PyTorch's words for the break (its registry's
`Gb_type` and hints, as torch 2.13 writes them); a break whose words change in another release
falls to its hints, then to `NoFix`: the verdict then asks for a rewrite rather than promise a fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ..outcomes import StrEnum
from ..report.sections import FixRow, GraphBreak, NotTried


class FixKind(StrEnum):
    """What kind of fix `break_fix` found."""

    PATCH = "a verified patch"
    SWITCH = "a switch"
    REWRITE = "a named rewrite"
    HINT = "PyTorch's hint"


@dataclass(frozen=True)
class BreakFix:
    """A fix tcdoctor can name for the break: its kind and the words the advice gives."""

    kind: FixKind
    text: str


@dataclass(frozen=True)
class NoFix:
    """No fix tcdoctor can name: why (the patch planner's reason where it gave one), and each
    PyTorch hint left out because it cannot apply, with why ('' when none)."""

    why: str
    refused: str = ""


NO_FIX_KNOWN = "no patch, switch or named rewrite is known for it"

# Hints that ask for a report or call the break fundamental: no change to the user's code.
GENERIC_HINTS = (
    "dynamo tracing rules",
    "report an issue",
    "open an issue",
    "file an issue",
    "likely to be a dynamo bug",
    "graph break is fundamental",
    "difficult to debug",
    "caused by an earlier graph break",
    "may result in an error when running in eager",
)

# Hints whose precondition the break's own reason rules out: break type (Dynamo's reason, the
# registry's Gb_type) -> (the hint's opening, what it asks, why it cannot apply to the code).
UNFIT_HINTS = {
    "Tensor.tolist() with non-integer tensor": (
        "Ensure the input tensor to `tolist()` is an integer",
        "an integer tensor for `tolist()`",
        "Dynamo broke here because the tensor is not an integer type, as observed, and casting "
        "its values to integers would change them",
    ),
}

SWITCH = re.compile(r"torch\._(?:dynamo|inductor)\.config\.\w+")


def break_fix(
    f: GraphBreak, fix_rows: Sequence[FixRow] = (), not_tried: Sequence[NotTried] = ()
) -> BreakFix | NoFix:
    """The fix tcdoctor can name for a break in the user's code (`f`), in this order: a verified
    patch among `fix_rows` that addresses it, a rewrite named for its reason, the first of
    PyTorch's hints that is a fix and can apply; else `NoFix` with the planner's reason from
    `not_tried` (report.fixes_not_tried) where it gave one."""
    patch = next(
        (r for r in fix_rows if r.patch is not None and r.patch.verified and f.id in r.addresses),
        None,
    )
    if patch is not None and patch.patch is not None:
        p = patch.patch
        return BreakFix(FixKind.PATCH, f"the verified patch {p.rule} ({p.title}): `tcdoctor fix`")
    named = _named_rewrite(f)
    if named is not None:
        return named
    hint, refused = _usable_hint(f)
    if hint is not None:
        kind = FixKind.SWITCH if SWITCH.search(hint) else FixKind.HINT
        return BreakFix(kind, hint.rstrip(". "))
    return NoFix(_planner_reason(f, not_tried) or NO_FIX_KNOWN, refused)


def can_fix(
    f: GraphBreak, fix_rows: Sequence[FixRow] = (), not_tried: Sequence[NotTried] = ()
) -> bool:
    return isinstance(break_fix(f, fix_rows, not_tried), BreakFix)


def _named_rewrite(f: GraphBreak) -> BreakFix | None:
    """The rewrites tcdoctor names for a break's reason (torch 2.13's words)."""
    reason = (f.reason or "").lower()
    if "data-dependent branching" in reason or "generic_jump" in reason:
        return BreakFix(
            FixKind.REWRITE,
            "make the branch tensor-valued: `torch.where(cond, a, b)` for both outcomes, or "
            "`torch.cond` for real control flow",
        )
    if "item()" in reason:
        return BreakFix(
            FixKind.REWRITE,
            "keep the value a tensor instead of calling .item(), or set "
            "`torch._dynamo.config.capture_scalar_outputs = True`",
        )
    if "builtin operator" in reason and "print" in (f.explanation or "") + (f.code or ""):
        return BreakFix(
            FixKind.REWRITE,
            "remove the print from forward (or log outside the compiled region); "
            "`torch._dynamo.config.reorderable_logging_functions` can keep it",
        )
    return None


def _usable_hint(f: GraphBreak) -> tuple[str | None, str]:
    """(the first hint that is a fix and can apply, or None; why the unfit ones were left out)."""
    unfit = UNFIT_HINTS.get((f.reason or "").strip())
    refused = []
    for h in f.hints or []:
        text = str(h).strip()
        if not text or any(g in text.lower() for g in GENERIC_HINTS):
            continue
        if unfit is not None and text.startswith(unfit[0]):
            refused.append(f"PyTorch's hint, {unfit[1]}, cannot apply: {unfit[2]}")
            continue
        return text, ""
    return None, "; ".join(refused)


def _planner_reason(f: GraphBreak, not_tried: Sequence[NotTried]) -> str | None:
    """Why the patch planner left this break without a patch ('no mechanical patch: …'), matched
    by the break's id or its file and line."""
    for nt in not_tried:
        spec, fix = nt.spec or {}, nt.fix
        if fix.get("kind") != "patch":
            continue
        ours = f.id is not None and f.id in (spec.get("addresses") or fix.get("addresses") or [])
        here = (fix.get("file"), fix.get("at_line")) == (f.file, f.line)
        if ours or here:
            return str(nt.why or "") or None
    return None
