"""The fixes tried in fresh processes: a source patch (`Patch`), each fix's row (`FixRow`) and which
layer a loss comes from (`Ablation`); which verified patches a user applies (`choose`).

`choose` lives beside the proof's record, not in render/: the patch file, `tcdoctor fix` and
every format read the same choice. Patches of one file are each proven against the original
file, so they do not stack: one per file is chosen (the fastest compiled), among those that
`--select`/`--ignore` keep (ruff's prefixes: `TCD1` selects every TCD1xx code).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ... import units
from ...thresholds import Rules
from ..keyed import Keyed
from ..record import Record
from ..rules import (
    faster_than_eager,
    row_interval,
)
from .runtime import ci_bounds, vs_eager
from .strategies import StrategyRow


@dataclass
class Check(Record):
    """One check of a patch's proof (experiments/proving/): whether it passed, and what it
    compared. Built in the child by the proof that made it, read back typed by the parent."""

    passed: bool = False
    detail: str = ""


@dataclass
class Patch(Record):
    """A source patch for a graph break in the user's own file (experiments/rewrite/ plans it,
    experiments/proving/ proves it on a copy): where, which rule and safety class, the diff, and
    each check of the proof. `verified` only when every check passed."""

    rule: str | None = None  # TCD101 ...
    family: str | None = (
        None  # leftover-graph-break / guard-logging / guard-check / tensor-cond / custom-op
    )
    safety: str | None = None  # safe (behaviour unchanged eager and compiled) / unsafe
    title: str | None = None
    note: str | None = None  # what the user must know (what compiled runs skip, ...)
    file: str | None = None  # relative to the target's folder, as the diff names it
    line: int | None = None
    sha256: str | None = None  # of the file the patch was planned on (`tcdoctor fix` checks it)
    diff: str | None = (
        None  # unified, a/ b/ paths: `git apply` / `patch -p1` from the target's folder
    )
    observed: dict[str, Any] | None = (
        None  # what the line read and produced eagerly (a custom op's fake)
    )
    checks: dict[str, Check] = field(default_factory=dict)
    verified: bool = False
    failed: list[str] = field(default_factory=list)  # the checks that failed


@dataclass
class FixSide(Keyed):
    """A fix row's figures before the fix (the main row's) or after it (its child's, a strategy
    row's, the cheap backend's count). Which keys a side holds depends on where it was made: a key
    is present when given (some as null), written back in the order given (`from_dict`, `of`), so
    saved and new rows write the JSON they always did; built by field, its set fields in field
    order. Keys no field models stay in `extra`."""

    graph_breaks: int | None = None
    recompiles: int | None = None
    speedup: float | None = None
    speedup_ci: list[float] | None = None
    numerics_passed: bool | None = None
    first_call_s: float | None = None
    median_s: float | None = None
    eager_median_s: float | None = None
    max_abs_err: float | None = None
    faults_per_call: float | None = None
    samples: int | None = None
    calls_per_sample: int | None = None
    cache: dict[str, int] | None = None  # which of its child's graphs were cache hits
    sites: list[dict] | None = None  # a patch's: where the breaks were before it
    timed_in: str | None = None  # which process timed the main row it is compared with
    compile_s: float | None = None  # a shape strategy's (verdict/tried.py)
    limit_hit: bool | None = None
    expected_gain_s_per_forward: float | None = None  # regional compilation's (verdict/tried.py)


@dataclass
class NotTried(Keyed):
    """A fix the plan made and left untried (experiments/plan.py: the fix budget used up, a patch
    the planner could not make or a `# tcdoctor: ignore` kept): its experiment `spec` (the fix,
    or the ablation's backend) and `why`."""

    spec: dict[str, Any] | None = None
    why: str | None = None

    @property
    def fix(self) -> dict[str, Any]:
        """The spec's fix ({} for an ablation): its kind, name and, for a patch, file and line."""
        return (self.spec or {}).get("fix") or {}

    @property
    def name(self) -> str | None:
        """The fix as the plan names it, or the ablation's backend."""
        return self.fix.get("name") or (self.spec or {}).get("backend")


@dataclass
class FixRow(Record):
    """A fix that needs no source edit, tried in a fresh process or read off a strategy row
    (tcdoctor/experiments/fixes.py, judged in tcdoctor/verdict/tried.py): the figures it addresses before and after, and what that showed."""

    OMIT_NONE = (
        "cheap",
        "seconds",
        "source",
        "spec",
        "cache_start",
        "patch",
        "decision_ci",
        "decision_method",
    )

    name: str | None = None
    kind: str | None = (
        None  # config / stance / env / numerics / compiled_autograd / dynamic / regions
    )
    fix: str | None = None  # the line a user would write
    addresses: list[str] = field(default_factory=list)
    before: FixSide = field(default_factory=FixSide)
    after: FixSide | None = None
    outcome: str | None = None  # a FixOutcome word (outcomes.py): helps, no effect, fails, ...
    why: str | None = None
    cheap: dict[str, Any] | None = None
    seconds: float | None = None
    source: str | None = None
    spec: dict[str, Any] | None = None
    cache_start: str | None = (
        None  # what its child's inductor cache held at start (run/launcher.py)
    )
    # the speedup after the fix with the spread between processes, corrected for the candidate
    # rows (rules.row_decision_interval; set at assembly by verdict/tried.py)
    decision_ci: list[float] | None = None
    decision_method: str | None = None
    patch: Patch | None = None  # a source patch's plan and proof (kind "patch")

    def __post_init__(self) -> None:
        # a side given as its figures (verdict/tried.py's strategy rows, a test's row) is read typed
        if isinstance(self.before, dict):
            self.before = FixSide.of(**self.before)
        if isinstance(self.after, dict):
            self.after = FixSide.of(**self.after)

    @property
    def summary(self) -> str:
        """'1 breaks → 0, 0.24× → 0.91× (95% CI 0.88–0.95)': the figures it addresses, before and after."""
        b, a = self.before, self.after_side
        parts = [
            f"{x} {unit} → {y}"
            for x, y, unit in (
                (b.graph_breaks, a.graph_breaks, "breaks"),
                (b.recompiles, a.recompiles, "recompiles"),
            )
            if x is not None and y is not None
        ]
        if self.kind == "env" and b.faults_per_call is not None:
            before_f, after_f = (
                x if x is None else round(x) for x in (b.faults_per_call, a.faults_per_call)
            )
            parts.append(
                f"{units.grouped(before_f)} page faults per compiled call → {units.grouped(after_f)}"
            )
        if b.speedup is not None and a.speedup is not None:
            parts.append(f"{units.ratio(b.speedup)} → {self.vs_eager()}")
        state = units.cache_state(a.cache)
        if state and a.first_call_s is not None:
            where = " in the warm process" if self.cache_start == units.WARM_PROCESS_CACHE else ""
            parts.append(f"first call {units.seconds(a.first_call_s)}, {state}{where}")
        return ", ".join(parts)

    @property
    def after_side(self) -> FixSide:
        """The figures after the fix; empty where it did not run (it failed, or was not tried)."""
        return self.after if self.after is not None else FixSide()

    @property
    def measured(self) -> bool:
        """Run with the real backend in a fresh process: its speed after the fix is a measurement."""
        return self.source is None and self.after_side.speedup is not None

    @property
    def decision_interval(self) -> tuple[float | None, float | None]:
        """The interval every claim about the speed after the fix rests on (rules.row_interval)."""
        own = self.after_side.speedup_ci
        return ci_bounds(row_interval(own, self.decision_ci, self.decision_method))

    def significantly_faster(self, rules: Rules) -> bool:
        """With the fix applied, compiled is significantly faster than eager by the row's decision
        interval (the one rule: rules.faster_than_eager)."""
        return (
            self.measured
            and self.applicable
            and faster_than_eager(self.decision_interval[0], rules.min_speedup)
        )

    @property
    def applicable(self) -> bool:
        """A fix a user may apply: any tried switch, but a source patch only once verified (a
        patch that failed its proof earns no "apply it" and no measured gain)."""
        return self.patch is None or self.patch.verified

    def vs_eager(self, word: str = "") -> str:
        """The speed after the fix: '1.30× (95% CI 1.25–1.35; 1.09–1.55× with the spread between
        processes)'."""
        a = self.after_side
        return vs_eager(a.speedup, a.speedup_ci, self.decision_ci, self.decision_method, word)

    @property
    def gain_fraction(self) -> float | None:
        """Share of a compiled call the fix saves, from the speedups before and after (each paired
        against eager in its own process, so process-to-process speed differences cancel); ≥ 0."""
        b, a = self.before.speedup, self.after_side.speedup
        if not self.measured or not self.applicable or not b or not a:
            return None
        return max(0.0, 1.0 - b / a)


@dataclass
class Ablation(Record):
    """eager / aot_eager / the real backend side by side, and the layer a loss or drift is in."""

    rows: list[StrategyRow] = field(default_factory=list)
    layer: str | None = None


def selected(code: str | None, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> bool:
    """ruff's `--select`/`--ignore` on a rule code: kept when it starts with a selected prefix
    (every code when none is selected) and with no ignored one."""
    c = (code or "").upper()
    chosen = not select or any(c.startswith(s.upper()) for s in select)
    return chosen and not any(c.startswith(i.upper()) for i in ignore)


@dataclass(frozen=True)
class Choice:
    """The verified patch chosen for one file, and the other verified ones left out."""

    path: str
    row: FixRow
    left_out: tuple[FixRow, ...] = ()


def choose(
    rows: Sequence[FixRow], select: Sequence[str] = (), ignore: Sequence[str] = ()
) -> list[Choice]:
    """The verified source patches kept by select/ignore, one per file: the fastest compiled
    (its speedup after the patch), in the order the files first appear."""
    by_file: dict[str, list[FixRow]] = {}
    for r in rows:
        p = r.patch
        if p is not None and p.verified and selected(p.rule, select, ignore):
            by_file.setdefault(str(p.file), []).append(r)
    out = []
    for path, group in by_file.items():
        best = max(group, key=lambda r: r.after_side.speedup or 0.0)
        out.append(Choice(path, best, tuple(r for r in group if r is not best)))
    return out
