"""Command line: analyze, report, check, diff. Every expected failure is one line and an exit code."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable

import click

from .errors import (
    EXIT_CHECK_FAILED,
    EXIT_CODES_HELP,
    EXIT_INTERNAL,
    EXIT_OUTPUT_CLOSED,
    TcdoctorError,
    UsageError,
)
from .options import CliParam, Options, Switch, TurnsOff, cli_params

if TYPE_CHECKING:
    from .report.check import CheckResult
    from .report.model import Report


CHECK_EXIT_CODES_HELP = (
    "Exit codes: 0 every check passed (with --inconclusive pass, also when some were "
    "inconclusive); 1 a check failed (an incomplete analysis fails its "
    "'analysis complete' check: `check` never exits 4); 2 usage or target error, or a check that "
    "could not be judged (a missing file, a bad target, an analysis option a saved --report was "
    "not measured with, a --baseline of another target/backend/mode/device without "
    "--allow-mismatch, an incomplete baseline); 3 the user's code failed before anything could be "
    "measured; 5 none failed but one was inconclusive (its interval straddles the threshold, or a "
    "--require-verdict met a cant-tell verdict) with --inconclusive fail, the default; 70 internal "
    "tcdoctor error; 141 standard output closed early. Worst first: 2, then 1, then 5. --junit is "
    "written on exits 0 to 3 and 5 once the command line is parsed."
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


def _write_outputs(
    report: Report,
    json_path: str | None,
    html_path: str | None,
    md_path: str | None,
    summary: str | None = None,
    patches: bool = False,
) -> None:
    """Write the report files (render/write.py), then print `summary` and where the files are:
    files first, so a closed stdout (`| head`) never costs a report. `patches`: also the verified
    source patches, as tcdoctor-patches.diff beside the JSON report."""
    from .render.write import patches_path, write_report

    diff = patches_path(json_path, html_path) if patches else None
    written = write_report(report, json_path, html_path, md_path, diff)
    if summary is not None:
        click.echo(summary)
    for label, p in written:
        click.echo(f"{label}: {p}")


@click.group(
    help="Should you torch.compile this model? Measured answers with the evidence.\n\n"
    + EXIT_CODES_HELP
)
@click.version_option(package_name="tcdoctor")
def main() -> None:
    pass


def _click_option(param: CliParam) -> Callable:
    """The click option of one analysis option (tcdoctor/options.py declares them all).

    A value is passed on as the string typed (click.STRING), so that `Options` checks it by its
    declared kind, as it checks the Python API's (one line and exit 2, not click's usage block);
    the metavar says what it takes."""
    flag = param.flag
    if isinstance(flag.kind, TurnsOff):
        return click.option(flag.spelling, param.name, is_flag=True, help=flag.help)
    if isinstance(flag.kind, Switch):
        return click.option(
            flag.spelling,
            param.name,
            default=param.default,
            show_default=flag.show_default,
            help=flag.help,
        )
    return click.option(
        flag.spelling,
        param.name,
        type=click.STRING,
        metavar=flag.kind.metavar,
        default=None if param.default is None else str(param.default),
        show_default=flag.show_default,
        help=flag.help,
    )


# The options of `analyze` and `check` that are the command line's own, not the analysis's
# (tcdoctor/options.py says why), each listed in --help after the analysis option named here.
_CLI_ONLY_AFTER = {
    "trace_dir": click.option(
        "--expected-calls",
        type=click.IntRange(1),
        default=None,
        help="Calls the model will serve (break-even horizon).",
    ),
    "fix_budget_s": click.option(
        "--quiet", "-q", is_flag=True, help="No progress on stderr while the analysis runs."
    ),
}


def analysis_options(fn: Callable) -> Callable:
    """Add the analysis options (every Options field with a flag) and the CLI's own to a command."""
    opts = []
    for param in cli_params():
        opts.append(_click_option(param))
        if param.name in _CLI_ONLY_AFTER:
            opts.append(_CLI_ONLY_AFTER[param.name])
    for o in reversed(opts):
        fn = o(fn)
    return fn


def _run_analysis(
    target: str,
    opts: Options,
    quiet: bool,
    expected_calls: int | None,
    thresholds: tuple[float, ...] = (),
) -> tuple[Report, int]:
    """The analysis pipeline (run/pipeline.py), with progress unless --quiet. `thresholds`:
    speedups a gate judges, which the headline's processes must decide too."""
    from .run.pipeline import analyze as run_pipeline

    return run_pipeline(
        target, opts, expected_calls=expected_calls, thresholds=thresholds, progress=not quiet
    )


# CI outputs of `analyze` and `check` (CLI-only: they change what is printed, not what is measured)
_NO_ANNOTATIONS = click.option(
    "--no-annotations",
    is_flag=True,
    help="On GitHub Actions (GITHUB_ACTIONS=true), print no ::warning/::error annotations "
    "(the step summary is still written).",
)


def _github_outputs(
    report: Report,
    results: Sequence[CheckResult] = (),
    note: str | None = None,
    annotations: bool = True,
) -> None:
    """On GitHub Actions: append the Markdown summary to $GITHUB_STEP_SUMMARY and print the
    annotations (tcdoctor/render/github.py)."""
    from .render.github import GitHubAnnotations, step_summary

    _github(
        lambda: step_summary(report, results, note),
        (lambda: GitHubAnnotations(results).render(report)) if annotations else None,
    )


def _github(summary: Callable[[], str], annotations: Callable[[], str] | None) -> None:
    """On GitHub Actions (GITHUB_ACTIONS=true): append `summary()` to $GITHUB_STEP_SUMMARY and
    print `annotations()`. A summary that cannot be written is one warning line: it must not
    change the exit code a gate reports."""
    from .render.github import in_github_actions, write_step_summary

    if not in_github_actions():
        return
    try:
        write_step_summary(summary())
    except OSError as exc:
        click.echo(f"tcdoctor: warning: cannot write GITHUB_STEP_SUMMARY: {exc}", err=True)
    text = annotations() if annotations else ""
    if text:
        click.echo(text)


@main.command(help="Analyse TARGET (path.py:function) and write the reports.\n\n" + EXIT_CODES_HELP)
@click.argument("target")
@analysis_options
@click.option(
    "--json",
    "json_path",
    default="tcdoctor-report.json",
    show_default=True,
    help="JSON report path.",
)
@click.option(
    "--html",
    "html_path",
    default="tcdoctor-report.html",
    show_default=True,
    help="HTML report path ('' to skip).",
)
@click.option("--md", "md_path", default=None, help="Markdown summary path.")
@_NO_ANNOTATIONS
@_one_line_errors
def analyze(
    target: str,
    json_path: str,
    html_path: str,
    md_path: str | None,
    quiet: bool,
    expected_calls: int | None,
    no_annotations: bool,
    **analysis: Any,
) -> None:
    from .render.terminal import TerminalRenderer

    report, code = _run_analysis(target, Options.from_cli(analysis), quiet, expected_calls)
    summary = TerminalRenderer().render(report) + "\n"
    _write_outputs(report, json_path or None, html_path or None, md_path, summary, patches=True)
    _github_outputs(report, annotations=not no_annotations)
    sys.exit(code)


def _load(path: str) -> Report:
    from .report.model import Report

    try:
        return Report.load(path)
    except FileNotFoundError:
        raise TcdoctorError(f"file not found: {path}") from None
    except TcdoctorError:
        raise  # already one line naming the file (ReportError)
    except (ValueError, OSError) as exc:
        raise TcdoctorError(f"cannot read report {path}: {exc}") from None


@main.command(help="Re-render a saved JSON report without re-running the model.")
@click.argument("saved", type=click.Path(dir_okay=False))
@click.option("--html", "html_path", default=None, help="HTML output path.")
@click.option("--md", "md_path", default=None, help="Markdown output path.")
@click.option(
    "--json", "json_path", default=None, help="Re-write the JSON (e.g. after --expected-calls)."
)
@click.option(
    "--expected-calls",
    type=click.IntRange(1),
    default=None,
    help="Recompute the verdict for this horizon.",
)
@_one_line_errors
def report(
    saved: str,
    html_path: str | None,
    md_path: str | None,
    json_path: str | None,
    expected_calls: int | None,
) -> None:
    from .render.terminal import TerminalRenderer

    rep = _load(saved)
    if expected_calls:
        from .verdict import with_verdict

        rep = with_verdict(rep, expected_calls=expected_calls)
    _write_outputs(rep, json_path, html_path, md_path, TerminalRenderer().render(rep))


@main.command(
    help="The verified source patches for graph breaks in your code: run (or load) an analysis and "
    "print their diffs; --apply writes the safe ones (--unsafe: all), only to files unchanged since "
    "the analysis.\n\n" + EXIT_CODES_HELP
)
@click.argument("target", required=False)
@click.option(
    "--report",
    "report_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="Use a saved JSON report instead of running TARGET.",
)
@click.option(
    "--diff/--apply",
    "diff_only",
    default=True,
    show_default=True,
    help="Print the diffs (default) or write the patches.",
)
@click.option(
    "--unsafe", is_flag=True, help="With --apply, also write patches whose safety class is unsafe."
)
@analysis_options
@_one_line_errors
def fix(
    target: str | None,
    report_path: str | None,
    diff_only: bool,
    unsafe: bool,
    quiet: bool,
    expected_calls: int | None,
    **analysis: Any,
) -> None:
    from . import fix as fixing

    if bool(target) == bool(report_path):
        raise UsageError("give TARGET or --report saved.json, not both and not neither")
    if report_path:
        rep = _load(report_path)
    else:
        rep, _ = _run_analysis(target, Options.from_cli(analysis), quiet, expected_calls)
    fixing.require_patches(rep)
    outcomes = fixing.apply(rep, write=not diff_only, unsafe=unsafe)
    if not outcomes:
        click.echo("no verified patch (the report lists what was tried and why)")
        return
    if diff_only:
        click.echo(fixing.diffs(rep), nl=False)
    for o in outcomes:
        if o.action != "shown":
            click.echo(
                f"{o.action}: {o.path} ({o.rule}, {o.safety})" + (f": {o.why}" if o.why else "")
            )


@main.command(
    help="Readiness gate for CI: run (or load) an analysis and check thresholds; exit 1 if any fails.\n\n"
    + CHECK_EXIT_CODES_HELP
)
@click.argument("target", required=False)
@click.option(
    "--sweep",
    "sweep_dir",
    default=None,
    help="Gate on a sweep's overview (DIR or DIR/sweep.json) instead of one report.",
)
@click.option(
    "--min-pass-rate",
    type=click.FloatRange(0, 1),
    default=None,
    help="With --sweep: share of targets analysed without an error (0-1).",
)
@click.option(
    "--no-new-slower-than-eager",
    is_flag=True,
    help="With --sweep: fail if a model is slower than eager (CI below 1x) and was not before.",
)
@click.option(
    "--report",
    "report_path",
    default=None,
    help="Check a saved JSON report instead of running TARGET (analysis options it was not "
    "measured with are refused; --expected-calls recomputes its verdict).",
)
@click.option("--max-graph-breaks", type=click.IntRange(0), default=None)
@click.option("--max-recompiles", type=click.IntRange(0), default=None)
@click.option(
    "--min-speedup",
    type=click.FloatRange(0),
    default=None,
    help="Lower bound of the speedup's 95% CI must reach this.",
)
@click.option(
    "--max-compile-seconds",
    type=click.FloatRange(0),
    default=None,
    help="Cold first-call compile time (with --compile-remedies: the best measured remedy's).",
)
@click.option(
    "--max-memory-ratio", type=click.FloatRange(0), default=None, help="Compiled peak / eager peak."
)
@click.option("--require-numerics", is_flag=True, help="Numerics check must pass.")
@click.option(
    "--require-verdict",
    type=click.Choice(["compile", "compile-after-fixes"]),
    default=None,
    help="Verdict must be at least this good (a cant-tell verdict, the speed undecided, is "
    "inconclusive).",
)
@click.option(
    "--inconclusive",
    type=click.Choice(["fail", "pass"]),
    default="fail",
    show_default=True,
    help="How a check whose interval straddles its threshold (INCONCLUSIVE, a JUnit skipped, a "
    "GitHub warning) counts: fail exits 5 (its own code; a failed check still exits 1), pass "
    "exits 0.",
)
@click.option(
    "--known-breaks",
    default=None,
    metavar="FILE",
    help="Accepted graph breaks (TOML or JSON, docs/api.md): fail on a break not listed, or on a "
    "listed one that no longer occurs (stale).",
)
@click.option(
    "--allow-stale", is_flag=True, help="With --known-breaks: a stale entry does not fail."
)
@click.option(
    "--update-known-breaks",
    is_flag=True,
    help="With --known-breaks: rewrite FILE from this report first (reasons kept; new entries get "
    "a TODO reason to edit).",
)
@click.option(
    "--baseline",
    "baseline_path",
    default=None,
    help="A saved JSON report (e.g. from main) to judge regressions against, with --max-new-*; "
    "with --sweep, an earlier sweep (DIR or sweep.json) to judge 'newly' against.",
)
@click.option(
    "--allow-mismatch",
    is_flag=True,
    help="Judge against a --baseline of another target, backend, mode or device anyway (noted); "
    "without it such a baseline is refused (exit 2).",
)
@click.option(
    "--max-new-graph-breaks",
    type=click.IntRange(0),
    default=None,
    help="Graph breaks not in the baseline (by location and reason, not count).",
)
@click.option(
    "--max-new-recompiles",
    type=click.IntRange(0),
    default=None,
    help="Recompiles more than the baseline's.",
)
@click.option(
    "--max-slowdown",
    type=click.FloatRange(0),
    default=None,
    metavar="PCT",
    help="Fail when the speedup is shown slower than the baseline's by more than PCT% (one-sided "
    "Welch test on the two reports' per-process speedups, 95%).",
)
@click.option(
    "--max-compile-growth",
    type=click.FloatRange(0),
    default=None,
    metavar="PCT",
    help="Fail when the cold compile grew by more than PCT% over the baseline's.",
)
@click.option(
    "--junit",
    "junit_path",
    default=None,
    metavar="PATH",
    help="Write the checks as JUnit XML here (one testcase per check; also on exit 2 and 3, "
    "as one testcase with the error).",
)
@click.option(
    "--json",
    "json_path",
    default=None,
    metavar="PATH",
    help="Also save the report checked here (e.g. as the next run's --baseline); with --sweep, "
    "the overview judged.",
)
@click.option(
    "--html",
    "html_path",
    default=None,
    metavar="PATH",
    help="Also write the HTML report here (with --sweep: the overview's page).",
)
@_NO_ANNOTATIONS
@analysis_options
@_one_line_errors
def check(
    target: str | None,
    report_path: str | None,
    quiet: bool,
    expected_calls: int | None,
    baseline_path: str | None,
    allow_mismatch: bool,
    junit_path: str | None,
    json_path: str | None,
    html_path: str | None,
    no_annotations: bool,
    inconclusive: str,
    **kw: Any,
) -> None:
    links = {"report": report_path, "sweep": kw.get("sweep_dir"), "baseline": baseline_path}
    links.update(json=json_path, html=html_path)
    gate = _Gate(junit_path, links, annotations=not no_annotations, inconclusive=inconclusive)
    try:
        if kw.get("sweep_dir"):
            code = _check_sweep(gate, target, report_path, expected_calls, allow_mismatch, kw)
        else:
            code = _check_report(
                gate, target, report_path, quiet, expected_calls, baseline_path, allow_mismatch, kw
            )
    except TcdoctorError as exc:
        gate.not_judged(exc, kw.get("sweep_dir") or target or report_path)
        raise
    sys.exit(code)


def _given(names: Sequence[str]) -> list[str]:
    """The parameters of the running command typed on its command line (not left at their default)."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    return [n for n in names if ctx.get_parameter_source(n) not in (None, ParameterSource.DEFAULT)]


def _analysis_flags(names: Sequence[str]) -> str:
    by_name = {p.name: p.flag.spelling for p in cli_params()}
    return ", ".join(by_name.get(n, "--" + n.replace("_", "-")) for n in names)


def _check_sweep(
    gate: _Gate,
    target: str | None,
    report_path: str | None,
    expected_calls: int | None,
    allow_mismatch: bool,
    kw: dict[str, Any],
) -> int:
    """`check --sweep DIR`: the sweep's thresholds, written as a report's checks are."""
    from .render.github import GitHubAnnotations, sweep_step_summary
    from .render.junit import JUnitRenderer
    from .report.check import BASELINE_KEYS, CHECK_KEYS
    from .sweep import check_sweep_dir

    sweep_dir = kw["sweep_dir"]
    limits = [
        k for k in (*CHECK_KEYS, *BASELINE_KEYS) if kw.get(k) is not None and kw[k] is not False
    ]
    if target or report_path or limits:
        raise TcdoctorError(
            "--sweep DIR takes the sweep's thresholds (--min-pass-rate, "
            "--no-new-slower-than-eager), not a TARGET, --report or a report's thresholds"
        )
    typed = _given([p.name for p in cli_params()]) + (["expected_calls"] if expected_calls else [])
    typed += ["allow_mismatch"] if allow_mismatch else []
    if typed:
        raise TcdoctorError(
            f"{_analysis_flags(typed)}: --sweep DIR judges a finished sweep, which these options "
            "cannot change (give them to `tcdoctor sweep`)"
        )
    overview, results = check_sweep_dir(
        sweep_dir,
        gate.links.get("baseline"),
        kw["min_pass_rate"],
        kw["no_new_slower_than_eager"],
    )
    results = gate.counted(results)

    def write_files() -> list[tuple[str, str]]:
        from .render.write import write_sweep

        return write_sweep(overview, gate.links.get("json"), gate.links.get("html"))

    return gate.finish(
        results,
        junit=lambda: JUnitRenderer(results, gate.links).render_sweep(overview, sweep_dir),
        write_files=write_files,
        summary=lambda: sweep_step_summary(overview, results, None),
        annotations=lambda: GitHubAnnotations(results).render_checks(),
    )


def _check_report(
    gate: _Gate,
    target: str | None,
    report_path: str | None,
    quiet: bool,
    expected_calls: int | None,
    baseline_path: str | None,
    allow_mismatch: bool,
    kw: dict[str, Any],
) -> int:
    """`check TARGET` or `check --report saved.json`: the thresholds, then the regressions."""
    from .report.check import BASELINE_KEYS, CHECK_KEYS, baseline_mismatch, run_checks

    sweep_args = {k: kw.pop(k) for k in ("sweep_dir", "min_pass_rate", "no_new_slower_than_eager")}
    if any(v is not None and v is not False for v in sweep_args.values()):
        raise TcdoctorError("--min-pass-rate, --no-new-slower-than-eager need --sweep DIR")
    thresholds = {k: kw.pop(k) for k in CHECK_KEYS}
    regressions = {k: kw.pop(k) for k in BASELINE_KEYS}
    if bool(target) == bool(report_path):
        raise TcdoctorError("give either TARGET or --report saved.json")
    baseline = _baseline(baseline_path, regressions)
    if allow_mismatch and baseline is None:
        raise TcdoctorError("--allow-mismatch is about a --baseline: give one")
    if baseline is None and not any(v is not None and v is not False for v in thresholds.values()):
        raise TcdoctorError("no thresholds given (see --help)")
    opts = Options.from_cli(kw)  # checked even where a saved report makes them unused
    if report_path:
        rep = _load(report_path)
        _refuse_what_a_saved_report_cannot_honour(rep, opts, report_path)
        if expected_calls:
            from .verdict import with_verdict

            rep = with_verdict(rep, expected_calls=expected_calls)
    else:
        if baseline is not None and not allow_mismatch:  # before the analysis: fail at once
            _refuse_mismatch(baseline_mismatch(baseline, target, opts.to_dict()), baseline_path)
        gate_speedup = (thresholds["min_speedup"],) if thresholds["min_speedup"] is not None else ()
        if baseline is not None:  # --max-slowdown: the loop also times until the Welch test decides
            from .report.check import slowdown_question

            question = slowdown_question(baseline, regressions["max_slowdown"])
            gate_speedup += (question,) if question else ()
        rep, _ = _run_analysis(target, opts, quiet, expected_calls, gate_speedup)
    # --compile-remedies as typed: judge --max-compile-seconds on the best measured remedy (a saved
    # report analysed with remedies is still judged on its cold start unless the flag is given)
    results = run_checks(rep, **thresholds, compile_remedies=opts.compile_remedies is True)
    notes = []
    if baseline is not None:
        from .report.check import baseline_checks, environment_differences

        device = rep.environment.get("device")
        mismatch = baseline_mismatch(baseline, rep.target, rep.options, device)
        if not allow_mismatch:
            _refuse_mismatch(mismatch, baseline_path)
        elif mismatch:
            notes.append(
                "note: judged against a baseline of another measurement (--allow-mismatch): "
                + "; ".join(mismatch)
            )
        results += baseline_checks(rep, baseline, **regressions)
        env = environment_differences(rep, baseline)
        notes += [env] if env else []
    note = "\n".join(notes) or None
    results = gate.counted(results)

    def write_files() -> list[tuple[str, str]]:
        from .render.write import write_report

        return write_report(rep, gate.links.get("json"), gate.links.get("html"))

    from .render.github import GitHubAnnotations, step_summary
    from .render.junit import JUnitRenderer

    return gate.finish(
        results,
        note,
        junit=lambda: JUnitRenderer(results, gate.links).render(rep),
        write_files=write_files,
        summary=lambda: step_summary(rep, results, note),
        annotations=lambda: GitHubAnnotations(results).render(rep),
    )


def _refuse_mismatch(mismatch: list[str], baseline_path: str | None) -> None:
    if mismatch:
        raise TcdoctorError(
            f"--baseline {baseline_path} is another measurement ({'; '.join(mismatch)}): "
            "give --allow-mismatch to judge against it anyway"
        )


def _refuse_what_a_saved_report_cannot_honour(rep: Report, opts: Options, path: str) -> None:
    """`check --report` with an analysis option typed whose value the saved report was not
    measured with: one line, exit 2 (a saved report is never measured again). A value equal to the
    report's (e.g. `--compile-remedies` on a report analysed with it) is honoured."""
    saved, mine = rep.options or {}, opts.to_dict()
    fields = {p.name: p.field for p in cli_params()}
    bad = [n for n in _given(list(fields)) if mine.get(fields[n]) != saved.get(fields[n])]
    if bad:
        was = ", ".join(f"{fields[n]} {saved.get(fields[n], 'unset')}" for n in bad)
        raise TcdoctorError(
            f"{_analysis_flags(bad)}: --report {path} was measured with {was}, and a saved "
            "report is not measured again (drop them, or check TARGET to run a new analysis)"
        )


class _Gate:
    """Where a gate's results go, for `check` and `check --sweep` alike: the JUnit file first (as
    the report files: a closed stdout never costs one), the files `write_files` writes, the terminal
    lines, then on GitHub Actions the step summary and the annotations. `not_judged` writes the
    same outputs for a gate that ended in an error before judging (exit 2 or 3). `inconclusive`:
    how an inconclusive check counts (`--inconclusive fail|pass`), said in its reason (`counted`)
    and applied to the exit code."""

    def __init__(
        self,
        junit_path: str | None,
        links: dict[str, str | None],
        annotations: bool,
        inconclusive: str = "fail",
    ):
        self.junit_path = junit_path
        self.links = {k: v for k, v in links.items() if v}
        self.annotations = annotations
        self.inconclusive = inconclusive

    def counted(self, results: list[CheckResult]) -> list[CheckResult]:
        """The results, each inconclusive one's reason saying how this gate counts it."""
        from .report.check import counted

        return counted(results, self.inconclusive)

    def finish(
        self,
        results: list[CheckResult],
        note: str | None = None,
        *,
        junit: Callable[[], str] | None = None,
        write_files: Callable[[], list[tuple[str, str]]] = list,
        summary: Callable[[], str] | None = None,
        annotations: Callable[[], str] | None = None,
        target: str | None = None,
    ) -> int:
        from .render.github import GitHubAnnotations, step_summary
        from .render.junit import JUnitRenderer
        from .render.write import write_text
        from .report.check import gate_exit_code, gate_lines

        if self.junit_path:
            xml = junit() if junit else JUnitRenderer(results, self.links).render_target(target)
            write_text(self.junit_path, xml)
        written = write_files()
        click.echo("\n".join(gate_lines(results, note)))
        for label, p in written:
            click.echo(f"{label}: {p}")
        if self.junit_path:
            click.echo(f"JUnit XML: {self.junit_path}")
        _github(
            summary or (lambda: step_summary(None, results, note)),
            (annotations or (lambda: GitHubAnnotations(results).render_checks()))
            if self.annotations
            else None,
        )
        return gate_exit_code(results, self.inconclusive)

    def not_judged(self, exc: TcdoctorError, target: str | None) -> None:
        """The JUnit file (one testcase with the error), the step summary and one ::error for a
        gate that ended in an error; a file that cannot be written is a warning, the error stays."""
        from .render.github import GitHubAnnotations, step_summary
        from .render.junit import JUnitRenderer
        from .render.write import write_text
        from .report.check import error_result

        results = [error_result("tcdoctor check", exc.message)]
        if self.junit_path:
            xml = JUnitRenderer(results, self.links).render_target(target)
            try:
                write_text(self.junit_path, xml)
            except TcdoctorError as err:
                click.echo(f"tcdoctor: warning: {err.message}", err=True)
        _github(
            lambda: step_summary(None, results),
            (lambda: GitHubAnnotations(results).render_checks()) if self.annotations else None,
        )


def _baseline(path: str | None, regressions: dict[str, Any]) -> Report | None:
    """The baseline report, loaded before any analysis runs (a wrong path fails at once)."""
    given = [k for k, v in regressions.items() if v is not None]
    if given and not path:
        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        raise TcdoctorError(f"{flags}: a regression limit needs --baseline old.json")
    if path and not given:
        raise TcdoctorError(
            "--baseline needs a limit: --max-new-graph-breaks, --max-new-recompiles, "
            "--max-slowdown or --max-compile-growth"
        )
    return _load(path) if path else None


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
@click.option("--out", "out_dir", default="tcdoctor-sweep", show_default=True, help="Sweep folder.")
@click.option("--retry-failed", is_flag=True, help="Rerun targets whose recorded result failed.")
@click.option("--shard", default=None, help="K/N: analyse only the K-th of N shares (1-based).")
@click.option(
    "--durations",
    default=None,
    help="With --shard: an earlier sweep (DIR or sweep.json) whose durations balance the shards.",
)
@click.option(
    "--baseline",
    default=None,
    help="An earlier sweep (DIR or sweep.json): each row says what changed since.",
)
@click.option("--merge", is_flag=True, help="Join the shard folders given as arguments into --out.")
@_one_line_errors
def sweep(
    targets: tuple[str, ...],
    out_dir: str,
    retry_failed: bool,
    shard: str | None,
    durations: str | None,
    baseline: str | None,
    merge: bool,
    quiet: bool,
    expected_calls: int | None,
    **analysis: Any,
) -> None:
    from .sweep import run_sweep
    from .sweep.merge import merge_dirs

    if merge:
        sys.exit(merge_dirs(targets, out_dir, baseline))
    code = run_sweep(
        targets,
        Options.from_cli(analysis),
        expected_calls,
        out_dir,
        quiet=quiet,
        retry_failed=retry_failed,
        shard=shard,
        durations=durations,
        baseline=baseline,
    )
    sys.exit(code)


@main.command(
    help="What changed between two saved reports (before/after a fix, two torch versions). "
    "A regression is a graph break not in BEFORE, more recompiles, or the speedup shown slower "
    "(the one-sided Welch test of `check --max-slowdown`, with no margin).\n\n"
    "Exit codes: 0 no regression (or --no-fail); 1 a regression; 2 usage error (a missing or "
    "unreadable report); 70 internal tcdoctor error."
)
@click.argument("before", type=click.Path(dir_okay=False))
@click.argument("after", type=click.Path(dir_okay=False))
@click.option("--json", "json_path", default=None, metavar="PATH", help="Write the diff as JSON.")
@click.option("--md", "md_path", default=None, metavar="PATH", help="Write the diff as Markdown.")
@click.option("--no-fail", is_flag=True, help="Exit 0 even when the diff finds a regression.")
@_one_line_errors
def diff(
    before: str, after: str, json_path: str | None, md_path: str | None, no_fail: bool
) -> None:
    from .render.write import write_all
    from .report.check import regressions
    from .report.diff import diff_json, diff_markdown, render_diff

    a, b = _load(before), _load(after)
    found = regressions(a, b)
    outputs = {
        json_path: lambda: diff_json(a, b, found),
        md_path: lambda: diff_markdown(a, b, found),
    }
    write_all([(p, text) for p, text in outputs.items() if p])
    click.echo(render_diff(a, b, found))
    for label, p in (("JSON", json_path), ("Markdown", md_path)):
        if p:
            click.echo(f"{label} diff: {p}")
    regressed = any(not r.passed and not r.error for r in found)
    sys.exit(EXIT_CHECK_FAILED if regressed and not no_fail else 0)


@main.command(
    help="Join the reports of a distributed run's nodes (tcdoctor analyze --nnodes N on each) into one."
)
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--output",
    "json_path",
    default="tcdoctor-merged.json",
    show_default=True,
    help="Merged JSON report.",
)
@click.option("--html", "html_path", default=None, help="HTML output path.")
@click.option("--md", "md_path", default=None, help="Markdown output path.")
@_one_line_errors
def merge(
    reports: tuple[str, ...], json_path: str, html_path: str | None, md_path: str | None
) -> None:
    from .render.terminal import TerminalRenderer
    from .report.distributed import merge as merge_reports
    from .verdict import with_verdict

    try:
        merged = merge_reports([_load(p) for p in reports])
    except ValueError as exc:
        raise TcdoctorError(f"cannot merge: {exc}") from None
    rep = with_verdict(merged)
    _write_outputs(rep, json_path, html_path, md_path, TerminalRenderer().render(rep))


if __name__ == "__main__":  # pragma: no cover
    main()
