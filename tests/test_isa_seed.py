"""Inductor's CPU ISA probe paid once per machine and torch version by tcdoctor's own children
(tcdoctor/run/isa_seed.py, probes/isa_probe.py; issue 52 item 5): the probed folder kept from the
cold process's own builds, copied into the experiments' empty folders, and a process's own builds
told from what was copied in; the rows say which cold they are, and every comparison keeps the
cold figure's footing.

The folder rules run on planted folders (cheap); one real analysis (Inductor, remedies and a mode,
in a folder of probed folders of its own) counts from the cache folders which processes built the
probe: the cold one alone. The seed's effect on the probe itself (no build, the same ISA, the builds'
time saved) is measured by hand in tests/test_isa_probe.py.
"""

from __future__ import annotations

import json
import os
import sys
import time

import pytest
from conftest import ROOT, run_cli

from tcdoctor import units
from tcdoctor.errors import UsageError
from tcdoctor.experiments.specs import ModeSpec, PortableCacheSpec
from tcdoctor.probes import isa_probe
from tcdoctor.report.sections import RemedyRow, StrategyRow
from tcdoctor.run import isa_seed
from tcdoctor.run.launcher import _experiment_cache

T0 = time.time() - 3600  # an hour ago, in wall-clock time as the cache files' times are


def _plant(folder, name, text, written, built):
    """A probe check's source and library in the cache's layout (two-letter subfolder)."""
    sub = folder / name[1:3]
    sub.mkdir(parents=True, exist_ok=True)
    cpp, lib = sub / f"{name}.cpp", sub / f"{name}.so"
    cpp.write_text(text)
    lib.write_bytes(b"\0")
    os.utime(cpp, (written, written))
    os.utime(lib, (built, built))


@pytest.fixture
def probed(tmp_path):
    """A cold process's cache folder after its probe: two builds (1.5 s and 1.4 s), a model kernel."""
    cold = tmp_path / "inductor-cache"
    first, second = sorted(isa_probe._sources())[:2]
    _plant(cold, "cabc", first, T0 + 1.0, T0 + 2.5)
    _plant(cold, "cdef", second, T0 + 2.6, T0 + 4.0)
    _plant(cold, "cker", 'extern "C" void kernel() {}', T0 + 4.1, T0 + 5.0)
    return cold


def test_the_cold_process_keeps_its_builds_once_and_an_empty_folder_is_seeded_from_them(
    tmp_path, probed
):
    base = tmp_path / "machine"
    kept = isa_probe.keep(str(probed), T0, str(base))
    assert kept == isa_probe.folder(str(base)) and os.path.isdir(kept)
    made = isa_probe.manifest(kept)
    assert made["builds"] == 2 and made["build_s"] == pytest.approx(2.9)
    assert sorted(made["files"]) == sorted(
        os.path.join(d, f"{n}.{x}")
        for d, n in (("ab", "cabc"), ("de", "cdef"))
        for x in "cpp so".split()
    )  # the probe's sources and libraries, not the model's kernel
    assert isa_probe.keep(str(probed), T0, str(base)) is None  # once per machine: it exists
    child = tmp_path / "cache-strategy-0"
    assert isa_seed.seed(str(child), units.MACHINE_PROBED_CACHE, str(base)) == made
    for rel in made["files"]:  # the files, with their times: Inductor writes and builds nothing
        assert os.path.getmtime(child / rel) == os.path.getmtime(probed / rel)
    assert isa_probe.seeded(str(child)) and not isa_probe.seeded(str(probed))
    assert isa_probe.paid(str(child)) == []  # what was copied in is no build of its own
    assert len(isa_probe.paid(str(probed))) == 2  # the cold folder: every build is its own
    # a build its child makes after the start counts, the seeded ones still do not
    later = isa_probe.started(str(child)) + 5
    _plant(child, "cnew", sorted(isa_probe._sources())[2], later, later + 1)
    assert [os.path.basename(b.library) for b in isa_probe.paid(str(child))] == ["cnew.so"]
    # no probed folder for this machine yet: nothing copied, nothing marked
    assert isa_seed.seed(str(tmp_path / "other"), "x", str(tmp_path / "none")) is None
    assert not (tmp_path / "other").exists()


def test_experiment_folders_are_seeded_copied_or_left_empty_and_marked(tmp_path, probed):
    base = tmp_path / "machine"
    isa_probe.keep(str(probed), T0, str(base))
    work = str(tmp_path)
    path, start = _experiment_cache(str(probed), work, 0, ModeSpec("max-autotune"), str(base))
    assert start == units.MACHINE_PROBED_CACHE and isa_probe.paid(path) == []
    path, start = _experiment_cache(str(probed), work, 1, PortableCacheSpec("a.bin"), None)
    assert start == "empty" and not os.path.exists(path)  # not seeded (--isa-probe every)
    from tcdoctor.experiments.specs import ConfigFix

    path, start = _experiment_cache(str(probed), work, 2, ConfigFix("x"), str(base))
    assert start.startswith("copy") and isa_probe.started(path) is not None
    assert isa_probe.paid(path) == []  # the main cache's probe, copied: no build of this child's


def test_who_pays_is_one_option_whose_default_the_environment_sets(monkeypatch, tmp_path):
    """`Options.isa_probe` (`--isa-probe`), declared once; $TCDOCTOR_ISA_PROBE sets its default
    (the test suite's "none": tests/conftest.py); a bad value is one line, exit 2."""
    from tcdoctor.options import ISA_PROBE, ISA_PROBE_ENV, Options

    monkeypatch.delenv(ISA_PROBE_ENV, raising=False)
    assert Options().isa_probe == "cold"
    for value in ISA_PROBE:
        monkeypatch.setenv(ISA_PROBE_ENV, value)
        assert Options().isa_probe == value
        assert Options(isa_probe="every").isa_probe == "every"  # given, the option wins
    assert isa_seed.seed_from(Options(isa_probe="every")) is None
    assert isa_seed.seed_from(Options(isa_probe="cold")) == isa_probe.root()
    monkeypatch.setenv(ISA_PROBE_ENV, "sometimes")
    with pytest.raises(UsageError, match=r"\$TCDOCTOR_ISA_PROBE\) takes one of cold, none, every"):
        Options()
    env = dict(os.environ, TCDOCTOR_ISA_PROBE="sometimes")
    target = os.path.join(ROOT, "samples", "mlp.py") + ":build"
    code, _, err = run_cli(tmp_path, "analyze", target, "--backend", "eager", env=env)
    assert code == 2 and err.strip().endswith("got 'sometimes'") and len(err.splitlines()) == 1
    code, _, err = run_cli(tmp_path, "analyze", target, "--isa-probe", "sometimes")
    assert code == 2 and err.strip().endswith("got 'sometimes'") and len(err.splitlines()) == 1


def test_a_seeded_row_says_which_cold_it_is_and_compares_as_a_fresh_container():
    seeded = dict(
        first_call_s=2.0, eager_median_s=1e-3, median_s=0.5e-3, cache={"fxgraph_cache_miss": 1}
    )
    row = StrategyRow(**seeded, cache_start=units.MACHINE_PROBED_CACHE, isa_probe_s=6.0)
    fresh = StrategyRow(**{**seeded, "first_call_s": 8.0}, cache_start="empty")
    assert row.first_call_cache == "cold, machine probed"
    assert fresh.first_call_cache == "cold, fresh container"
    assert row.fresh_first_call_s == 8.0 and row.steps_to_repay == fresh.steps_to_repay
    rem = RemedyRow(**seeded, load_s=0.5, cache_start=units.MACHINE_PROBED_CACHE, isa_probe_s=6.0)
    assert rem.probed_startup_s == 2.5 and rem.startup_s == 8.5  # what check and the verdict take
    from tcdoctor.render.remedy_table import first_call

    assert first_call(rem) == "2.50 s, machine probed (8.50 s in a fresh container)"
    assert first_call(RemedyRow(**seeded)) == "2.00 s"  # a report from before: as it was


def _report_with_probe(build_s=6.0, cold=9.0):
    """The saved report, its cold first call `cold` s with the probe's builds `build_s` s in it,
    compiled twice as fast as eager per call."""
    from tcdoctor.report.model import Report

    data = json.loads(open(os.path.join(ROOT, "tests", "data", "schema1_two_breaks.json")).read())
    data["compile"]["first_call_s"] = cold
    data["compile"]["isa_probe"] = {"seconds": build_s + 0.5, "build_s": build_s, "builds": 6}
    data["runtime"]["eager"]["median_s"], data["runtime"]["compiled"]["median_s"] = 2e-3, 1e-3
    return Report.from_dict(data)


def test_both_cold_figures_and_which_the_break_even_and_advice_judge():
    from tcdoctor.render import break_even, remedy_table
    from tcdoctor.verdict import judge

    rep = _report_with_probe()
    assert rep.compile.probed_cold_s == pytest.approx(3.0)
    judge(rep)
    be = rep.verdict.break_even
    assert be["probed"]["calls"] < be["cold"]["calls"] and be["probe_build_s"] == 6.0
    assert rep.verdict.break_even_calls == be["cold"]["calls"]  # the verdict's: a fresh container
    sec = break_even.section(rep)
    assert [r[0] for r in sec.tables[0].rows][:2] == ["cold cache", "cold cache, machine probed"]
    (which,) = [n.text for n in sec.notes if not n.how]
    assert which.startswith("The verdict judges the cold cache as a fresh container pays it")
    assert units.grouped(be["probed"]["calls"]) in which
    rows = remedy_table.rows(rep)
    assert rows[0][0] == "whole model, empty cache (fresh container)"
    assert rows[1][:2] == ["whole model, empty cache, machine probed", "3.00 s"]
    old = _report_with_probe()
    old.compile.isa_probe.build_s = None  # a report from before build_s: one cold, as it was
    assert old.compile.probed_cold_s is None and remedy_table.rows(old)[0][0].endswith("cache")


def test_the_cold_start_advice_says_which_cold_it_judged():
    from tcdoctor.verdict.advice import _probe_text
    from tcdoctor.verdict.figures import Figures

    text = _probe_text(Figures.from_report(_report_with_probe()))
    assert "The cold figure this advice judges is a fresh container's" in text
    assert "on a machine that has compiled before, the cold first call is 3.00 s" in text


# -- one real analysis: only the cold process pays the probe, counted from the cache folders ------


@pytest.mark.inductor
@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the probe's builds are read as Linux lays them"
)
def test_only_the_cold_analysis_process_pays_the_probe(tmp_path, monkeypatch):
    """A machine that never ran tcdoctor (its own folder of probed folders, empty): the cold process
    pays the probe and keeps it; the remedy's and the mode's processes start from it and build none
    (counted from each cache folder: builds written after the folder started); their rows say so
    and carry the cold process's builds, which the fresh-container figures add back."""
    from tcdoctor.options import Options
    from tcdoctor.run.launcher import analyze_target

    monkeypatch.setenv("TCDOCTOR_ISA_PROBE", "cold")  # as a user runs it (the suite seeds the cold)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    work = tmp_path / "work"
    options = Options(
        threads=1, budget_s=0.3, warm=False, processes=1, fixes=False, fix_budget_s=300,
        compile_remedies=True, modes=["default", "max-autotune-no-cudagraphs"], submodules=False,
    )  # fmt: skip
    target = os.path.join(ROOT, "samples", "mlp.py") + ":build"
    report, code = analyze_target(target, options, keep_dir=str(work))
    assert code == 0, report.errors
    folders = sorted(p for p in os.listdir(work) if "cache" in p and (work / p).is_dir())
    built = {p: len(isa_probe.paid(str(work / p))) for p in folders}
    assert built.pop("inductor-cache") >= 1, built  # the cold process: a fresh container
    assert len(built) >= 2 and not any(built.values()), built  # the remedy's and the mode's: none
    assert all(isa_probe.seeded(str(work / p)) for p in built)
    assert os.path.isdir(isa_probe.folder())  # kept for the next analysis on this machine
    probe = report.compile.isa_probe
    cold_builds = len(isa_probe.paid(str(work / "inductor-cache")))
    assert probe.builds == cold_builds and 0 < probe.build_s <= probe.seconds
    assert report.compile.probed_cold_s == pytest.approx(report.compile.cold_s - probe.build_s)
    rows = [*report.compile.remedies.rows, *(r for r in report.strategies.modes if r.cache_start)]
    assert len(rows) == 2
    for r in rows:
        assert r.cache_start == units.MACHINE_PROBED_CACHE and r.isa_probe_s == probe.build_s
        assert r.first_call_cache.endswith(", machine probed")  # cold, or warm from the artifacts
    (portable,) = report.compile.remedies.rows
    assert portable.startup_s == pytest.approx(portable.probed_startup_s + probe.build_s)
