"""Inductor's CPU ISA probe inside the cold first call (probes/isa_probe.py): read from the files it
leaves in the cache folder, it equals the probe timed by hand, and it is drawn where the compile
time is (the compile section's row, the frame table's line) in every format.

The file-reading rules run on planted folders (cheap); one subprocess runs the probe itself, as
Inductor runs it, in a truly empty cache folder (never seeded: the comparison is a fresh
container's) and times it by hand (about 9 s on 2 cores, x86 only); a second one runs it in a
folder seeded from the first, as tcdoctor seeds its children (run/isa_seed.py), and builds
nothing.
"""

import json
import os
import platform
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

from tcdoctor.probes import isa_probe
from tcdoctor.render import compile_table
from tcdoctor.render.markdown import MarkdownRenderer
from tcdoctor.render.measured import compile_section
from tcdoctor.report.sections import CompileTime, IsaProbe
from tcdoctor.run import isa_seed

T0 = 1_800_000_000.0  # a wall-clock time, as the cache files' times are


def _plant(folder, name, text, written, built=None):
    """A source file in the cache's layout (two-letter subfolder), and its library when built."""
    sub = folder / name[1:3]
    sub.mkdir(exist_ok=True)
    cpp = sub / f"{name}.cpp"
    cpp.write_text(text)
    os.utime(cpp, (written, written))
    if built is not None:
        lib = sub / f"{name}.so"
        lib.write_bytes(b"\0")
        os.utime(lib, (built, built))


def _metric(cid, start, end):
    return SimpleNamespace(compile_id=cid, start_time_us=start * 1e6, end_time_us=end * 1e6)


def test_the_span_runs_from_the_first_probe_source_to_the_last_library_and_names_the_frame(
    tmp_path,
):
    sources = sorted(isa_probe._sources())
    assert len(sources) >= 2  # VecISA._avx_code and a subclass's own check
    _plant(tmp_path, "cabc", sources[0], T0 + 1.0, T0 + 2.5)
    _plant(tmp_path, "cdef", sources[1], T0 + 2.6, T0 + 4.0)
    _plant(tmp_path, "cker", 'extern "C" void kernel() {}', T0 + 4.1, T0 + 5.0)  # the model's
    _plant(tmp_path, "cold", sources[0] + " ", T0 - 50, T0 - 49)  # not a probe source
    _plant(tmp_path, "cnol", sources[1], T0 + 3.0)  # a source whose build failed: no library
    frames = [_metric("0/0", T0 + 0.5, T0 + 6.0), _metric("1/0", T0 + 6.0, T0 + 7.0)]
    got = isa_probe.measure(str(tmp_path), T0, frames)
    assert got["seconds"] == pytest.approx(3.0, abs=1e-6) and got["builds"] == 2, got
    # the builds alone (1.5 s and 1.4 s): what a folder probed before skips, not the load between
    assert got["build_s"] == pytest.approx(2.9, abs=1e-6)
    assert got["frame"] == "0/0" and "lower bound" in got["method"]
    # a probe older than the first call (a folder probed before) is not this call's cost
    assert isa_probe.measure(str(tmp_path), T0 + 10, frames)["builds"] == 0


def test_no_probe_is_none_and_no_folder_is_not_measured(tmp_path):
    _plant(tmp_path, "cker", 'extern "C" void kernel() {}', T0 + 1, T0 + 2)
    got = isa_probe.measure(str(tmp_path), T0, [])
    assert got["seconds"] is None and got["none"] and got["builds"] == 0
    missing = isa_probe.measure(str(tmp_path / "missing"), T0, [])
    assert missing["seconds"] is None and "no inductor cache folder" in missing["not_measured"]


def _compile(**fields) -> CompileTime:
    """The compile section as a report loads it: the probe's dict read into its record."""
    return CompileTime.from_dict(fields)


def test_every_format_names_the_probe_and_the_frame_that_paid_it():
    probe = {"seconds": 8.41, "builds": 10, "frame": "0/0", "method": isa_probe.METHOD}
    rows = {r.label: r for r in compile_section(_compile(isa_probe=probe)).rows}
    row = rows["of which Inductor's CPU ISA probe"]
    assert row.value == "8.41 s" and "first source written" in row.how
    none = compile_section(_compile(isa_probe={"seconds": None, "builds": 0, "none": True}))
    assert {r.label: r.value for r in none.rows}["of which Inductor's CPU ISA probe"] == "none"
    absent = compile_section(CompileTime())  # a report without the figure: no row at all
    assert "of which Inductor's CPU ISA probe" not in {r.label for r in absent.rows}
    # beside the fresh container's cold figure, a machine's that has compiled before (less builds)
    probed = "first call, cold cache, on a machine that has compiled before"
    assert probed not in rows  # a report from before build_s: one cold figure, as it was
    both = compile_section(_compile(first_call_s=10.0, isa_probe={**probe, "build_s": 7.9}))
    row = {r.label: r for r in both.rows}[probed]
    assert row.value == "2.10 s" and "fresh container" in row.how and "7.90 s" in row.how
    seeded = {"seconds": None, "builds": 0, "none": True, "seeded": True}
    (row,) = [r for r in compile_section(_compile(isa_probe=seeded)).rows if "ISA" in r.label]
    assert row.value == "none" and "seeded" in row.how
    line = compile_table.probe_line(IsaProbe.from_dict(probe))
    assert line.startswith("frame 0/0's cold time includes 8.41 s of Inductor's CPU ISA probe")
    assert compile_table.probe_line(IsaProbe.of(seconds=None, none=True)) is None


def test_a_saved_report_with_the_probe_shows_its_line_in_all_three_formats():
    from test_section_layout import SAVED

    from tcdoctor.render.html import HtmlRenderer
    from tcdoctor.render.terminal import TerminalRenderer
    from tcdoctor.report.model import Report

    data = json.loads(open(SAVED, encoding="utf-8").read())
    cid = data["compile"]["graphs"]["rows"][0]["compile_id"]
    data["compile"]["isa_probe"] = {"seconds": 0.5, "builds": 3, "frame": cid, "method": "m"}
    report = Report.from_dict(data)
    line = f"frame {cid}&#39;s cold time includes 500.00 ms of Inductor&#39;s CPU ISA probe"
    assert line in HtmlRenderer().render(report)
    plain = line.replace("&#39;", "'")
    assert plain in TerminalRenderer().render(report)
    assert plain in MarkdownRenderer().render(report)


BY_HAND = textwrap.dedent(
    """
    import json, os, sys, time
    import torch
    from torch._inductor import cpu_vec_isa
    from tcdoctor.probes import isa_probe
    began = time.time()
    t = time.perf_counter()
    isa = cpu_vec_isa.pick_vec_isa()  # what Inductor calls before its first C++ kernel
    by_hand = time.perf_counter() - t
    got = isa_probe.measure(os.environ["TORCHINDUCTOR_CACHE_DIR"], began, [])
    print(json.dumps({"by_hand": by_hand, "got": got, "isa": str(isa)}))
    """
)


def _by_hand(folder) -> dict:
    """BY_HAND in a fresh process whose inductor cache folder is `folder`."""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(folder))
    env.pop("TORCHINDUCTOR_VEC_ISA_OK", None)
    p = subprocess.run(
        [sys.executable, "-c", BY_HAND], env=env, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.timing
@pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"), reason="the probe builds x86 checks here"
)
def test_the_figure_read_from_files_is_the_probe_timed_by_hand(tmp_path):
    """In a fresh process with an empty cache folder: Inductor's own probe call timed by hand, and
    the figure read from the files it left. The files leave out the last library's load check and
    what precedes the first source (the compiler's version query): a lower bound, close to it.

    Then in a folder seeded from that one (its sources and libraries, as isa_seed.seed copies the
    machine's probed folder): the same ISA is picked, nothing is built, and the builds' time
    (`build_s`) is not paid; the load checks still are (one short process per check)."""
    empty = tmp_path / "cache"
    assert not empty.exists()  # truly empty: a fresh container's probe, never a seeded one
    out = _by_hand(empty)
    got, by_hand = out["got"], out["by_hand"]
    assert got["builds"] >= 1, out
    assert 0.7 * by_hand <= got["seconds"] <= by_hand, out
    assert 0 < got["build_s"] <= got["seconds"], out
    base, seeded = tmp_path / "machine", tmp_path / "seeded"
    assert isa_probe.keep(str(empty), 0.0, str(base)) and isa_seed.seed(str(seeded), "s", str(base))
    again = _by_hand(seeded)
    assert again["isa"] == out["isa"] and again["got"]["builds"] == 0, again
    assert isa_probe.paid(str(seeded)) == []  # counted from the folder: no build of its own
    assert again["by_hand"] < by_hand - 0.5 * got["build_s"], (out, again)


def test_the_consistency_check_catches_a_probe_longer_than_its_first_call():
    from consistency import parts_over_the_whole
    from test_section_layout import SAVED

    from tcdoctor.report.model import Report

    data = json.loads(open(SAVED, encoding="utf-8").read())
    first, cid = data["compile"]["first_call_s"], data["compile"]["graphs"]["rows"][0]["compile_id"]
    data["compile"]["isa_probe"] = {"seconds": first / 2, "builds": 1, "frame": None}
    assert not [p for p in parts_over_the_whole(Report.from_dict(data)) if "ISA" in p]
    data["compile"]["isa_probe"] = {"seconds": first * 2, "builds": 1, "frame": cid}
    found = [p for p in parts_over_the_whole(Report.from_dict(data)) if "ISA" in p]
    assert len(found) == 2 and "more than the first call's" in found[0], found
