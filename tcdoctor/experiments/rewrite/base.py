"""What the rules share (torch-free): the break site, a rule, what a rule writes (a `Rewrite` with
its typed payload) or why it writes nothing (`NoRewrite`), what its proof must check (`Proof`),
what its eager run must observe (`Need`), and its page (`Page`, printed by `tcdoctor rules CODE`).

Safety is ruff's: "safe" means behaviour is unchanged eager and compiled; "unsafe" means eager
behaviour is unchanged but compiled runs differ in a way the note states, or the proof must check
the rewrite. A patch's safety is the lower of its rule's and what the side-effect walk found
(`lower`): a rule never makes a patch safer than the walk allows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Union

SAFE, UNSAFE = "safe", "unsafe"


def lower(*safeties: str) -> str:
    """The lowest of the safety classes: unsafe when any is."""
    return UNSAFE if UNSAFE in safeties else SAFE


class Proof(str, Enum):
    """What a patch's proof checks beyond breaks, eager outputs and compiled numerics; the proof
    (experiments/patches.py) keeps one check function per member and looks it up."""

    STDOUT = "stdout"  # eager stdout equal
    WARNINGS = "warnings"  # eager warnings equal
    LOGS = "logs"  # eager log records equal
    BRANCHES = "branches"  # both branches, the predicate, outputs, gradients and buffers
    OPCHECK = "opcheck"  # torch.library.opcheck and the compiled copy on every variant

    def __str__(self) -> str:
        return self.value


REPORT_PROOF = {"stdout": Proof.STDOUT, "warnings": Proof.WARNINGS, "logs": Proof.LOGS}
REPORT_WORD = {"stdout": "print", "warnings": "warning", "logs": "log record"}


@dataclass(frozen=True)
class Site:
    """A graph break in the user's file: the line PyTorch reports (for a break inside a library,
    the user's line that calls it), its gb_type and GB id. `file` (optional) names the custom op
    (`tcdoctor_patch::<stem>_<function>_l<line>`)."""

    line: int
    gb_type: str
    gb_id: str | None = None
    file: str | None = None


@dataclass(frozen=True)
class BranchPayload:
    """A tensor-cond rewrite: the `if` (its first line, its test and the predicate torch.cond
    gets, as source) in `function`, and the names a branch passes through as a clone."""

    function: str
    if_line: int
    test: str
    predicate: str
    passthrough: tuple[str, ...] = ()


@dataclass(frozen=True)
class OpPayload:
    """A custom-op rewrite: the op's qualified name, the function defining it in the patched
    module, its inputs, and the shape rule its fake follows."""

    qualname: str
    function: str
    inputs: tuple[str, ...]
    shape_rule: str


Payload = Union[BranchPayload, OpPayload, None]


@dataclass(frozen=True)
class Need:
    """What an eager call of the original must record at `line` of `function`: the values of
    `inputs` when the line starts, and `output` once the line has bound it."""

    line: int
    function: str
    inputs: tuple[str, ...]
    output: str
    rule: str = ""  # the rule that asks, and the title its patch will have
    title: str = ""


@dataclass(frozen=True)
class Rewrite:
    """A source patch: the whole rewritten module, what it does, and what its proof must check."""

    rule: str
    family: str
    safety: str
    title: str
    note: str
    source: str
    line: int
    proofs: tuple[Proof, ...] = ()
    payload: Payload = None


@dataclass(frozen=True)
class NoRewrite:
    """No mechanical patch: one line saying why, and the family whose precondition failed.
    `suppressed`: the user's `# tcdoctor: ignore[CODE]` comment asked for none."""

    reason: str
    family: str | None = None
    suppressed: bool = False


Result = Union[Rewrite, NoRewrite]


@dataclass(frozen=True)
class Page:
    """A rule's page (`tcdoctor rules CODE`): what it rewrites, when it refuses, how its patch is
    proven, and an example planned live from `example` at `example_line` (the shapes a custom op
    needs in `example_observed`)."""

    rewrites: str
    refuses: str
    proof: str
    example: str
    example_line: int
    example_gb_type: str
    example_observed: dict[str, Any] | None = None


@dataclass(frozen=True)
class Rule:
    """One rule, one unit: its code and name, its safety class, where it applies (the statement
    kinds; `library_calls`: also at a user's line whose call breaks inside a library, where the
    planner keeps only such a rule's patch), the proofs its patches may need,
    `match` (the rewrite, the reason there is none, or None: not this rule's statement) and
    `observe` (what the eager run must record first; None for most rules)."""

    code: str
    name: str
    safety: str
    the_break: str
    the_rewrite: str
    statements: tuple[type, ...]
    proofs: tuple[Proof, ...]
    match: Callable[[Any, dict | None], Result | None]  # (tree.Spot, what the eager run observed)
    page: Page
    library_calls: bool = False
    observe: Callable[[Any], Need | None] | None = None  # (tree.Spot) -> what to observe
    checked: str = field(default="")  # what the proof checks besides breaks and outputs

    def applies(self, spot: Any) -> bool:
        """Whether `match` is tried at this spot (the statement's kind)."""
        return isinstance(spot.stmt, self.statements)
