"""`tcdoctor report` and `tcdoctor merge`: saved reports written again, without running anything.

`report` reads one saved report (commands/saved.py `load_saved`: one-line errors; with
`--expected-calls` its verdict re-derived for that horizon) and writes the files asked for;
`merge` joins the reports of a distributed run's nodes (report/distributed.py `merge`) and judges
the joined report (verdict/), then writes it. Both print the terminal summary after the files, as
`analyze` does (commands/outputs.py `write_outputs`). Pitfall: neither imports torch, so a saved
report re-renders where torch is not installed (tests/test_golden.py compares every byte).
"""

from __future__ import annotations

from typing import Any

from ..errors import TcdoctorError
from ..render.formats import Outputs
from .outputs import write_outputs
from .saved import load_saved


def run_report(saved: str, expected_calls: int | None, flags: dict[str, Any]) -> None:
    """`tcdoctor report SAVED`: the files its output flags ask for, then the terminal summary."""
    from ..render.terminal import TerminalRenderer

    rep = load_saved(saved, expected_calls)
    write_outputs(rep, Outputs.take(flags), TerminalRenderer().render(rep))


def run_merge(reports: tuple[str, ...], flags: dict[str, Any]) -> None:
    """`tcdoctor merge REPORTS...`: the nodes' reports joined, judged and written; reports that
    cannot be joined (another target, the same rank twice) are one line, exit 2."""
    from ..render.terminal import TerminalRenderer
    from ..report.distributed import merge as merge_reports
    from ..verdict import with_verdict

    try:
        merged = merge_reports([load_saved(p) for p in reports])
    except ValueError as exc:
        raise TcdoctorError(f"cannot merge: {exc}") from None
    rep = with_verdict(merged)
    write_outputs(rep, Outputs.take(flags), TerminalRenderer().render(rep))
