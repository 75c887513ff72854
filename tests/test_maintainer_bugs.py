"""Bugs a maintainer found reading the code (issue 44, item 5), each held by a test that failed on
the code before its fix. Cheap: literal events, records and monkeypatched entry points; nothing is
compiled and no child process is started."""

import json
import os
import stat

import jsonschema
import pytest
import torch

from tcdoctor.errors import EXIT_INTERNAL, ChildFailed, UserCodeError
from tcdoctor.options import Options
from tcdoctor.report.events import Event
from tcdoctor.report.model import shipped_schema_text

# ---------------------------------------------------------------------------- not measured (why)

MEMORY_WHY = "no growth figure: the memory phase timed out"
DRIFT_WHY = "numerics were not compared on this device"


def _skipped_attribution_report():
    """A report assembled from a run whose memory-attribution and drift phases were skipped."""
    from tcdoctor.run.assemble import assemble

    events = [
        Event(event="start", phase="memory_graphs"),
        Event(event="skipped", phase="memory_graphs", why=MEMORY_WHY),
        Event(event="start", phase="drift"),
        Event(event="skipped", phase="drift", why=DRIFT_WHY),
    ]
    return assemble("m.py:build", Options().to_dict(), events, [])


def test_a_skipped_memory_attribution_or_drift_phase_says_not_measured_why():
    rep = _skipped_attribution_report()
    assert rep.memory.attribution is not None and rep.memory.attribution.not_measured == MEMORY_WHY
    assert rep.numerics.drift is not None and rep.numerics.drift.not_measured == DRIFT_WHY
    data = json.loads(rep.to_json())
    assert data["memory"]["attribution"]["not_measured"] == MEMORY_WHY
    assert data["numerics"]["drift"]["not_measured"] == DRIFT_WHY
    validator = jsonschema.Draft202012Validator(json.loads(shipped_schema_text()))
    assert [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(data)] == []


@pytest.mark.parametrize("fmt", ["terminal", "markdown", "html"])
def test_the_renderers_show_why_attribution_and_drift_were_not_measured(fmt):
    from tcdoctor.render.html import HtmlRenderer
    from tcdoctor.render.markdown import MarkdownRenderer
    from tcdoctor.render.terminal import TerminalRenderer

    renderer = {"terminal": TerminalRenderer, "markdown": MarkdownRenderer, "html": HtmlRenderer}
    text = renderer[fmt]().render(_skipped_attribution_report())
    assert f"not measured ({MEMORY_WHY})" in text
    assert f"not measured ({DRIFT_WHY})" in text


def test_a_failed_memory_attribution_phase_says_it_failed():
    from tcdoctor.run.assemble import assemble

    events = [
        Event(event="start", phase="memory_graphs"),
        Event(event="failed", phase="memory_graphs", error={"message": "OOM", "where": None}),
    ]
    rep = assemble("m.py:build", Options().to_dict(), events, [])
    assert rep.memory.attribution.not_measured == "phase 'memory_graphs' failed: OOM"


# ---------------------------------------------------------------------------- a rank that cannot join


def test_a_rank_that_cannot_join_the_process_group_is_not_the_users_code():
    """The rank child exits 70 and says so in its fatal record: an internal or environment failure
    (README's exit 70), never exit 3 "your code failed"."""
    from tcdoctor.run.process import fatal_event_error

    events = [
        Event(event="start", phase="rank"),
        Event(event="failed", phase="rank", fatal=True, exit_code=70, error={"message": "RuntimeError: connection refused", "where": None}),
    ]  # fmt: skip
    err = fatal_event_error(events, rank=1)
    assert type(err) is ChildFailed and not isinstance(err, UserCodeError)
    assert err.exit_code == EXIT_INTERNAL
    assert (
        err.message == "rank 1: could not join the process group: RuntimeError: connection refused"
    )


# ---------------------------------------------------------------------------- sweep durations


def test_a_sweep_row_for_an_internal_error_records_its_duration(tmp_path, monkeypatch):
    import tcdoctor.sweep as sweep

    def broken(*args, **kwargs):
        raise RuntimeError("a tcdoctor bug")

    monkeypatch.setattr(sweep, "analyze", broken)
    row = sweep._run_one("m.py:build", "m", str(tmp_path), Options(), None)
    assert row.exit_code == EXIT_INTERNAL and "RuntimeError: a tcdoctor bug" in row.reason
    assert row.duration_s is not None and row.duration_s >= 0


# ---------------------------------------------------------------------------- the caller's Workload


def _eval(m):
    return m.eval()


def _train(m):
    return m.train()


@pytest.mark.parametrize("kind", ["inference", "train"])
def test_analyze_leaves_the_callers_workload_as_it_was(monkeypatch, kind):
    import tcdoctor
    import tcdoctor.run.pipeline as pipeline
    from tcdoctor.report.model import Report

    model = torch.nn.Linear(2, 2)
    x = torch.randn(1, 2)
    if kind == "train":
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        given = tcdoctor.TrainStep(
            model, (x,), torch.randn(1, 2), torch.nn.functional.mse_loss, opt
        )
    else:
        given = tcdoctor.Workload(model, (x,), variants=[_eval], compile_kwargs={"dynamic": False})
    before = (list(given.variants), dict(given.compile_kwargs))
    seen = []

    def pipeline_analyze(target, options, **kw):
        seen.append(target)
        return Report(), 0

    monkeypatch.setattr(pipeline, "analyze", pipeline_analyze)
    tcdoctor.analyze(given, variants=(_train,), compile_kwargs={"fullgraph": True})
    (analysed,) = seen
    assert (list(given.variants), dict(given.compile_kwargs)) == before
    assert analysed is not given and analysed.model is given.model
    assert analysed.variants == [_train] and analysed.compile_kwargs == {"fullgraph": True}


# ---------------------------------------------------------------------------- write_atomic


def test_write_atomic_honours_the_umask_without_changing_it(tmp_path, monkeypatch):
    from tcdoctor.report.files import write_atomic

    old = os.umask(0o027)
    try:

        def no_umask(mask):
            raise AssertionError("write_atomic changed the process umask")

        monkeypatch.setattr(os, "umask", no_umask)
        path = tmp_path / "r.json"
        write_atomic(str(path), "{}")
        assert path.read_text() == "{}"
        assert stat.S_IMODE(path.stat().st_mode) == 0o640
        write_atomic(str(path), "{} ")  # replacing an existing file: the same mode
        assert stat.S_IMODE(path.stat().st_mode) == 0o640
        assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary file left
    finally:
        monkeypatch.undo()
        os.umask(old)
