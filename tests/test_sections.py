"""The typed report sections (tcdoctor/report/sections/): JSON round trip, schema-1 files, derived figures.

`data/schema1_two_breaks.json` is a report written by tcdoctor 0.1 before the sections were typed
(`tcdoctor analyze samples/two_breaks.py:build --backend aot_eager --modes default,reduce-overhead
--submodules --dynamic`): it has to load, keep every figure, and render the same verdict.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tcdoctor.report.model import SCHEMA_VERSION, Report
from tcdoctor.report.rules import break_even, faster_than_eager
from tcdoctor.report.sections import (
    CompileTime,
    FixRow,
    GraphBreak,
    Guards,
    RegionRow,
    Runtime,
    StrategyRow,
    Timing,
)
from tcdoctor.thresholds import RULES
from tcdoctor.verdict import with_verdict

SCHEMA1 = Path(__file__).parent / "data" / "schema1_two_breaks.json"


def _leaves(x, path=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _leaves(v, f"{path}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, x


def test_a_schema1_file_loads_typed_and_keeps_every_figure():
    old = json.loads(SCHEMA1.read_text())
    rep = Report.load(str(SCHEMA1))
    assert isinstance(rep.runtime.compiled, Timing) and isinstance(rep.compile, CompileTime)
    assert all(isinstance(f, GraphBreak) for f in rep.graph_breaks.unique)
    assert all(isinstance(r, StrategyRow) for r in rep.strategies.modes)
    assert all(isinstance(r, FixRow) for r in rep.fixes)
    assert rep.strategies.regions.regions and all(
        isinstance(r, RegionRow) for r in rep.strategies.regions.regions
    )
    new = dict(_leaves(rep.to_dict()))
    # every non-null value of the old file is still there, unchanged
    lost = {p: v for p, v in _leaves(old) if v is not None and new.get(p) != v}
    assert not lost, lost
    # the figures stored twice in schema 1 are one field now, written back under both names
    assert rep.compile.cold_s == rep.compile.first_call_s == old["compile"]["cold_s"]
    assert rep.guards.overhead_fraction == pytest.approx(old["guards"]["overhead_fraction"])


def test_a_saved_report_round_trips_exactly(tmp_path):
    rep = Report.load(str(SCHEMA1))
    rep.save(str(tmp_path / "again.json"))
    again = Report.load(str(tmp_path / "again.json"))
    assert again == rep and again.to_dict() == rep.to_dict()


def test_keys_a_section_does_not_model_are_kept():
    rt = Runtime.from_dict({"speedup": 1.5, "from_a_newer_probe": {"x": 1}})
    assert rt.extra == {"from_a_newer_probe": {"x": 1}}
    assert rt.to_dict()["from_a_newer_probe"] == {"x": 1}


def test_recomputing_the_verdict_of_a_schema1_file_applies_todays_rules():
    rep = Report.load(str(SCHEMA1))
    assert rep.verdict.decision == "compile-after-fixes"  # as saved: read, not recomputed
    # Today's rule: "after fixes" needs a gain measured or bounded above the loss. This aot_eager
    # report has no break gain (its backend marks no graph calls), so it says so: not yet.
    v = with_verdict(rep).verdict
    assert v.decision == "dont-compile"
    assert "what that gains was not measured (this backend does not mark" in v.reasons[1]


def test_newer_and_malformed_files_are_refused_with_a_reason(tmp_path):
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({"schema_version": SCHEMA_VERSION + 1}))
    with pytest.raises(ValueError, match="reads up to"):
        Report.load(str(newer))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema_version": 1, "runtime": [1, 2]}))
    with pytest.raises(ValueError, match=r"runtime is a list \(\[1, 2\]\); expected an object"):
        Report.load(str(bad))


def test_guard_share_is_derived_from_the_compiled_median():
    g = Guards(overhead_s_per_call=5e-6, call_s=2e-5)
    assert g.overhead_fraction == pytest.approx(0.25)
    assert Guards(overhead_s_per_call=5e-6).overhead_fraction is None
    assert g.to_dict()["overhead_fraction"] == pytest.approx(0.25)
    # a schema-1 section stored only the share: the call it was taken of is recovered
    legacy = Guards.from_dict({"overhead_s_per_call": 5e-6, "overhead_fraction": 0.5})
    assert legacy.call_s == pytest.approx(1e-5) and legacy.overhead_fraction == pytest.approx(0.5)


def test_significantly_faster_is_the_ci_lower_bound_above_the_rule():
    assert Runtime(speedup=1.5, speedup_ci=[1.03, 1.6]).significantly_faster(RULES)
    assert not Runtime(speedup=1.5, speedup_ci=[1.01, 2.0]).significantly_faster(RULES)
    assert not Runtime(speedup=1.5).significantly_faster(RULES)  # no interval, no claim
    assert Runtime(speedup=0.8, speedup_ci=[0.7, 0.9]).significantly_slower
    assert not Runtime(speedup=0.99, speedup_ci=[0.9, 1.1]).significantly_slower
    row = StrategyRow(speedup=1.2, speedup_ci=[1.1, 1.3])
    assert row.significantly_faster(RULES) == faster_than_eager(1.1, RULES.min_speedup) is True


def test_break_even_and_steps_to_repay():
    assert break_even(10.0, 2e-3, 1e-3) == {
        "calls": 9998,
        "wall_s": pytest.approx(9998 * 1e-3 + 10.0),
        "saving_per_call_s": pytest.approx(1e-3),
    }
    assert break_even(10.0, 1e-3, 2e-3) is None  # slower compiled never repays
    row = StrategyRow(first_call_s=1.0, eager_median_s=0.2, median_s=0.1)
    assert row.steps_to_repay == 8
    assert CompileTime(first_call_s=9.0, warm_s=3.0).cold_warm_ratio == pytest.approx(3.0)
    region = RegionRow(eager_median_s=3e-5, median_s=1e-5, calls_per_forward=4)
    assert region.gain_s_per_forward == pytest.approx(8e-5)  # per forward, not per call


def test_a_fix_side_writes_back_the_keys_it_was_given_in_their_order():
    """FixSide (a fix row's before/after): every saved fix row's JSON unchanged through the typed
    row (key order, nulls and unknown keys kept); a new side keeps the order its maker gave, and a
    figure set later is written after those (as a dict's update did)."""
    from conftest import saved_report

    from tcdoctor.report.sections import FixRow, FixSide

    saved = [
        r
        for n in ("inject", "two_breaks")
        for r in json.loads(saved_report(n).read_text())["fixes"]
    ]
    assert {json.dumps(r.get("after")) for r in saved} >= {'{"expected_gain_s_per_forward": 0}'}
    for r in saved:
        row = FixRow.from_dict(r)
        assert isinstance(row.before, FixSide)
        for side in ("before", "after"):  # the row's own keys are in FixRow's field order
            assert json.dumps(row.to_dict().get(side)) == json.dumps(r.get(side))
    side = FixSide.of(graph_breaks=0, recompiles=None, speedup=1.2, planted=[1])
    side.timed_in = "here"
    assert list(side.to_dict()) == ["graph_breaks", "recompiles", "speedup", "planted", "timed_in"]
    assert side.recompiles is None and side.extra == {"planted": [1]}
    assert FixSide(speedup=2.0, graph_breaks=1).to_dict() == {"graph_breaks": 1, "speedup": 2.0}
    assert FixRow(after=None).after_side.speedup is None and FixRow().before.to_dict() == {}
