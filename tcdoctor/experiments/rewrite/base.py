"""What the rules share (torch-free): the break site, a rule, what a rule writes (a `Rewrite` with
its typed payload) or why it writes nothing (`NoRewrite`), what its proof must check (`Proof`),
what its eager run must observe (`Need`), and its page (`Page`, printed by `tcdoctor rules CODE`).

Safety is ruff's, an ordered `Safety` (tcdoctor/outcomes.py, SAFE < UNSAFE): "safe" means
behaviour is unchanged eager and compiled; "unsafe" means eager behaviour is unchanged but compiled
runs differ in a way the note states, or the proof must check the rewrite. A patch's safety is
the less safe of its rule's and what the side-effect walk found (`max(RULE.safety, walk)`): a rule
never makes a patch safer than the walk allows.

Proofs are named: `Proof` holds the proofs tcdoctor ships for several rules; a rule whose proof
is its own names it by a string constant in its own module (the proof module imports it), so a
new rule with a new proof edits no shared file but the two registries (rewrite/registry.py and
experiments/proving/proofs/registry.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Union

from ...outcomes import Safety
from ...report.record import Record


class Proof(str, Enum):
    """What a patch's proof checks beyond breaks, eager outputs and compiled numerics, for the
    proofs several rules share; experiments/proving/proofs/registry.py maps each name to the
    module that checks it and looks it up by name."""

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
    module, its inputs, and the shape rule its fake follows; for a method wrapped whole, its
    class and name (the op's inputs are then its parameters and the attributes it reads)."""

    qualname: str
    function: str
    inputs: tuple[str, ...]
    shape_rule: str
    owner: str = ""  # a method's class (TCD106): the op is its module-level body
    method: str = ""  # that method's name


Payload = Union[BranchPayload, OpPayload, None]


@dataclass(frozen=True)
class Need:
    """What an eager call of the original must record at `line` of `function`: the values of
    `inputs` when the line starts, and `output` once the line has bound it. `whole`: the
    function's whole call instead (`inputs` its parameters when it is called, its return value
    the output; `line` its `def`)."""

    line: int
    function: str
    inputs: tuple[str, ...]
    output: str
    rule: str = ""  # the rule that asks, and the title its patch will have
    title: str = ""
    whole: bool = False


@dataclass
class Value(Record):
    """One value the eager run observed (experiments/proving/sandbox.describe): its type name
    ("tensor", "ndarray", "int", "tuple", ...), a tensor's or array's shape and dtype (torch's
    name for a tensor's: "float32"), a tuple's items."""

    type: str | None = None
    shape: list[int] = field(default_factory=list)
    dtype: str | None = None
    items: list[Value] = field(default_factory=list)


@dataclass
class Observed(Record):
    """What a `Need` recorded: each input's value by name and the output's. Read once where the
    rewrite package receives it (`rewrite.plan`: from the sandbox, a saved report's patch or a
    page's example)."""

    inputs: dict[str, Value] = field(default_factory=dict)
    output: Value = field(default_factory=Value)


@dataclass(frozen=True)
class Rewrite:
    """A source patch: the whole rewritten module, what it does, and what its proof must check."""

    rule: str
    family: str
    safety: Safety
    title: str
    note: str
    source: str
    line: int
    proofs: tuple[str, ...] = ()  # `Proof` members, or a rule's own proof name
    payload: Payload = None


@dataclass(frozen=True)
class NoRewrite:
    """No mechanical patch: one line saying why, and the family whose precondition failed.
    `suppressed`: the user's `# tcdoctor: ignore[CODE]` comment asked for none."""

    reason: str
    family: str | None = None
    suppressed: bool = False
    pending: bool = False  # only the eager run's observation is missing: not a refusal yet


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
    `observe` (what the eager run must record first; None for most rules). `fallback`: the
    families whose refusal (None: no rule answered) this rule may stand in for; such a rule is
    tried only after the others refused (rewrite/__init__.py `_decide`)."""

    code: str
    name: str
    safety: Safety
    the_break: str
    the_rewrite: str
    statements: tuple[type, ...]
    proofs: tuple[str, ...]
    match: Callable[[Any, Observed | None], Result | None]  # (tree.Spot, what the eager run saw)
    page: Page
    library_calls: bool = False
    observe: Callable[[Any], Need | None] | None = None  # (tree.Spot) -> what to observe
    checked: str = field(default="")  # what the proof checks besides breaks and outputs
    safety_note: str = ""  # why the class, as docs/patches.md's table says it
    fallback: tuple[str | None, ...] = ()
    leaves: tuple[str, ...] = ()  # break reasons (first lines) its patch knowingly leaves

    def applies(self, spot: Any) -> bool:
        """Whether `match` is tried at this spot (the statement's kind)."""
        return isinstance(spot.stmt, self.statements)
