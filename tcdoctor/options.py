"""Analysis options: one table, read by the CLI, the Python API and the child process.

Each analysis option is declared once, as a field of `Options`: the field gives its name, type
and default, and its metadata the command line of `analyze` and `check` (the flag, the kind of
value, the help). cli.py turns `cli_params()` into click options, and `Options.from_cli` builds
an Options from what click parsed; reports store `Options.to_dict()`. This module is the base of
the package: it imports neither click nor torch (only errors.py of tcdoctor's), so the child
process and the report loader read it for free.

One option, `isa_probe`, takes its default from an environment variable when that is set
(`_option(..., env=...)`, `$TCDOCTOR_ISA_PROBE`): read when an Options is made, so the command line,
the Python API and the children (handed the value in their spec) agree; the test suite sets it.

Checking: every Options, however made (the command line, `tcdoctor.analyze(**options)`, the
child's `from_dict`), checks each field by its declared kind in `__post_init__` (`check_field`):
the kinds below parse a value (a Python value, or the string the command line gave: click passes
analysis values on unparsed, so this is the one check) or raise OptionError, a ValueError naming
the option and what it accepts (one line and exit 2 at the command line). A comma list takes a
comma-separated string or a sequence of strings. A backend name is not checked here: a backend
the user's module registers is known only in the analysis process.

Not here, because they are the command line's own and not the analysis's (cli.py declares them):
`--quiet` (progress on this terminal), `--expected-calls` (a verdict horizon applied to the report
after the run, as `tcdoctor report` does), `--json/--html/--md` (where the report goes) and
`check`'s thresholds (judged on the finished report). None of them changes what is measured, so
none is recorded in the report's options.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from typing import Any, NamedTuple

from .errors import OptionError
from .thresholds import RULES

# Where a distributed run writes PyTorch's structured compile logs (TORCH_TRACE, for tlparse).
DEFAULT_TORCH_TRACE_DIR = "tcdoctor-torch-trace"

# torch.compile's modes: torch._inductor.list_mode_options() in 2.13 (tests/test_options.py
# compares them with the installed torch's)
MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")

# Who pays Inductor's CPU ISA probe (Options.isa_probe), and the environment variable that sets
# its default (the test suite's: tests/conftest.py)
ISA_PROBE = ("cold", "none", "every")
ISA_PROBE_ENV = "TCDOCTOR_ISA_PROBE"

# The fix budget without --fix-budget (experiments/plan.fix_budget): this many cold first calls, and
# at least this many seconds
FIX_BUDGET_FIRST_CALLS = 4
FIX_BUDGET_MIN_S = 20.0


# The kinds of value an option takes, on the command line and in the Python API. Each parses a
# value (a Python value, or the string the command line gave) into the field's value, or raises
# ValueError saying what it accepts (`accepts`); `Options` checks every field this way.


def _number(value: Any, cast: type) -> Any:
    """An int or float, or the string of one (as the command line gives it); never a bool."""
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, str):
        try:
            return cast(value.strip())
        except ValueError:
            raise ValueError from None
    if cast is int and isinstance(value, int):
        return value
    if cast is float and isinstance(value, (int, float)):
        return float(value)
    raise ValueError


@dataclasses.dataclass(frozen=True)
class Text:
    """Any string (a path-like object is taken as its path)."""

    accepts = "a string"
    metavar = "TEXT"

    def parse(self, value: Any) -> str:
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str) or not value.strip():
            raise ValueError
        return value


@dataclasses.dataclass(frozen=True)
class IntRange:
    """An integer of at least `min` (and at most `max`, where given)."""

    min: int
    max: int | None = None

    @property
    def accepts(self) -> str:
        if self.max is not None:
            return f"an integer from {self.min} to {self.max}"
        return f"an integer >= {self.min}"

    @property
    def metavar(self) -> str:
        return f"INTEGER>={self.min}" if self.max is None else f"{self.min}..{self.max}"

    def parse(self, value: Any) -> int:
        n = _number(value, int)
        if n < self.min or (self.max is not None and n > self.max):
            raise ValueError
        return n


@dataclasses.dataclass(frozen=True)
class FloatRange:
    """A number of at least `min`."""

    min: float

    @property
    def accepts(self) -> str:
        return f"a number >= {self.min:g}"

    @property
    def metavar(self) -> str:
        return f"FLOAT>={self.min:g}"

    def parse(self, value: Any) -> float:
        x = _number(value, float)
        if not math.isfinite(x) or x < self.min:
            raise ValueError
        return x


@dataclasses.dataclass(frozen=True)
class Choice:
    """One of `choices`."""

    choices: tuple[str, ...]

    @property
    def accepts(self) -> str:
        return "one of " + ", ".join(self.choices)

    @property
    def metavar(self) -> str:
        return "[" + "|".join(self.choices) + "]"

    def parse(self, value: Any) -> str:
        if value not in self.choices:
            raise ValueError
        return value


@dataclasses.dataclass(frozen=True)
class Switch:
    """A boolean spelled as a pair, `--x/--no-x`."""

    accepts = "True or False"
    metavar = ""

    def parse(self, value: Any) -> bool:
        if not isinstance(value, bool):
            raise ValueError
        return value


@dataclasses.dataclass(frozen=True)
class CommaList:
    """A list of strings, each one of `choices` when given: comma-separated on the command line;
    in the API such a string or a sequence of strings. Empty items are dropped, repeats kept once."""

    choices: tuple[str, ...] = ()

    @property
    def accepts(self) -> str:
        what = "one of " + ", ".join(self.choices) if self.choices else "a name"
        return f"a comma-separated string or a list of names, each {what}"

    @property
    def metavar(self) -> str:
        return "NAME[,NAME...]" if not self.choices else "[" + "|".join(self.choices) + "],..."

    def parse(self, value: Any) -> list[str]:
        if isinstance(value, str):
            value = value.split(",")
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ValueError
        items = list(dict.fromkeys(v.strip() for v in value if v.strip()))
        unknown = [v for v in items if self.choices and v not in self.choices]
        if unknown:
            raise ValueError(f"not: {', '.join(unknown)}")
        if not items:
            raise ValueError("empty")
        return items


@dataclasses.dataclass(frozen=True)
class TurnsOff:
    """A flag that takes no value and, given, sets its field to `value` (`--no-x`)."""

    value: Any


Kind = Text | IntRange | FloatRange | Choice | Switch | CommaList | TurnsOff


@dataclasses.dataclass(frozen=True)
class Flag:
    """One command-line option of `analyze` and `check` that sets an Options field."""

    spelling: str  # "--x"; a Switch spells its pair, "--x/--no-x"
    help: str
    kind: Kind = Text()
    show_default: bool = False  # False where the help says the default in words, or there is none


def _option(default: Any, *flags: Flag, env: str | None = None) -> Any:
    """An Options field and its command-line options (a list default is copied for each Options).
    `env`: an environment variable whose value, when set, is the field's default (read when an
    Options is made, in the parent: a child is handed the value in its spec)."""
    meta = {"flags": flags, "env": env}
    if env is not None:
        return dataclasses.field(
            default_factory=lambda: os.environ.get(env, "").strip() or default, metadata=meta
        )
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclasses.dataclass
class Options:
    """What an analysis measures and how long it may take, from the CLI, `tcdoctor.analyze(...)`
    or a saved report. Field order is the order of a report's options and of --help."""

    backend: str = _option(
        "inductor",
        Flag("--backend", "torch.compile backend (eager/aot_eager are cheap).", show_default=True),
    )
    mode: str | None = _option(
        None,
        Flag(
            "--mode", "torch.compile mode: default, reduce-overhead, max-autotune.", Choice(MODES)
        ),
    )
    # None: as the user's own process runs, OMP_NUM_THREADS or torch's default (one per physical
    # core); the report says which (environment.threads_source)
    threads: int | None = _option(
        None,
        Flag(
            "--threads",
            "torch.set_num_threads in the analysis processes [default: as your own process would: "
            "OMP_NUM_THREADS, else torch's default]; 1 gives steadier timings on a shared machine.",
            IntRange(1),
        ),
    )
    timeout_s: float = _option(
        600.0,
        Flag("--timeout", "Seconds for the whole analysis.", FloatRange(1), show_default=True),
    )
    budget_s: float = _option(
        5.0,
        Flag(
            "--budget",
            "Most seconds of interleaved eager/compiled timing per row; a row stops sooner once its CI answers whether it is faster.",
            FloatRange(0.05),
            show_default=True,
        ),
    )
    profile_budget_s: float = _option(
        1.0,
        Flag(
            "--profile-budget",
            "Seconds for the profiler phase (guard cost per call, top operators), start-up included.",
            FloatRange(0.1),
            show_default=True,
        ),
    )
    warm: bool = _option(
        True,
        Flag(
            "--no-warm",
            "Skip the warm-cache compile in a second fresh process.",
            TurnsOff(False),
        ),
    )
    trace_dir: str | None = _option(
        None,
        Flag(
            "--trace",
            "Write Chrome/Perfetto traces of eager and compiled calls to this folder.",
        ),
    )
    modes: list[str] = _option(
        ["default"],
        Flag(
            "--modes",
            "Compare these torch.compile modes side by side (comma-separated).",
            CommaList(MODES),
            show_default=True,
        ),
    )
    submodules: bool | None = _option(
        None,
        Flag(
            "--submodules/--no-submodules",
            "Try compiling each submodule alone [default: only when the model has many graph breaks].",
            Switch(),
        ),
    )
    depth: int = _option(
        1,
        Flag("--depth", "Submodule depth for --submodules.", IntRange(1), show_default=True),
    )
    dynamic: bool | None = _option(
        None,
        Flag(
            "--dynamic/--no-dynamic",
            "Compare static/automatic/dynamic shapes [default: when variants change shapes].",
            Switch(),
        ),
    )
    training_ways: bool = _option(
        True,
        Flag(
            "--training-ways/--no-training-ways",
            "For a TrainStep, also time compiling the model alone and the optimizer alone, "
            "each in a fresh process.",
            Switch(),
            show_default=True,
        ),
    )
    fallback_random: bool = _option(
        False,
        Flag(
            "--fallback-random/--no-fallback-random",
            "For a model that draws random numbers (dropout): compile it once more with Inductor's "
            "fallback_random=True so compiled and eager draw the same numbers, and compare their outputs "
            "(PyTorch's accuracy-mode method; about one more cold compile). Without it, such a model's "
            "numerics are reported as not measured.",
            Switch(),
            show_default=True,
        ),
    )
    fixes: bool = _option(  # the fixes and the backend ablation are tcdoctor/experiments/fixes.py
        True,
        Flag(
            "--fixes/--no-fixes",
            "Try the fixes that need no source edit in fresh processes, and locate a loss by backend.",
            Switch(),
            show_default=True,
        ),
    )
    fix_budget_s: float | None = _option(
        None,
        Flag(
            "--fix-budget",
            "Seconds for tried fixes and the backend ablation [default: "
            f"{FIX_BUDGET_FIRST_CALLS} × the cold first call, ≥ {FIX_BUDGET_MIN_S:g} s].",
            FloatRange(1),
        ),
    )
    # Compile-time remedies (tcdoctor/experiments/compile_remedies.py): None tries them when the
    # cold first call is slow (RULES.compile_seconds_warn); `check` judges the best one with it.
    compile_remedies: bool | None = _option(
        None,
        Flag(
            "--compile-remedies/--no-compile-remedies",
            "Try regional compilation and a portable cache (save/load_cache_artifacts), each in a "
            "fresh process with an empty cache, within the fix budget; check's --max-compile-seconds "
            "then judges the best one [default: tried when the cold first call exceeds "
            f"{RULES.compile_seconds_warn:g} s].",
            Switch(),
        ),
    )
    # Distributed runs (tcdoctor/run/distributed.py): one analysis process per rank under
    # torch.distributed.run; nproc > 1 or nnodes > 1 makes a run distributed.
    nproc: int = _option(
        1,
        Flag(
            "--nproc",
            "Ranks on this node: run the analysis under torch.distributed.run, one process per rank.",
            IntRange(1),
            show_default=True,
        ),
    )
    nnodes: int = _option(
        1, Flag("--nnodes", "Nodes (torchrun's --nnodes).", IntRange(1), show_default=True)
    )
    node_rank: int | None = _option(
        None, Flag("--node-rank", "This node's rank (torchrun's --node-rank).", IntRange(0))
    )
    rdzv_endpoint: str | None = _option(
        None,
        Flag("--rdzv-endpoint", "host:port of the rendezvous (torchrun's --rdzv-endpoint)."),
    )
    rdzv_backend: str | None = _option(
        None, Flag("--rdzv-backend", "torchrun's --rdzv-backend [default: torchrun's].")
    )
    dist_backend: str | None = _option(
        None,
        Flag(
            "--dist-backend",
            "Process group backend [default: nccl on CUDA, else gloo].",
            Choice(("gloo", "nccl")),
        ),
    )
    pg_timeout_s: float | None = _option(
        None,
        Flag(
            "--pg-timeout",
            "Your job's process-group timeout in seconds, for the skew comparison [default: torch's].",
            FloatRange(1),
        ),
    )
    # PyTorch's structured compile logs (tcdoctor/run/tlparse.py): an absolute folder, or None.
    torch_trace: str | None = _option(
        None,
        Flag(
            "--torch-trace",
            "Write PyTorch's structured compile logs (TORCH_TRACE) here, for tlparse "
            f"[distributed default: ./{DEFAULT_TORCH_TRACE_DIR}].",
        ),
        Flag(
            "--no-torch-trace", "No structured compile logs in a distributed run.", TurnsOff(None)
        ),
    )
    processes: int = _option(
        6,
        Flag(
            "--processes",
            "The most fresh processes that time eager vs compiled for the headline speedup (the cold "
            "and warm analysis processes count; the rest only time, as a plain script runs). The "
            "decision is first taken at 3; one more process runs while it is undecided, up to this "
            "cap. Below 3, that many processes and no decision across processes.",
            IntRange(1, 10),
            show_default=True,
        ),
    )
    min_processes: int = _option(
        0,
        Flag(
            "--min-processes",
            "Time at least this many processes before stopping early (the --processes cap "
            "allowing). A report saved as a regression baseline wants 5: --max-slowdown's test "
            "knows the baseline's spread only from the baseline's own processes (docs/ci.md). 0: "
            "stop as soon as every question in play is answered.",
            IntRange(0, 10),
            show_default=True,
        ),
    )
    # Last: a report's options keep their order (tests/test_options.py). The serving section
    # (issue 55; tcdoctor/run/serving/): None replays the Workload's own traffic when it
    # gives one, and nothing otherwise.
    traffic: int | None = _option(
        None,
        Flag(
            "--traffic",
            "Replay N requests one at a time in fresh processes, eager and compiled: latency "
            "percentiles, the compiles the traffic triggers, a warm-up proven to cover them, a "
            "restart, shape strategies, host time and threads [default: the Workload's own "
            "traffic when it gives one; without one, its inputs and variants are replayed].",
            IntRange(1),
        ),
    )

    # Who pays Inductor's CPU ISA probe (its test builds in an empty cache folder; run/isa_seed.py)
    isa_probe: str = _option(
        "cold",
        Flag(
            "--isa-probe",
            "Which analysis processes pay Inductor's CPU ISA probe (its test builds in an empty "
            "cache folder): cold (only the cold process, as a fresh container does; every other "
            "empty folder starts from this machine's probed folder), none (the cold process too: "
            "its first call is then a machine's that has compiled before, and the report says so) "
            "or every (nothing is seeded) [default: cold, or $TCDOCTOR_ISA_PROBE].",
            Choice(ISA_PROBE),
        ),
        env=ISA_PROBE_ENV,
    )

    def __post_init__(self) -> None:
        """Check every option by its declared kind (`check_field`), as the command line does."""
        for f in dataclasses.fields(self):
            setattr(self, f.name, check_field(f, getattr(self, f.name)))
        if self.traffic is not None and self.distributed:  # the one cross-check (issue 55)
            raise OptionError(
                "--traffic replays requests one at a time in single processes, as one server "
                "serves them: it cannot run with --nproc/--nnodes above 1 (analyze the served "
                "model without them)"
            )

    @property
    def distributed(self) -> bool:
        """One analysis process per rank under torch.distributed.run (tcdoctor/run/distributed.py)."""
        return self.nproc > 1 or self.nnodes > 1

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Options:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    @classmethod
    def from_cli(cls, values: Mapping[str, Any]) -> Options:
        """The Options of the values click parsed for `cli_params()` (other keys are ignored).

        Values go to Options as click passed them (strings), so both the command line and the
        API are checked by `check_field` (an OptionError, exit 2); an empty comma list is the
        default; a TurnsOff flag given sets its field; the TORCH_TRACE folder is made absolute,
        and a distributed run gets one by default unless turned off.
        """
        kw: dict[str, Any] = {}
        turned_off = set()
        for p in cli_params():
            value = values[p.name]
            if isinstance(p.flag.kind, TurnsOff):
                if value:
                    kw[p.field] = p.flag.kind.value
                    turned_off.add(p.field)
            elif isinstance(p.flag.kind, CommaList):
                if value.strip(", "):  # as it came: Options parses it
                    kw[p.field] = value
            else:
                kw[p.field] = value
        opts = cls(**kw)
        if "torch_trace" not in turned_off:
            folder = opts.torch_trace or (DEFAULT_TORCH_TRACE_DIR if opts.distributed else None)
            opts.torch_trace = os.path.abspath(folder) if folder else None
        return opts


def check_field(f: dataclasses.Field, value: Any) -> Any:
    """The value of one Options field, parsed by its declared kind; OptionError naming the option
    and what it accepts. None passes where it is the field's default; a TurnsOff flag's value
    passes as it is; a field whose only flag is TurnsOff (`warm`) is a boolean."""
    flags = f.metadata.get("flags", ())
    if not flags:
        return value
    if value is None and f.default is None:
        return None
    if any(isinstance(fl.kind, TurnsOff) and value is fl.kind.value for fl in flags):
        return value
    kinds = [fl.kind for fl in flags if not isinstance(fl.kind, TurnsOff)] or [Switch()]
    kind = kinds[0]
    try:
        return kind.parse(value)
    except (TypeError, ValueError) as exc:
        spellings = "/".join(fl.spelling for fl in flags)
        if f.metadata.get("env"):
            spellings += f", ${f.metadata['env']}"
        detail = f" ({exc})" if isinstance(exc, ValueError) and str(exc) else ""
        raise OptionError(
            f"option {f.name} ({spellings}) takes {kind.accepts}, got {value!r}{detail}"
        ) from None


class CliParam(NamedTuple):
    """One click option of `analyze` and `check`, as cli.py declares it."""

    name: str  # the parameter name click passes back: the field's, or a TurnsOff flag's own
    field: str
    flag: Flag
    default: Any  # the field's default in command-line form (a CommaList joined)


def cli_params() -> list[CliParam]:
    """Every Options field's command-line options, in the field order (that of --help)."""
    out = []
    for f in dataclasses.fields(Options):
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[misc]
        for flag in f.metadata.get("flags", ()):
            if isinstance(flag.kind, TurnsOff):
                name = flag.spelling.lstrip("-").replace("-", "_")
                out.append(CliParam(name, f.name, flag, False))
            elif isinstance(flag.kind, CommaList):
                out.append(CliParam(f.name, f.name, flag, ",".join(default)))
            else:
                out.append(CliParam(f.name, f.name, flag, default))
    return out
