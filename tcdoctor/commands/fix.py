"""`tcdoctor fix`: the verified source patches of an analysis (TARGET run, or `--report
saved.json`), their diffs printed or (`--apply`) the chosen ones written (tcdoctor/fix.py says
which and why). Exit codes as ruff's: 0 nothing to change, 1 a diff shown or a chosen patch left
unwritten, 2 usage (TARGET and --report both or neither, an unknown rule code)."""

from __future__ import annotations

from typing import Any

import click

from ..errors import UsageError
from ..outcomes import FixAction
from .analyze import analysis
from .saved import load_saved


def run_fix(
    target: str | None,
    report_path: str | None,
    diff_only: bool,
    unsafe: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    quiet: bool,
    expected_calls: int | None,
    **options: Any,
) -> int:
    """The patches shown or written, one line each for what was written or left; the exit code."""
    from .. import fix as fixing

    if bool(target) == bool(report_path):
        raise UsageError("give TARGET or --report saved.json, not both and not neither")
    chosen, left_out = fixing.codes(select), fixing.codes(ignore)
    if report_path:
        rep = load_saved(report_path)
    else:
        rep, _ = analysis(target, options, quiet, expected_calls)  # type: ignore[arg-type]
    fixing.require_patches(rep)
    for line in fixing.suppressed(rep):
        click.echo(f"suppressed: {line}", err=True)
    outcomes = fixing.apply(rep, not diff_only, unsafe, chosen, left_out)
    if not outcomes:
        click.echo("no verified patch (the report lists what was tried and why)")
        return 0
    if diff_only:
        click.echo(fixing.diffs(rep, chosen, left_out), nl=False)
    for o in outcomes:
        if o.action != FixAction.SHOWN:
            click.echo(
                f"{o.action}: {o.path} ({o.rule}, {o.safety})" + (f": {o.why}" if o.why else "")
            )
    return fixing.exit_code(outcomes)
