"""`tcdoctor check`: one report (a TARGET analysed, or `--report saved.json`), optionally against
a `--baseline`, or a sweep's overview (`--sweep DIR`), judged by the gate's table (checks/table.py
`CHECKS`) and written by `Gate` (outputs.py).

Method: the limits are split by the table's scopes (a report's, a baseline's, a sweep's); what a
combination cannot honour is refused before any analysis runs, one line and exit 2 (a sweep's
limit without --sweep, a report's with it, an analysis option beside --sweep or beside a saved
report measured otherwise, a regression limit without --baseline and the reverse, a baseline of
another measurement without --allow-mismatch). Pitfalls: `check TARGET` with a baseline refuses a
mismatched one before the analysis (its device is known only after, so that is compared again);
--min-speedup and --max-slowdown are handed to the analysis as questions its timing loop must
answer, so the processes it times decide them. The command line is read once, into a `CheckArgs`
(what is judged, each scope's limits, the analysis options, the outputs), which every step reads."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..checks.table import BASELINE, REPORT, SWEEP, checks, given
from ..errors import TcdoctorError
from ..options import Options, cli_params
from ..render.formats import Outputs
from ..report.model import Report
from .flags import analysis_flags, flag_list, typed
from .outputs import Gate
from .saved import load_saved


@dataclasses.dataclass(frozen=True)
class CheckArgs:
    """`tcdoctor check`'s command line, read once from click's values (`from_click`): what is
    judged, the baseline, each scope's limits, the analysis options, where the results go."""

    target: str | None
    report_path: str | None
    sweep_dir: str | None
    baseline_path: str | None
    allow_mismatch: bool
    expected_calls: int | None
    quiet: bool
    limits: dict[str, dict[str, Any]]  # by scope (REPORT, BASELINE, SWEEP): check key -> value
    analysis: dict[str, Any]  # the analysis options as click parsed them (Options.from_cli)
    outputs: Outputs  # the report's (with --sweep: the overview's) formats asked for
    junit_path: str | None
    annotations: bool  # GitHub annotations (--no-annotations turns them off)
    inconclusive: str  # how an inconclusive check counts: "fail" or "pass"

    @classmethod
    def from_click(cls, kw: Mapping[str, Any]) -> CheckArgs:
        """The command line click parsed (`kw`: its values by parameter name)."""
        return cls(
            **{k: kw[k] for k in _OWN},
            outputs=Outputs.take(dict(kw)),
            limits={scope: {c.key: kw[c.key] for c in checks(scope)} for scope in _SCOPES},
            analysis={p.name: kw[p.name] for p in cli_params()},
            annotations=not kw["no_annotations"],
        )

    @property
    def links(self) -> dict[str, str | None]:
        """What the gate's outputs link to: the report or sweep judged, the baseline (the files
        written are added by the `Gate`)."""
        return {"report": self.report_path, "sweep": self.sweep_dir, "baseline": self.baseline_path}


_SCOPES = (REPORT, BASELINE, SWEEP)
_OWN = (
    "target",
    "report_path",
    "sweep_dir",
    "baseline_path",
    "allow_mismatch",
    "expected_calls",
    "quiet",
    "junit_path",
    "inconclusive",
)


def run_check(args: CheckArgs) -> int:
    """`tcdoctor check` from its command line read once (`CheckArgs.from_click`); the exit code.
    A gate that ends in an error still writes its outputs (`Gate.not_judged`)."""
    gate = Gate(args.junit_path, args.links, args.annotations, args.inconclusive, args.outputs)
    judged = args.sweep_dir or args.target or args.report_path
    try:
        return _check_sweep(gate, args) if args.sweep_dir else _check_report(gate, args)
    except TcdoctorError as exc:
        gate.not_judged(exc, judged)
        raise


def _any(limits: dict[str, Any]) -> bool:
    return any(given(v) for v in limits.values())


def _check_sweep(gate: Gate, args: CheckArgs) -> int:
    """`check --sweep DIR`: the sweep's thresholds, written as a report's checks are."""
    from ..render.github import GitHubAnnotations, sweep_step_summary
    from ..render.junit import JUnitRenderer
    from ..sweep import check_sweep_dir

    sweep_dir, limits = args.sweep_dir, args.limits[SWEEP]
    report_given = [args.target, args.report_path]
    if any(report_given) or _any(args.limits[REPORT]) or _any(args.limits[BASELINE]):
        raise TcdoctorError(
            f"--sweep DIR takes the sweep's thresholds ({flag_list(checks(SWEEP))}), not a "
            "TARGET, --report or a report's thresholds"
        )
    names = typed([p.name for p in cli_params()])
    names += [k for k in ("expected_calls", "allow_mismatch") if getattr(args, k)]
    if names:
        raise TcdoctorError(
            f"{analysis_flags(names)}: --sweep DIR judges a finished sweep, which these options "
            "cannot change (give them to `tcdoctor sweep`)"
        )
    overview, results = check_sweep_dir(sweep_dir, gate.links.get("baseline"), **limits)
    results = gate.counted(results)

    from ..render.write import write_formats

    return gate.finish(
        results,
        junit=lambda: JUnitRenderer(results, gate.links).render_sweep(overview, sweep_dir),
        write_files=lambda: write_formats(overview, gate.outputs, "overview"),
        summary=lambda: sweep_step_summary(overview, results, None),
        annotations=lambda: GitHubAnnotations(results).render_checks(),
    )


def _check_report(gate: Gate, args: CheckArgs) -> int:
    """`check TARGET` or `check --report saved.json`: the thresholds, then the regressions."""
    from ..checks.regression import baseline_mismatch
    from ..checks.table import run_checks

    if _any(args.limits[SWEEP]):
        raise TcdoctorError(f"{flag_list(checks(SWEEP))} need --sweep DIR")
    report_limits, regressions = args.limits[REPORT], args.limits[BASELINE]
    if bool(args.target) == bool(args.report_path):
        raise TcdoctorError("give either TARGET or --report saved.json")
    baseline = _baseline(args.baseline_path, regressions)
    if args.allow_mismatch and baseline is None:
        raise TcdoctorError("--allow-mismatch is about a --baseline: give one")
    if baseline is None and not _any(report_limits):
        raise TcdoctorError("no thresholds given (see --help)")
    opts = Options.from_cli(args.analysis)  # checked even where a saved report makes them unused
    if args.report_path:
        rep = load_saved(args.report_path, args.expected_calls, _typed_options(opts))
    else:
        if baseline is not None and not args.allow_mismatch:  # before the analysis: fail at once
            mismatch = baseline_mismatch(baseline, args.target, opts.to_dict())
            _refuse_mismatch(mismatch, args.baseline_path)
        rep = _analyse(args, opts, baseline)
    # --compile-remedies as typed: judge --max-compile-seconds on the best measured remedy (a saved
    # report analysed with remedies is still judged on its cold start unless the flag is given)
    results = run_checks(rep, compile_remedies=opts.compile_remedies is True, **report_limits)
    notes = []
    if baseline is not None:
        notes += _against_baseline(rep, baseline, args, results)
    return _finish_report(gate, rep, results, "\n".join(notes) or None)


def _against_baseline(rep: Report, baseline: Report, args: CheckArgs, results: list) -> list[str]:
    """The regressions judged against `baseline` (added to `results`), and the notes: a
    mismatched baseline allowed, the environments that differ."""
    from ..checks.regression import baseline_mismatch, environment_differences
    from ..checks.table import baseline_checks

    notes = []
    device = rep.environment.get("device")
    mismatch = baseline_mismatch(baseline, rep.target, rep.options, device)
    if not args.allow_mismatch:
        _refuse_mismatch(mismatch, args.baseline_path)
    elif mismatch:
        notes.append(
            "note: judged against a baseline of another measurement (--allow-mismatch): "
            + "; ".join(mismatch)
        )
    results += baseline_checks(rep, baseline, **args.limits[BASELINE])
    env = environment_differences(rep, baseline)
    return notes + ([env] if env else [])


def _typed_options(opts: Options) -> dict[str, Any]:
    """The analysis options typed on the command line, each as the report records it."""
    fields = {p.name: p.field for p in cli_params()}
    mine = opts.to_dict()
    return {n: mine.get(fields[n]) for n in typed(list(fields))}


def _analyse(args: CheckArgs, opts: Options, baseline: Report | None) -> Report:
    """`check TARGET`'s analysis (run/pipeline.py), with progress unless --quiet. What the checks
    given ask of its timing loop (`checks.table.questions`: --min-speedup's threshold,
    --max-slowdown's Welch comparison with the baseline's processes, one `Questions`) is handed
    to it, so the processes it times decide them."""
    from ..checks.table import questions
    from ..run.pipeline import analyze

    asked = questions({**args.limits[REPORT], **args.limits[BASELINE]}, baseline)
    rep, _ = analyze(
        args.target,
        opts,
        expected_calls=args.expected_calls,
        questions=asked,
        progress=not args.quiet,
    )
    return rep


def _finish_report(gate: Gate, rep: Report, results: list, note: str | None) -> int:
    """A report's results through every output of the gate, the report files included."""
    from ..render.github import GitHubAnnotations, step_summary
    from ..render.junit import JUnitRenderer

    results = gate.counted(results)

    from ..render.write import write_report

    return gate.finish(
        results,
        note,
        junit=lambda: JUnitRenderer(results, gate.links).render(rep),
        write_files=lambda: write_report(rep, gate.outputs),
        summary=lambda: step_summary(rep, results, note),
        annotations=lambda: GitHubAnnotations(results).render(rep),
    )


def _refuse_mismatch(mismatch: list[str], baseline_path: str | None) -> None:
    if mismatch:
        raise TcdoctorError(
            f"--baseline {baseline_path} is another measurement ({'; '.join(mismatch)}): "
            "give --allow-mismatch to judge against it anyway"
        )


def _baseline(path: str | None, regressions: dict[str, Any]) -> Report | None:
    """The baseline report, loaded before any analysis runs (a wrong path fails at once)."""
    given = [c for c in checks(BASELINE) if regressions.get(c.key) is not None]
    if given and not path:
        raise TcdoctorError(f"{flag_list(given)}: a regression limit needs --baseline old.json")
    if path and not given:
        raise TcdoctorError(f"--baseline needs a limit: {flag_list(checks(BASELINE), ' or ')}")
    return load_saved(path) if path else None
