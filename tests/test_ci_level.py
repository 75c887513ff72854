"""The decision interval is labelled with the level it was taken at: across processes added one
look at a time it is Pocock's per-look level for the looks taken (98.1% for looks at 3..6
processes with Student's t, benchmarks/pocock_t_levels.py), not 95%; one process's own
interval stays 95%. Literal figures, no torch."""

from __future__ import annotations

from test_decisions import _named, _proc, _report

from tcdoctor.render.markdown import MarkdownRenderer
from tcdoctor.render.terminal import TerminalRenderer
from tcdoctor.report.processes import claims, sequential
from tcdoctor.verdict import with_verdict


def _combined(*speeds: float) -> dict:
    seq = {"cap": 6, "looks": 4, "level": sequential.look_level(6), "timed": len(speeds)}
    return claims.combine(_named(*(_proc(s) for s in speeds)), seq)


def test_the_headline_interval_names_pococks_level_everywhere_it_is_shown():
    level = sequential.look_level(6)
    assert 0.98 < level < 0.985
    runtime = _combined(1.50, 1.55, 1.60)
    assert runtime["ci_level"] == level
    rep = with_verdict(_report(runtime))
    shown = {
        "verdict": " ".join(rep.verdict.reasons),
        "terminal": TerminalRenderer().render(rep),
        "markdown": MarkdownRenderer().render(rep),
    }
    for where, text in shown.items():
        assert f"{level * 100:.1f}% CI" in text, where
        assert "95% CI 1." not in text.split("glibc")[0], where  # the headline is not called 95%


def test_one_process_keeps_its_own_95_percent_interval():
    runtime = claims.combine(_named(_proc(1.5)), None)
    assert "ci_level" not in runtime
    rep = with_verdict(_report(dict(runtime, ci_level=0.95)))
    assert "1.50× faster (95% CI 1.48–1.52)" in " ".join(rep.verdict.reasons)
