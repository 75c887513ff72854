"""The options of the commands as declarations (`Param`, described without click), in --help
order: an analysis option's from its Options field (tcdoctor/options.py), a check's from its entry
in the gate's table (checks/table.py `CHECKS`), `check`'s own (what is judged, the baseline, where
the results go), and the output flags of every command that writes reports (`output_params`:
one per declared format, render/formats.py `FORMATS`), and `--expected-calls` once
(`EXPECTED_CALLS`). cli.py turns each into a click option, the only place that does.

Pitfalls: an analysis option's value reaches `Options` as the string typed (kind "text"), so that
`Options` checks it by its declared kind as it checks the Python API's (one line and exit 2); a
check's limit is typed by click (a count `IntRange(0)`, a share `FloatRange(0, 1)`, ...), whose
bad value is click's usage error (exit 2). The table is read when a command is built:
`cli.check_command()` builds `check` again after a check is added to it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import click

from ..checks.table import BASELINE, REPORT, SWEEP, Check, checks
from ..options import Switch, TurnsOff, cli_params
from ..render.formats import FORMATS


class Param(NamedTuple):
    """One option of a command. `kind`: "flag" (given or not), "pair" (`--x/--no-x`), "text",
    "optional" (a text whose value may be left out: `flag_value` then), "choice" (one of
    `choices`), or a kind of number: "count" (int ≥ 0), "calls" (int ≥ 1), "number" (float ≥ 0),
    "share" (float 0-1); "file" (a path to a file, not a folder). `aliases`: other spellings it
    keeps (merge's `-o/--output` for its `--json`); `multiple`: given more than once, a tuple."""

    spelling: str
    name: str
    kind: str
    help: str | None = None
    metavar: str | None = None
    default: Any = None
    show_default: bool = False
    choices: tuple[str, ...] = ()
    short: str | None = None
    aliases: tuple[str, ...] = ()
    flag_value: Any = None
    multiple: bool = False


def _analysis_param(spelling: str, name: str, kind: Any, help: str, default: Any, show: bool):
    if isinstance(kind, TurnsOff):
        return Param(spelling, name, "flag", help)
    if isinstance(kind, Switch):
        return Param(spelling, name, "pair", help, default=default, show_default=show)
    text = None if default is None else str(default)
    return Param(spelling, name, "text", help, kind.metavar, text, show)


EXPECTED_CALLS = Param(
    "--expected-calls",
    "expected_calls",
    "calls",
    "Calls the model will serve (the break-even horizon): the verdict is judged for it.",
)

# the options of `analyze` and `check` that are the command line's own, not the analysis's
# (tcdoctor/options.py says why), each listed in --help after the analysis option named here
_CLI_ONLY_AFTER = {
    "trace_dir": EXPECTED_CALLS,
    "fix_budget_s": Param(
        "--quiet", "quiet", "flag", "No progress on stderr while the analysis runs.", short="-q"
    ),
}


def analysis_params() -> list[Param]:
    """Every Options field's flags, and the command line's own among them."""
    out = []
    for p in cli_params():
        f = p.flag
        out.append(_analysis_param(f.spelling, p.name, f.kind, f.help, p.default, f.show_default))
        if p.name in _CLI_ONLY_AFTER:
            out.append(_CLI_ONLY_AFTER[p.name])
    return out


NO_ANNOTATIONS = Param(
    "--no-annotations",
    "no_annotations",
    "flag",
    "On GitHub Actions (GITHUB_ACTIONS=true), print no ::warning/::error annotations (the step "
    "summary is still written).",
)


def output_params(
    what: str,
    defaults: Mapping[str, str] | None = None,
    notes: Mapping[str, str] | None = None,
    aliases: Mapping[str, tuple[str, ...]] | None = None,
) -> list[Param]:
    """The output flags of a command that writes `what` ("the report", "the diff"), one per
    declared format (render/formats.py `FORMATS`: `--json`, `--html`, `--md`), in its order: each
    writes it in its format to the PATH given. By format key: `defaults`, the path written when
    the flag is not given ('' skips it); `notes`, a flag's own words; `aliases`, other spellings
    a flag keeps. The command reads them back as one `Outputs` (`Outputs.take`)."""
    defaults, notes, aliases = defaults or {}, notes or {}, aliases or {}
    out = []
    for f in FORMATS:
        note = notes.get(f.key)
        help = f"Write {what} as {f.label} to PATH" + (f" ({note})" if note else "")
        default = defaults.get(f.key)
        help += " ('' to skip)." if default else "."
        named = aliases.get(f.key, ())
        out.append(
            Param(f.flag, f.param, "text", help, "PATH", default, bool(default), aliases=named)
        )
    return out


def check_param(c: Check) -> Param:
    """A check's option, from its table entry."""
    kind = "flag" if c.kind == "switch" else "text" if c.kind == "path" else c.kind
    return Param(c.spelling, c.key, kind, c.help, c.metavar, choices=c.choices)


def _out(spelling: str, name: str, help: str) -> Param:
    return Param(spelling, name, "text", help, "PATH")


def check_params() -> list[Param]:
    """`check`'s own options, in --help order: what is judged (--sweep, --report), each check of
    the table in its order, the baseline, and where the results go."""
    return [
        Param(
            "--sweep",
            "sweep_dir",
            "text",
            "Gate on a sweep's overview (DIR or DIR/sweep.json) instead of one report.",
        ),
        *[check_param(c) for c in checks(SWEEP)],
        Param(
            "--report",
            "report_path",
            "text",
            "Check a saved JSON report instead of running TARGET (analysis options it was not "
            "measured with are refused; --expected-calls recomputes its verdict).",
        ),
        *[check_param(c) for c in checks(REPORT)],
        Param(
            "--inconclusive",
            "inconclusive",
            "choice",
            "How a check whose interval straddles its threshold (INCONCLUSIVE, a JUnit skipped, a "
            "GitHub warning) counts: fail exits 5 (its own code; a failed check still exits 1), "
            "pass exits 0.",
            default="fail",
            show_default=True,
            choices=("fail", "pass"),
        ),
        Param(
            "--baseline",
            "baseline_path",
            "text",
            "A saved JSON report (e.g. from main) to judge regressions against, with --max-new-*; "
            "with --sweep, an earlier sweep (DIR or sweep.json) to judge 'newly' against.",
        ),
        Param(
            "--allow-mismatch",
            "allow_mismatch",
            "flag",
            "Judge against a --baseline of another target, backend, mode or device anyway "
            "(noted); without it such a baseline is refused (exit 2).",
        ),
        *[check_param(c) for c in checks(BASELINE)],
        _out(
            "--junit",
            "junit_path",
            "Write the checks as JUnit XML here (one testcase per check; also on exit 2 and 3 and "
            "when a rank could not join the process group (70), as one testcase with the error).",
        ),
        *output_params(
            "the report checked (with --sweep: the overview judged)",
            notes={"json": "e.g. as the next run's --baseline"},
        ),
        NO_ANNOTATIONS,
    ]


def fix_params() -> list[Param]:
    """`fix`'s own options, in --help order: the saved report, show or write, the rules chosen."""
    codes = "Only the patches of these rules: codes or prefixes, comma-separated or repeated "
    return [
        Param(
            "--report", "report_path", "file", "Use a saved JSON report instead of running TARGET."
        ),
        Param(
            "--diff/--apply",
            "diff_only",
            "pair",
            "Print the diffs (default) or write the patches.",
            default=True,
            show_default=True,
        ),
        Param(
            "--unsafe",
            "unsafe",
            "flag",
            "With --apply, also write patches whose safety class is unsafe.",
        ),
        Param(
            "--select",
            "select",
            "text",
            codes + "(TCD101,TCD104; TCD1 for every TCD1xx).",
            "CODES",
            multiple=True,
        ),
        Param(
            "--ignore",
            "ignore",
            "text",
            "Leave out the patches of these rules (codes or prefixes, as --select).",
            "CODES",
            multiple=True,
        ),
    ]


NO_FAIL = Param("--no-fail", "no_fail", "flag", "Exit 0 even when the diff finds a regression.")

RAY = Param(
    "--ray",
    "ray",
    "optional",
    "Run each target as a Ray task (pip install tcdoctor[ray]): ADDRESS 'auto' attaches to the "
    "running cluster (RAY_ADDRESS, `ray start`), HOST:PORT or ray://HOST:PORT to that one; without "
    "ADDRESS a local cluster on 127.0.0.1 is started for the sweep and stopped after it.",
    metavar="[ADDRESS]",
    flag_value="local",
)
RAY_CPUS = Param(
    "--ray-cpus",
    "ray_cpus",
    "calls",
    "With --ray: the CPUs each target's task holds, and its analysis's --threads (default: "
    "--threads, else 1).",
    metavar="N",
)
RAY_GPUS = Param(
    "--ray-gpus",
    "ray_gpus",
    "count",
    "With --ray: the GPUs each target's task holds (whole GPUs; Ray sets CUDA_VISIBLE_DEVICES).",
    metavar="N",
    default=0,
    show_default=True,
)


def sweep_params() -> list[Param]:
    """`sweep`'s own options, in --help order: the folder, resume, shards, the baseline, the
    merge, and the Ray cluster's (`RAY`, `RAY_CPUS`, `RAY_GPUS`)."""
    return [
        Param(
            "--out", "out_dir", "text", "Sweep folder.", default="tcdoctor-sweep", show_default=True
        ),
        Param(
            "--retry-failed", "retry_failed", "flag", "Rerun targets whose recorded result failed."
        ),
        Param("--shard", "shard", "text", "K/N: analyse only the K-th of N shares (1-based)."),
        Param(
            "--durations",
            "durations",
            "text",
            "With --shard: an earlier sweep (DIR or sweep.json) whose durations balance the shards.",
        ),
        Param(
            "--baseline",
            "baseline",
            "text",
            "An earlier sweep (DIR or sweep.json): each row says what changed since.",
        ),
        Param("--merge", "merge", "flag", "Join the shard folders given as arguments into --out."),
        RAY,
        RAY_CPUS,
        RAY_GPUS,
    ]


def typed(names: Sequence[str]) -> list[str]:
    """The parameters of the running command typed on its command line (not at their default)."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    return [n for n in names if ctx.get_parameter_source(n) not in (None, ParameterSource.DEFAULT)]


def analysis_flags(names: Sequence[str]) -> str:
    """The flags of these parameters, as typed: '--backend, --no-warm'."""
    by_name = {p.name: p.flag.spelling for p in cli_params()}
    return ", ".join(by_name.get(n, "--" + n.replace("_", "-")) for n in names)


def flag_list(cs: Sequence[Check], last: str = ", ") -> str:
    """The checks' flags, '--a, --b' (or with `last` ' or ': '--a, --b or --c')."""
    flags = [c.spelling for c in cs]
    return last.join([", ".join(flags[:-1]), flags[-1]]) if len(flags) > 1 else "".join(flags)
