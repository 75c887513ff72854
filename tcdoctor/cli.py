"""Command line: every command and its options, each option made into click's here from its
declaration (commands/flags.py); the bodies of check, report, merge and diff are in commands/.
Every expected failure is one line and an exit code."""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable

import click

from .commands.flags import (
    EXPECTED_CALLS,
    NO_ANNOTATIONS,
    NO_FAIL,
    Param,
    analysis_params,
    check_params,
    fix_params,
    output_params,
    sweep_params,
)
from .errors import (
    CHECK_EXIT_CODES_HELP,
    EXIT_CODES_HELP,
    EXIT_INTERNAL,
    EXIT_OUTPUT_CLOSED,
    TcdoctorError,
    UsageError,
)


def _one_line_errors(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TcdoctorError as exc:
            click.echo(f"tcdoctor: error: {exc.message}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("tcdoctor: interrupted", err=True)
            sys.exit(130)
        except BrokenPipeError:
            # `tcdoctor ... | head`: nothing more can be printed; not a tcdoctor bug, and never a
            # passing exit code (a CI gate piped through head must not pass by accident)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(EXIT_OUTPUT_CLOSED)
        except Exception as exc:  # noqa: BLE001 - last resort: a tcdoctor bug is one line, not a traceback
            if os.environ.get("TCDOCTOR_DEBUG"):
                raise
            click.echo(
                f"tcdoctor: internal error: {type(exc).__name__}: {exc} (a tcdoctor bug; rerun with TCDOCTOR_DEBUG=1 for the traceback and report it)",
                err=True,
            )
            sys.exit(EXIT_INTERNAL)

    return wrapper


@click.group(
    help="Should you torch.compile this model? Measured answers with the evidence.\n\n"
    + EXIT_CODES_HELP
)
@click.version_option(package_name="tcdoctor")
def main() -> None:
    pass


_NUMBERS = {
    "count": click.IntRange(0),
    "calls": click.IntRange(1),
    "number": click.FloatRange(0),
    "share": click.FloatRange(0, 1),
    "file": click.Path(dir_okay=False),
}


def _click_option(p: Param) -> Callable:
    """The click option of one declared option (commands/flags.py `Param`): the only place options
    become click's. A pair (`--x/--no-x`) takes its type from its default."""
    names = [p.spelling, *([p.short] if p.short else []), *p.aliases, p.name]
    if p.kind == "flag":
        return click.option(*names, is_flag=True, help=p.help)
    if p.kind == "optional":  # `--ray` alone is `--ray local`
        return click.option(
            *names, is_flag=False, flag_value=p.flag_value, metavar=p.metavar, help=p.help
        )
    typed: dict[str, Any] = {}
    if p.kind != "pair":
        kind = click.Choice(list(p.choices)) if p.kind == "choice" else None
        typed = {"type": kind or _NUMBERS.get(p.kind, click.STRING), "metavar": p.metavar}
    if p.multiple:
        typed["multiple"] = True
    return click.option(
        *names, default=p.default, show_default=p.show_default, help=p.help, **typed
    )


def _options(params: list[Param]) -> Callable:
    """A decorator adding these options to a command, in this order in its --help."""

    def add(fn: Callable) -> Callable:
        for p in reversed(params):
            fn = _click_option(p)(fn)
        return fn

    return add


analysis_options = _options(analysis_params())


@main.command(help="Analyse TARGET (path.py:function) and write the reports.\n\n" + EXIT_CODES_HELP)
@click.argument("target")
@analysis_options
@_options(
    output_params(
        "the report",
        defaults={"json": "tcdoctor-report.json", "html": "tcdoctor-report.html"},
    )
)
@_options([NO_ANNOTATIONS])
@_one_line_errors
def analyze(**kw: Any) -> None:
    from .commands.analyze import run_analyze

    sys.exit(run_analyze(**kw))


@main.command(help="Re-render a saved JSON report without re-running the model.")
@click.argument("saved", type=click.Path(dir_okay=False))
@_options(output_params("the report", notes={"json": "e.g. after --expected-calls"}))
@_options([EXPECTED_CALLS])
@_one_line_errors
def report(saved: str, expected_calls: int | None, **outputs: Any) -> None:
    from .commands.report import run_report

    run_report(saved, expected_calls, outputs)


FIX_EXIT_CODES_HELP = (
    "Exit codes, as ruff's: 0 nothing to change (no verified patch, or every chosen one written); "
    "1 --diff showed a change, or --apply left a chosen patch unwritten (unsafe without --unsafe, "
    "a file changed since the analysis); 2 usage or target error (an unknown rule code in "
    "--select/--ignore, a report made with --no-fixes); 3, 4, 70, 141 as for analyze."
)


@main.command(
    help="The verified source patches for graph breaks in your code: run (or load) an analysis and "
    "print their diffs; --apply writes the safe ones (--unsafe: all), only to files unchanged since "
    "the analysis. `# tcdoctor: ignore[CODE]` on a line keeps it unpatched (the report lists it); "
    "`tcdoctor rules` lists the rules.\n\n" + FIX_EXIT_CODES_HELP
)
@click.argument("target", required=False)
@_options(fix_params())
@analysis_options
@_one_line_errors
def fix(**kw: Any) -> None:
    from .commands.fix import run_fix

    sys.exit(run_fix(**kw))


@main.command(
    help="The source-patch rules, with their safety class; `tcdoctor rules CODE` prints a rule's "
    "page: what it rewrites, when it refuses, how its patch is proven, and an example."
)
@click.argument("code", required=False)
@_one_line_errors
def rules(code: str | None) -> None:
    from .experiments.rewrite import pages, registry

    if code is None:
        click.echo(pages.table(), nl=False)
        return
    found = registry.rule(code)
    if found is None:
        known = ", ".join(r.code for r in registry.RULES)
        raise UsageError(f"unknown rule code {code!r}: the rules are {known}")
    click.echo(pages.page(found), nl=False)


def check_command() -> click.Command:
    """`tcdoctor check`, its options made from the gate's table (tcdoctor/commands, checks/table.py
    `CHECKS`): a check added there is a flag here once this is built again."""

    @click.command(
        "check",
        help="Readiness gate for CI: run (or load) an analysis and check thresholds; exit 1 if any "
        "fails.\n\n" + CHECK_EXIT_CODES_HELP,
    )
    @click.argument("target", required=False)
    @_options(check_params())
    @analysis_options
    @_one_line_errors
    def check(**kw: Any) -> None:
        from .commands.run import CheckArgs, run_check

        sys.exit(run_check(CheckArgs.from_click(kw)))

    return check


main.add_command(check_command())


@main.command(
    help="Print the JSON Schema of the report (`--json` output), generated from its section classes."
)
@_one_line_errors
def schema() -> None:
    from .report.model import shipped_schema_text

    click.echo(shipped_schema_text(), nl=False)


@main.command(
    help="Analyse many targets one after another (path.py:function, globs such as "
    "'models/*.py:build', @list.txt), as `analyze` does each, into DIR/<target>/, with an overview "
    "(DIR/sweep.json, sweep.html, sweep.md). A rerun skips targets already done with the same "
    "tcdoctor, torch and options. `--merge DIR...` joins shards' folders instead.\n\n"
    "Exit codes: 0 every target produced a complete report; 4 the overview was written but at "
    "least one target did not (its row gives the reason and analyze's exit code); 2 usage error."
)
@click.argument("targets", nargs=-1)
@analysis_options
@_options(sweep_params())
@_one_line_errors
def sweep(**kw: Any) -> None:
    from .commands.sweep import run_sweep_command

    sys.exit(run_sweep_command(**kw))


@main.command(
    help="What changed between two saved reports (before/after a fix, two torch versions). "
    "A regression is a graph break not in BEFORE, more recompiles, or the speedup shown slower "
    "(the one-sided Welch test of `check --max-slowdown`, with no margin).\n\n"
    "Exit codes: 0 no regression (or --no-fail); 1 a regression; 2 usage error (a missing or "
    "unreadable report); 70 internal tcdoctor error."
)
@click.argument("before", type=click.Path(dir_okay=False))
@click.argument("after", type=click.Path(dir_okay=False))
@_options(output_params("the diff"))
@_options([NO_FAIL])
@_one_line_errors
def diff(before: str, after: str, no_fail: bool, **outputs: Any) -> None:
    from .commands.diff import run_diff

    sys.exit(run_diff(before, after, no_fail, outputs))


@main.command(
    help="Join the reports of a distributed run's nodes (tcdoctor analyze --nnodes N on each) into one."
)
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_options(
    output_params(
        "the merged report",
        defaults={"json": "tcdoctor-merged.json"},
        aliases={"json": ("-o", "--output")},
    )
)
@_one_line_errors
def merge(reports: tuple[str, ...], **outputs: Any) -> None:
    from .commands.report import run_merge

    run_merge(reports, outputs)


if __name__ == "__main__":  # pragma: no cover
    main()
