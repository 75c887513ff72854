"""What one experiment child runs: one typed spec class per experiment kind.

After the main analysis the parent runs each planned experiment (a compile mode, a training way, a
dynamic-shape setting, regional compilation, a fix that needs no source edit, an ablation backend)
in a fresh child process. A spec is how the plan names one: the cold child plans them, the parent
writes each into the child's spec file, the child runs it, and the report keeps the plan. Everything
that differs by kind lives on its class, so callers ask the spec instead of branching on a kind
string: its phase name (`key`), its progress `label`, the report list its row goes to (`section`),
whether it spends the fix budget, the environment its child starts with, and for a fix the line a
user writes and how it is applied. Which function measures each class is `strategies.RUNNERS`.

Specs travel as JSON (spec files, the plan event, the report's `strategies.planned`); `to_dict()`
writes the dict shape they always had and `Spec.from_dict()` reads it back as the right class.
Adding an experiment kind is one class here (plus its runner row and its renderer rows).

Torch-free at import: the parent (launcher, progress) uses specs and must not import torch.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator, Mapping

from ..report.record import required_fields
from .shapes import DYNAMIC_LABELS

PHASE_PREFIX = "strategy:"  # an experiment child's phase is named PHASE_PREFIX + its spec's key

# concrete class by (the dict's "kind", its fix's "kind" or None); filled as classes are defined
_CLASSES: dict[tuple[str, str | None], type[Spec]] = {}


@dataclass(frozen=True)
class Spec(abc.ABC):
    """One experiment to run in a fresh child. Subclasses set `kind` (the dict's "kind") and `section`."""

    kind: ClassVar[str]
    # the report list its row goes to: strategies.<section>, or the report's fixes or ablation
    section: ClassVar[str]
    # may run in the warm process once its own measurements are done, instead of a process of its own
    # (no torch import, no build() again): nothing it needs is set at process start, and its first
    # call is not compared as a cold compile (run/launcher.py)
    shares_process: ClassVar[bool] = False
    uses_fix_budget: ClassVar[bool] = False  # counts against --fix-budget (fixes and the ablation)
    fresh_cache: ClassVar[bool] = (
        False  # its child starts with an empty inductor cache (measures a cold compile), not a copy of the main one
    )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        tag = cls.tag()
        if tag is not None:
            _CLASSES[tag] = cls

    @classmethod
    def tag(cls) -> tuple[str, str | None] | None:
        """What tells this class's dicts apart; None for a class that is no kind of its own (a base)."""
        return (cls.kind, None) if "kind" in cls.__dict__ else None

    # the field that names one experiment of its kind: its key is "kind:value" (a class that
    # names itself otherwise overrides `key`)
    key_field: ClassVar[str]

    @property
    def key(self) -> str:
        """The phase name after PHASE_PREFIX, as event files and the report's phases name it."""
        return f"{self.kind}:{getattr(self, self.key_field)}"

    @property
    @abc.abstractmethod
    def label(self) -> str:
        """What the progress line calls it while it runs."""

    @property
    def phase(self) -> str:
        """The phase its child reports under (events, the report's phases)."""
        return PHASE_PREFIX + self.key

    @property
    def child_env(self) -> dict[str, str] | None:
        """Variables its child process must start with (None: the parent's environment as is)."""
        return None

    def to_dict(self) -> dict:
        """The JSON shape: {"kind": ..., <each field>: ...}."""
        return {
            "kind": self.kind,
            **{f.name: _copy(getattr(self, f.name)) for f in dataclasses.fields(self)},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Spec:
        """The spec `d` describes, as its own class (called on a subclass, `d` must be one of it)."""
        kind = d.get("kind") if isinstance(d, Mapping) else None
        inner = d.get("fix") if kind == FixSpec.kind else None
        tag = (kind, inner.get("kind") if isinstance(inner, Mapping) else None)
        found = _CLASSES.get(tag)
        if found is None:
            raise ValueError(
                f"unknown experiment kind {_tag_str(tag)} in spec {d!r}: known kinds are "
                + ", ".join(sorted(_tag_str(t) for t in _CLASSES))
            )
        if not issubclass(found, cls):
            raise ValueError(f"spec {d!r} is a {found.__name__}, not a {cls.__name__}")
        values = found.field_values(d)
        missing = [name for name in required_fields(found) if name not in values]
        if missing:
            raise ValueError(f"{found.__name__} spec {d!r} lacks {', '.join(missing)}")
        return found(**values)

    @classmethod
    def field_values(cls, d: Mapping[str, Any]) -> dict[str, Any]:
        """This class's field values found in its dict `d` (the inverse of to_dict)."""
        return {f.name: _copy(d[f.name]) for f in dataclasses.fields(cls) if f.name in d}


def _copy(value: Any) -> Any:
    """A fresh list or dict, so a spec and the dicts made from it never share one."""
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def _tag_str(tag: tuple[Any, Any]) -> str:
    return repr(tag[0]) if tag[1] is None else f"{tag[0]!r} ({tag[1]!r})"


# -- compile strategies (strategies.py) ---------------------------------------------------------


@dataclass(frozen=True)
class ModeSpec(Spec):
    """torch.compile(mode=...) other than the main analysis's, timed against eager."""

    kind: ClassVar[str] = "mode"
    key_field: ClassVar[str] = "mode"
    section: ClassVar[str] = "modes"
    # another mode's compile shares no graph with the main one (other Inductor config, other keys),
    # and its cold first call is what the mode table compares
    fresh_cache: ClassVar[bool] = True
    mode: str

    @property
    def label(self) -> str:
        return f"mode={self.mode}"


@dataclass(frozen=True)
class TrainWaySpec(Spec):
    """A training step compiled another way than whole (training.WAYS: the model, the optimizer step)."""

    kind: ClassVar[str] = "train"
    key_field: ClassVar[str] = "way"
    section: ClassVar[str] = "training"
    # its cold first call is what the decision repays (steps_to_repay): graphs it shares with the
    # whole step would come warm from a copy and hide compile work a user's fresh process pays
    fresh_cache: ClassVar[bool] = True
    way: str

    @property
    def label(self) -> str:
        return f"compile the {'optimizer step' if self.way == 'optimizer' else self.way} only"


DYNAMIC_SETTINGS = tuple(DYNAMIC_LABELS)  # the shape settings compared, in the table's order


@dataclass(frozen=True)
class DynamicSpec(Spec):
    """One dynamic-shape setting (a DYNAMIC_LABELS key) fed every input shape variant."""

    kind: ClassVar[str] = "dynamic"
    key_field: ClassVar[str] = "how"
    section: ClassVar[str] = "dynamic"
    # the shape settings are compared by their compile seconds, each from a cold cache as a user's
    # fresh process pays them ("automatic", the main analysis's own setting, is never a child)
    fresh_cache: ClassVar[bool] = True
    how: str

    @property
    def label(self) -> str:
        return DYNAMIC_LABELS.get(self.how, f"dynamic: {self.how}")


@dataclass(frozen=True)
class RegionsSpec(Spec):
    """Each submodule at `depth` compiled alone; `automatic`: planned because the model breaks a lot."""

    kind: ClassVar[str] = "regions"
    key_field: ClassVar[str] = "depth"
    section: ClassVar[str] = "regions"
    depth: int
    automatic: bool = False

    @property
    def label(self) -> str:
        return f"submodules alone (depth {self.depth})"


# -- compile-time remedies (compile_remedies.py) -----------------------------------------------


# Compile-time settings that need no code edit, named with why they are not tried here.
REMEDY_SETTINGS = (
    {
        "setting": "TORCHINDUCTOR_COMPILE_THREADS",
        "why": "not tried: already the default (one compile worker per core, up to 32); "
        "more workers than cores cannot compile faster",
    },
    {
        "setting": "TORCHINDUCTOR_FX_GRAPH_CACHE / TORCHINDUCTOR_AUTOGRAD_CACHE",
        "why": "on by default: the warm-cache row is what they give",
    },
    {
        "setting": "TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE",
        "why": "not tried: needs a Redis server the fleet shares",
    },
    {
        "setting": "torch._inductor.config.freezing",
        "why": "not tried: it folds weights into the graph for speed and adds compile work",
    },
)


@dataclass(frozen=True)
class RemedySpec(Spec):
    """A way to cut the cold start, tried in a fresh child that starts with an empty inductor cache
    (what a new machine pays), timed and checked like every tried fix. Its row goes to
    `compile.remedies`; `line` is what the user would write."""

    section: ClassVar[str] = "remedies"
    uses_fix_budget: ClassVar[bool] = True
    fresh_cache: ClassVar[bool] = True

    @property
    @abc.abstractmethod
    def line(self) -> str:
        """The code (or shell step) a user writes to get this remedy."""


@dataclass(frozen=True)
class RegionalCompileSpec(RemedySpec):
    """Each instance of the repeated block (`block`, at the qualified names `names`) compiled on
    its own instead of the whole model: Dynamo compiles the block's code once and reuses it."""

    kind: ClassVar[str] = "regional_compile"
    block: str
    names: list[str] = field(default_factory=list)
    container: str | None = None  # the attribute path holding every instance, when one does
    share: float | None = None  # of the model's parameters the instances hold
    compile_args: str = ""  # the arguments of each `.compile(...)`, as the user writes them

    @property
    def key(self) -> str:
        return "remedy:regional"

    @property
    def label(self) -> str:
        return f"regional compilation ({len(self.names)} × {self.block})"

    @property
    def line(self) -> str:
        if self.container:
            return f"for layer in model.{self.container}: layer.compile({self.compile_args})"
        return f"for name in {self.names!r}: model.get_submodule(name).compile({self.compile_args})"


@dataclass(frozen=True)
class PortableCacheSpec(RemedySpec):
    """The cold child's compile artifacts (`torch.compiler.save_cache_artifacts()`, saved to `path`)
    loaded by a fresh process with an empty cache dir before its first call. The user's line
    loads a file made by `open('cache.bin', 'wb').write(torch.compiler.save_cache_artifacts()[0])`
    after a compile (the method in the report says so)."""

    kind: ClassVar[str] = "portable_cache"
    path: str
    artifact_bytes: int | None = None

    @property
    def key(self) -> str:
        return "remedy:portable_cache"

    @property
    def label(self) -> str:
        return "portable cache (load_cache_artifacts)"

    @property
    def line(self) -> str:
        return "torch.compiler.load_cache_artifacts(open('cache.bin', 'rb').read())  # before the first call"


# -- tried advice (fixes.py) ----------------------------------------------------------------------


@dataclass(frozen=True)
class AblationSpec(Spec):
    """The main subject compiled with a lower layer's backend ("eager", "aot_eager")."""

    kind: ClassVar[str] = "ablation"
    key_field: ClassVar[str] = "backend"
    section: ClassVar[str] = "ablation"
    uses_fix_budget: ClassVar[bool] = True
    shares_process: ClassVar[bool] = True
    backend: str

    @property
    def label(self) -> str:
        return f"backend={self.backend!r}"


@dataclass(frozen=True)
class FixSpec(Spec):
    """A fix that needs no source edit, tried in a fresh child against the figures `before` it.

    Its dict nests what the fix is under "fix" ({"kind": fix_kind, "name", "value", ...}) next to
    the findings it `addresses` and the main analysis's figures `before`."""

    kind: ClassVar[str] = "fix"
    key_field: ClassVar[str] = "name"
    fix_kind: ClassVar[str]
    section: ClassVar[str] = "fixes"
    uses_fix_budget: ClassVar[bool] = True
    # first tried with backend="eager" (does the break go?), with the real backend only if it does
    cheap_first: ClassVar[bool] = False
    note: ClassVar[str | None] = None  # what the user must know besides its figures
    OUTER: ClassVar[tuple[str, ...]] = ("addresses", "before")  # fields beside "fix", not in it

    name: str
    value: bool = True
    addresses: list[str] = field(default_factory=list)
    before: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def tag(cls) -> tuple[str, str | None] | None:
        return (cls.kind, cls.fix_kind) if "fix_kind" in cls.__dict__ else None

    @property
    def label(self) -> str:
        return f"fix: {self.name}"

    @property
    @abc.abstractmethod
    def line(self) -> str:
        """The exact line of code (or environment) that applies the fix."""

    @contextlib.contextmanager
    def applied(self) -> Iterator[None]:
        """The fix in effect in this process while the block runs (in the child)."""
        yield

    def applied_on(self, workload: Any) -> contextlib.AbstractContextManager:
        """`applied()`, for a fix that needs the workload (a module of the model) to apply."""
        return self.applied()

    def after_first_call(self) -> None:
        """Called once the compiled subject made its first call (a fix that needs warm-up first)."""

    def to_dict(self) -> dict:
        fix = {
            "kind": self.fix_kind,
            **{
                f.name: _copy(getattr(self, f.name))
                for f in dataclasses.fields(self)
                if f.name not in self.OUTER
            },
        }
        return {"kind": self.kind, "fix": fix, **{k: _copy(getattr(self, k)) for k in self.OUTER}}

    @classmethod
    def field_values(cls, d: Mapping[str, Any]) -> dict[str, Any]:
        flat = {**{k: v for k, v in d.items() if k in cls.OUTER}, **(d.get("fix") or {})}
        return super().field_values(flat)


@dataclass(frozen=True)
class ConfigFix(FixSpec):
    """A `torch._dynamo.config` switch named by a break's hint (or implied, compiled autograd)."""

    fix_kind: ClassVar[str] = "config"
    cheap_first: ClassVar[bool] = True
    shares_process: ClassVar[bool] = True

    @property
    def line(self) -> str:
        return f"torch._dynamo.config.{self.name} = True"

    @contextlib.contextmanager
    def applied(self) -> Iterator[None]:
        import torch

        if not hasattr(torch._dynamo.config, self.name):
            raise ValueError(
                f"torch._dynamo.config has no {self.name!r} in torch {torch.__version__}"
            )
        with torch._dynamo.config.patch(**{self.name: self.value}):
            yield


@dataclass(frozen=True)
class InductorConfigFix(FixSpec):
    """A `torch._inductor.config` numerics setting of PyTorch's accuracy harness."""

    fix_kind: ClassVar[str] = "inductor_config"
    shares_process: ClassVar[bool] = True

    @property
    def line(self) -> str:
        return f"torch._inductor.config.{self.name} = True"

    @contextlib.contextmanager
    def applied(self) -> Iterator[None]:
        import torch
        import torch._inductor.config as inductor_config

        if not hasattr(inductor_config, self.name):
            raise ValueError(
                f"torch._inductor.config has no {self.name!r} in torch {torch.__version__}"
            )
        with inductor_config.patch(**{self.name: self.value}):
            yield


@dataclass(frozen=True)
class EnvFix(FixSpec):
    """Variables the process starts with (glibc reads its malloc thresholds at start): the parent
    starts the fix child with them, so nothing is applied inside it."""

    fix_kind: ClassVar[str] = "env"
    note: ClassVar[str | None] = (
        "compared with the main analysis process, whose heap had a different history: under glibc's "
        "default thresholds a fresh process without the setting may fault more or less (not measured)"
    )
    env: dict[str, str] = field(default_factory=dict)

    @property
    def line(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.env.items()) + (
            "  # in the environment the process starts with"
        )

    @property
    def child_env(self) -> dict[str, str] | None:
        return dict(self.env)


@dataclass(frozen=True)
class StanceFix(FixSpec):
    """Guards skipped once warm (`skip_guard_eval_unsafe`), when guard evaluation dominates a call."""

    fix_kind: ClassVar[str] = "stance"
    shares_process: ClassVar[bool] = True
    note: ClassVar[str | None] = (
        "unsafe when inputs change: guards are no longer checked, so a new shape, dtype or mode "
        "silently reuses a graph made for another; use it only after every input variant has been seen"
    )
    name: str = "skip_guard_eval_unsafe"

    @property
    def line(self) -> str:
        return 'torch.compiler.set_stance("default", skip_guard_eval_unsafe=True)  # after warm-up'

    @contextlib.contextmanager
    def applied(self) -> Iterator[None]:
        """Set after the first call (after_first_call); reset to the default stance afterwards."""
        import torch

        try:
            yield
        finally:
            torch.compiler.set_stance("default")

    def after_first_call(self) -> None:
        import torch

        torch.compiler.set_stance("default", skip_guard_eval_unsafe=True)


@dataclass(frozen=True)
class DisableModuleFix(FixSpec):
    """Compile around the module where the numbers drift (probes/drift.py): its class's `forward`
    wrapped in `torch.compiler.disable`, so it runs eagerly inside the compiled model. Applied to the
    class, so every instance of it runs eagerly (the line says so); `name` is the module's qualified
    name in the model, `class_name` its class."""

    fix_kind: ClassVar[str] = "disable_module"
    # a fresh process: Dynamo's entries of the main analysis inlined the class's forward
    note: ClassVar[str | None] = (
        "every instance of the class runs eagerly: the compiled graph breaks around each one"
    )
    class_name: str = ""

    @property
    def line(self) -> str:
        c = self.class_name or "TheModule"
        return f"{c}.forward = torch.compiler.disable({c}.forward)  # {self.name} runs eagerly"

    @contextlib.contextmanager
    def applied_on(self, workload: Any) -> Iterator[None]:
        import torch

        cls = type(workload.model.get_submodule(self.name))
        original = cls.__dict__.get("forward")
        cls.forward = torch.compiler.disable(cls.forward)
        try:
            yield
        finally:
            if original is None:
                del cls.forward
            else:
                cls.forward = original


@dataclass(frozen=True)
class PatchFix(FixSpec):
    """A source patch for a graph break in the user's own file (experiments/rewrite/ plans it,
    experiments/proving/ applies it to a copy of the target's folder and proves it in this fresh
    child). Planned from the break's site (`file`, `at_line`, PyTorch's `gb_type`/`gb_id`); `family`,
    `rule`, `safety` and `title` are the planned rewrite's, repeated here so the plan, the progress
    line and an untried row can name it without re-planning. `target` is the analysis's own
    `path.py:function`, loaded again from the copy."""

    fix_kind: ClassVar[str] = "patch"
    target: str = ""
    file: str = ""
    at_line: int = 0
    gb_type: str = ""
    gb_id: str | None = None
    family: str = ""
    rule: str = ""
    safety: str = ""
    title: str = ""

    @property
    def key(self) -> str:
        return f"patch:{self.name}"

    @property
    def label(self) -> str:
        return f"patch {self.name}"

    @property
    def line(self) -> str:
        return f"the source patch for {self.name} ({self.rule} {self.family}, {self.safety})"


# what a set-valued switch's member names, resolved in the child (never eval'd)
def _member(expr: str) -> Any:
    import builtins
    import logging

    if expr.startswith("logging.Logger."):
        return getattr(logging.Logger, expr.rpartition(".")[2])
    return getattr(builtins, expr)


@dataclass(frozen=True)
class ConfigSetFix(FixSpec):
    """A set-valued `torch._dynamo.config` switch a break's hint names: `print` added to
    `reorderable_logging_functions` (its output moves after the compiled graph's work) or a Logger
    method to `ignore_logging_functions` (the call is dropped in compiled code). `member` is
    `print` (a builtin) or `logging.Logger.<method>`."""

    fix_kind: ClassVar[str] = "config_set"
    cheap_first: ClassVar[bool] = True
    shares_process: ClassVar[bool] = True  # a config patch in the block: nothing at process start
    note: ClassVar[str | None] = (
        "process-wide: it applies to every compiled function in the process"
    )
    member: str = ""

    @property
    def key(self) -> str:
        return f"fix:{self.name}:{self.member}"

    @property
    def line(self) -> str:
        return f"torch._dynamo.config.{self.name}.add({self.member})"

    @contextlib.contextmanager
    def applied(self) -> Iterator[None]:
        import torch

        current = getattr(torch._dynamo.config, self.name, None)
        if not isinstance(current, set):
            raise ValueError(
                f"torch._dynamo.config.{self.name} is not a set in torch {torch.__version__}"
            )
        with torch._dynamo.config.patch(**{self.name: current | {_member(self.member)}}):
            yield
