"""Command line: analyze, report, check, diff. Every expected failure is one line and an exit code."""

from __future__ import annotations

import functools
import os
import sys
from typing import TYPE_CHECKING, Any, Callable

import click

from .errors import (
    EXIT_CHECK_FAILED,
    EXIT_CODES_HELP,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_OUTPUT_CLOSED,
    TcdoctorError,
)

if TYPE_CHECKING:
    from .report.model import Report


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
) -> None:
    """Write the report files, then print `summary` and where the files are: files first, so a
    closed stdout (`| head`) never costs a report."""
    try:
        if json_path:
            report.save(json_path)
        if html_path:
            from .render.html import render as render_html

            with open(html_path, "w", encoding="utf-8") as fh:
                fh.write(render_html(report, base_dir=os.path.dirname(os.path.abspath(html_path))))
        if md_path:
            from .render.markdown import render as render_md

            with open(md_path, "w", encoding="utf-8") as fh:
                fh.write(render_md(report))
    except OSError as exc:
        raise TcdoctorError(f"cannot write output: {exc}") from None
    if summary is not None:
        click.echo(summary)
    for label, p in (("JSON", json_path), ("HTML", html_path), ("Markdown", md_path)):
        if p:
            click.echo(f"{label} report: {p}")


@click.group(
    help="Should you torch.compile this model? Measured answers with the evidence.\n\n"
    + EXIT_CODES_HELP
)
@click.version_option(package_name="tcdoctor")
def main() -> None:
    pass


distributed_options = [
    click.option(
        "--nproc",
        type=click.IntRange(1),
        default=1,
        show_default=True,
        help="Ranks on this node: run the analysis under torch.distributed.run, one process per rank.",
    ),
    click.option(
        "--nnodes",
        type=click.IntRange(1),
        default=1,
        show_default=True,
        help="Nodes (torchrun's --nnodes).",
    ),
    click.option(
        "--node-rank",
        type=click.IntRange(0),
        default=None,
        help="This node's rank (torchrun's --node-rank).",
    ),
    click.option(
        "--rdzv-endpoint",
        default=None,
        help="host:port of the rendezvous (torchrun's --rdzv-endpoint).",
    ),
    click.option(
        "--rdzv-backend", default=None, help="torchrun's --rdzv-backend [default: torchrun's]."
    ),
    click.option(
        "--dist-backend",
        type=click.Choice(["gloo", "nccl"]),
        default=None,
        help="Process group backend [default: nccl on CUDA, else gloo].",
    ),
    click.option(
        "--pg-timeout",
        "pg_timeout_s",
        type=click.FloatRange(1),
        default=None,
        help="Your job's process-group timeout in seconds, for the skew comparison [default: torch's].",
    ),
    click.option(
        "--torch-trace",
        "torch_trace",
        default=None,
        help="Write PyTorch's structured compile logs (TORCH_TRACE) here, for tlparse [distributed default: ./tcdoctor-torch-trace].",
    ),
    click.option(
        "--no-torch-trace", is_flag=True, help="No structured compile logs in a distributed run."
    ),
]


def analysis_options(fn: Callable) -> Callable:
    opts = [
        click.option(
            "--backend",
            default="inductor",
            show_default=True,
            help="torch.compile backend (eager/aot_eager are cheap).",
        ),
        click.option(
            "--mode",
            default=None,
            help="torch.compile mode: default, reduce-overhead, max-autotune.",
        ),
        click.option(
            "--threads",
            type=click.IntRange(1),
            default=None,
            help="torch.set_num_threads in the analysis process [default: 1].",
        ),
        click.option(
            "--timeout",
            "timeout_s",
            type=click.FloatRange(1),
            default=600.0,
            show_default=True,
            help="Seconds for the whole analysis.",
        ),
        click.option(
            "--budget",
            "budget_s",
            type=click.FloatRange(0.05),
            default=5.0,
            show_default=True,
            help="Seconds of interleaved eager/compiled timing.",
        ),
        click.option(
            "--profile-budget",
            "profile_budget_s",
            type=click.FloatRange(0.1),
            default=1.0,
            show_default=True,
            help="Seconds for the profiler phase (guard cost per call, top operators), start-up included.",
        ),
        click.option(
            "--no-warm", is_flag=True, help="Skip the warm-cache compile in a second fresh process."
        ),
        click.option(
            "--trace",
            "trace_dir",
            default=None,
            help="Write Chrome/Perfetto traces of eager and compiled calls to this folder.",
        ),
        click.option(
            "--expected-calls",
            type=click.IntRange(1),
            default=None,
            help="Calls the model will serve (break-even horizon).",
        ),
        click.option(
            "--modes",
            default="default",
            show_default=True,
            help="Compare these torch.compile modes side by side (comma-separated).",
        ),
        click.option(
            "--submodules/--no-submodules",
            default=None,
            help="Try compiling each submodule alone [default: only when the model has many graph breaks].",
        ),
        click.option(
            "--depth",
            type=click.IntRange(1),
            default=1,
            show_default=True,
            help="Submodule depth for --submodules.",
        ),
        click.option(
            "--dynamic/--no-dynamic",
            default=None,
            help="Compare static/automatic/dynamic shapes [default: when variants change shapes].",
        ),
        click.option(
            "--training-ways/--no-training-ways",
            default=True,
            show_default=True,
            help="For a TrainStep, also time compiling the model alone and the optimizer alone, "
            "each in a fresh process.",
        ),
        click.option(
            "--fallback-random/--no-fallback-random",
            default=False,
            show_default=True,
            help="For a model that draws random numbers (dropout): compile it once more with Inductor's "
            "fallback_random=True so compiled and eager draw the same numbers, and compare their outputs "
            "(PyTorch's accuracy-mode method; about one more cold compile). Without it, such a model's "
            "numerics are reported as not measured.",
        ),
        click.option(
            "--fixes/--no-fixes",
            default=True,
            show_default=True,
            help="Try the fixes that need no source edit in fresh processes, and locate a loss by backend.",
        ),
        click.option(
            "--fix-budget",
            "fix_budget_s",
            type=click.FloatRange(1),
            default=None,
            help="Seconds for tried fixes and the backend ablation [default: 4 × the cold first call, ≥ 20 s].",
        ),
        click.option(
            "--quiet", "-q", is_flag=True, help="No progress on stderr while the analysis runs."
        ),
        *distributed_options,
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


def _run_analysis(
    target: str,
    backend: str,
    mode: str | None,
    threads: int | None,
    timeout_s: float,
    budget_s: float,
    no_warm: bool,
    trace_dir: str | None,
    expected_calls: int | None,
    modes: str,
    submodules: bool | None,
    depth: int,
    dynamic: bool | None,
    training_ways: bool = True,
    fallback_random: bool = False,
    quiet: bool = False,
    profile_budget_s: float = 1.0,
    fixes: bool = True,
    fix_budget_s: float | None = None,
    **dist: Any,
) -> tuple[Report, int]:
    from .options import DEFAULT_THREADS, Options
    from .run.launcher import analyze_target
    from .verdict import with_verdict

    opts = Options(
        backend=backend,
        mode=mode,
        threads=threads or DEFAULT_THREADS,
        timeout_s=timeout_s,
        budget_s=budget_s,
        profile_budget_s=profile_budget_s,
        fixes=fixes,
        fix_budget_s=fix_budget_s,
        warm=not no_warm,
        trace_dir=trace_dir,
        submodules=submodules,
        depth=depth,
        dynamic=dynamic,
        training_ways=training_ways,
        fallback_random=fallback_random,
        modes=[m.strip() for m in modes.split(",") if m.strip()] or ["default"],
    )
    from .run.tlparse import attach, configure, prepare

    configure(opts, **dist)  # --nproc/--nnodes/... and --torch-trace (tcdoctor/tlparse.py)
    prepare(opts.torch_trace)
    if opts.nproc > 1 or opts.nnodes > 1:
        from .run.distributed import analyze_distributed

        report, code = analyze_distributed(target, opts, progress=not quiet)
    else:
        report, code = analyze_target(target, opts, progress=not quiet)
    attach(report, opts)
    if expected_calls:
        report = with_verdict(report, expected_calls=expected_calls)
    return report, code


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
@_one_line_errors
def analyze(target: str, json_path: str, html_path: str, md_path: str | None, **kw: Any) -> None:
    from .render.terminal import render

    report, code = _run_analysis(target, **kw)
    _write_outputs(report, json_path or None, html_path or None, md_path, render(report) + "\n")
    sys.exit(code)


def _load(path: str) -> Report:
    from .report.model import Report

    try:
        return Report.load(path)
    except FileNotFoundError:
        raise TcdoctorError(f"file not found: {path}") from None
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
    from .render.terminal import render

    rep = _load(saved)
    if expected_calls:
        from .verdict import with_verdict

        rep = with_verdict(rep, expected_calls=expected_calls)
    _write_outputs(rep, json_path, html_path, md_path, render(rep))


@main.command(
    help="Readiness gate for CI: run (or load) an analysis and check thresholds; exit 1 if any fails.\n\n"
    + EXIT_CODES_HELP
)
@click.argument("target", required=False)
@click.option(
    "--report",
    "report_path",
    default=None,
    help="Check a saved JSON report instead of running TARGET.",
)
@click.option("--max-graph-breaks", type=int, default=None)
@click.option("--max-recompiles", type=int, default=None)
@click.option(
    "--min-speedup",
    type=float,
    default=None,
    help="Lower bound of the speedup's 95% CI must reach this.",
)
@click.option(
    "--max-compile-seconds", type=float, default=None, help="Cold first-call compile time."
)
@click.option("--max-memory-ratio", type=float, default=None, help="Compiled peak / eager peak.")
@click.option("--require-numerics", is_flag=True, help="Numerics check must pass.")
@click.option(
    "--require-verdict",
    type=click.Choice(["compile", "compile-after-fixes"]),
    default=None,
    help="Verdict must be at least this good.",
)
@analysis_options
@_one_line_errors
def check(target: str | None, report_path: str | None, **kw: Any) -> None:
    from .report.check import CHECK_KEYS, run_checks

    thresholds = {k: kw.pop(k) for k in CHECK_KEYS}
    if bool(target) == bool(report_path):
        raise TcdoctorError("give either TARGET or --report saved.json")
    if report_path:
        rep = _load(report_path)
    else:
        rep, _ = _run_analysis(target, **kw)
    results = run_checks(rep, **thresholds)
    if not results:
        raise TcdoctorError("no thresholds given (see --help)")
    for r in results:
        click.echo(f"{'PASS' if r['passed'] else 'FAIL'}  {r['name']}: {r['detail']}")
    failed = [r for r in results if not r["passed"]]
    click.echo(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    sys.exit(EXIT_CHECK_FAILED if failed else EXIT_OK)


@main.command(
    help="What changed between two saved reports (before/after a fix, two torch versions)."
)
@click.argument("before", type=click.Path(dir_okay=False))
@click.argument("after", type=click.Path(dir_okay=False))
@_one_line_errors
def diff(before: str, after: str) -> None:
    from .report.diff import render_diff

    click.echo(render_diff(_load(before), _load(after)))


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
    from .render.terminal import render
    from .report.distributed import merge as merge_reports
    from .verdict import with_verdict

    try:
        merged = merge_reports([_load(p) for p in reports])
    except ValueError as exc:
        raise TcdoctorError(f"cannot merge: {exc}") from None
    rep = with_verdict(merged)
    _write_outputs(rep, json_path, html_path, md_path, render(rep))


if __name__ == "__main__":  # pragma: no cover
    main()
