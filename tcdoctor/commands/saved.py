"""`load_saved`: a saved JSON report as every command that reads one gets it (`report`,
`check --report`, a `--baseline`, `fix --report`, `diff`, `merge`).

Method: `Report.load` (the schema's check), each failure one line naming the file (exit 2); the
analysis options typed beside a saved report refused when the report was not measured with them;
the verdict re-derived for `expected_calls` (`verdict.with_verdict`, the break-even horizon), as
`run/pipeline.analyze` does for a fresh analysis. Pitfall: a saved report is never measured again,
so an option it was measured with another value of cannot be honoured, only refused; an option
typed with the value the report has (`--compile-remedies` on a report analysed with it) is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import TcdoctorError
from ..options import cli_params
from .flags import analysis_flags

if TYPE_CHECKING:
    from ..report.model import Report


def load_saved(
    path: str, expected_calls: int | None = None, options: Mapping[str, Any] | None = None
) -> Report:
    """The report saved at `path`. `options`: the analysis options typed on the command line, by
    parameter name ({"backend": "eager"}, as `Options.to_dict` records each), refused unless the
    report was measured with those values; `expected_calls`: the verdict for that horizon."""
    from ..report.model import Report

    try:
        rep = Report.load(path)
    except FileNotFoundError:
        raise TcdoctorError(f"file not found: {path}") from None
    except TcdoctorError:
        raise  # already one line naming the file (ReportError)
    except (ValueError, OSError) as exc:
        raise TcdoctorError(f"cannot read report {path}: {exc}") from None
    _refuse_unmeasured(rep, options or {}, path)
    if expected_calls:
        from ..verdict import with_verdict

        rep = with_verdict(rep, expected_calls=expected_calls)
    return rep


def _refuse_unmeasured(rep: Report, options: Mapping[str, Any], path: str) -> None:
    """One line, exit 2, naming each option typed whose value the report was not measured with."""
    saved = rep.options or {}
    fields = {p.name: p.field for p in cli_params()}
    bad = [n for n, v in options.items() if v != saved.get(fields[n])]
    if bad:
        was = ", ".join(f"{fields[n]} {saved.get(fields[n], 'unset')}" for n in bad)
        raise TcdoctorError(
            f"{analysis_flags(bad)}: --report {path} was measured with {was}, and a saved "
            "report is not measured again (drop them, or check TARGET to run a new analysis)"
        )
