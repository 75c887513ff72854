"""Per-graph compile table (tcdoctor/probes/compile_graphs.py): fast tests on literal metrics and
profiler events, real ones compiling a model with one graph break in its own file."""

import importlib.util
import os
import statistics
from types import SimpleNamespace

import pytest
import torch

from tcdoctor.probes import calls, compile_graphs, dynamo_state, first_call, graph_breaks
from tcdoctor.report import compile_joins
from tcdoctor.target.userframes import _TORCH_DIR

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "targets", "real", "compile_graphs_target.py")
USER_FILE = os.path.abspath(__file__)
R = compile_graphs.REGION
MARK = compile_graphs.CALL_MARK


def entry(cid: str, frame: float | None, backend: float | None = None, **kw) -> dict:
    """A CompilationMetrics entry as a dict: a frame entry when `frame` is set, else a backward one."""
    d = {
        "compile_id": cid,
        "entire_frame_compile_time_s": frame,
        "backend_compile_time_s": backend,
        "is_forward": frame is not None,
    }
    if frame is not None:
        d.update(co_name="forward", co_filename=USER_FILE, co_firstlineno=10, graph_op_count=3)
    d.update(kw)
    return d


# -- fast: literal metrics ----------------------------------------------------------------


def test_rows_sorted_by_cold_seconds_largest_first():
    rows = compile_graphs.table(
        [entry("0/0", 0.5, 0.2), entry("1/0", 2.0, 1.5), entry("2/0", 1.0, 0.1)]
    )
    assert [r["compile_id"] for r in rows] == ["1/0", "2/0", "0/0"]
    assert [r["cold_s"] for r in rows] == [2.0, 1.0, 0.5]


def test_phase_split_reuses_first_call_and_merges_the_backward_entry():
    fwd = entry("0/0", 10.0, 8.0, inductor_compile_time_s=6.0, code_gen_time_s=4.0)
    bwd = entry("0/0", None, inductor_compile_time_s=3.0, code_gen_time_s=1.0)
    (row,) = compile_graphs.table([fwd, bwd])
    assert row["entries"] == 2
    assert row["dynamo_s"] == pytest.approx(2.0 + 0.0)
    assert row["aot_autograd_s"] == pytest.approx(2.0)
    assert row["inductor_lowering_s"] == pytest.approx(2.0 + 2.0)
    assert row["codegen_and_cpp_or_triton_s"] == pytest.approx(4.0 + 1.0)
    assert row["backward_graphs_s"] == pytest.approx(3.0)
    assert row["cold_s"] == pytest.approx(13.0)
    same = first_call.phase_breakdown([compile_graphs.Entry.of(e) for e in (fwd, bwd)])
    assert row["cold_s"] == pytest.approx(same["total_compile_s"])
    assert (row["function"], row["file"], row["line"], row["ops"]) == ("forward", USER_FILE, 10, 3)


def test_recompile_reason_and_graph_breaks_per_frame():
    ms = [
        entry("0/0", 1.0, 0.5, restart_reasons={"Call to graph_break"}),
        entry("1/0", 0.3, 0.1, co_name="torch_dynamo_resume_in_forward_at_12"),
        entry("0/1", 0.4, 0.2, recompile_reason="0/0: tensor 'x' size mismatch at index 0"),
    ]
    sites = [{"compile_id": "0/0", "file": USER_FILE, "line": 12}]
    rows = {r["compile_id"]: r for r in compile_graphs.table(ms, sites)}
    assert rows["0/0"]["graph_breaks"] == 1 and rows["1/0"]["graph_breaks"] == 0
    assert rows["0/0"]["graph_breaks_source"] == "graph-break log"
    assert rows["0/1"]["recompile_reason"].startswith("0/0: tensor 'x'")
    assert rows["0/0"]["recompile_reason"] is None
    assert rows["1/0"]["function"] == "forward (resumed after line 12)"
    fallback = {r["compile_id"]: r for r in compile_graphs.table(ms)}
    assert fallback["0/0"]["graph_breaks"] == 1
    assert fallback["0/0"]["graph_breaks_source"].startswith("CompilationMetrics.restart_reasons")


def test_torch_frame_names_its_owner_and_the_users_line():
    adam = os.path.join(_TORCH_DIR, "optim", "adam.py")
    stack = [
        f"Line: 40, Name: train_step, Filename: {USER_FILE}",
        f"Line: 120, Name: _use_grad, Filename: {os.path.join(_TORCH_DIR, 'optim', 'optimizer.py')}",
        f"Line: 200, Name: step, Filename: {adam}",
    ]
    (row,) = compile_graphs.table(
        [
            entry(
                "0/0",
                1.0,
                0.5,
                co_name="step",
                co_filename=adam,
                co_firstlineno=200,
                stack_trace=stack,
            )
        ]
    )
    assert row["origin"] == "pytorch" and row["owner"] == "PyTorch itself"
    assert row["user_frame"] == {"file": USER_FILE, "line": 40, "function": "train_step"}
    (mine,) = compile_graphs.table([entry("0/0", 1.0, 0.5, stack_trace=stack)])
    assert mine["origin"] == "user" and mine["user_frame"] is None


def test_adapter_reads_objects_and_missing_fields():
    obj = SimpleNamespace(
        compile_id="3/1", entire_frame_compile_time_s=0.2, restart_reasons={"b", "a"}
    )
    e = compile_graphs.Entry.of(obj)
    assert e.compile_id == "3/1" and e.restart_reasons == ["a", "b"]
    assert e.graph_op_count is None and e.co_filename is None


def test_warm_join_by_compile_id():
    cold = compile_graphs.table(
        [entry("0/0", 20.0, 19.0), entry("1/0", 5.0, 4.0), entry("2/0", 1.0)]
    )
    warm = [
        entry(
            "0/0",
            2.0,
            1.5,
            inductor_fx_local_cache_hit_count=1,
            inductor_fx_local_cache_miss_count=0,
        ),
        entry("1/0", 0.5, 0.3, co_name="other"),
    ]
    for given in (warm, compile_graphs.table(warm)):  # raw metrics, or the warm child's rows
        rows = {r["compile_id"]: r for r in compile_graphs.join_warm(cold, given)}
        assert rows["0/0"]["warm_s"] == pytest.approx(2.0)
        assert rows["0/0"]["warm_cache"]["fx_graph_cache_hit"] == 1
        assert rows["0/0"]["cold_s"] == pytest.approx(20.0)
        assert rows["1/0"]["warm_s"] is None and "other" in rows["1/0"]["warm_not_measured"]
        assert rows["2/0"]["warm_s"] is None and rows["2/0"]["warm_not_measured"]
    assert "warm_s" not in cold[0]  # pure: the cold rows are not modified


def _call(t0: int, regions: list[tuple[str, int, int]], length: int = 1000) -> list:
    """One marked call starting at t0: (name, start, duration) events with region offsets."""
    return [(MARK, t0, length)] + [(R + cid, t0 + s, d) for cid, s, d in regions]


def test_runs_per_call_median_self_time_and_unused_frame():
    rows = compile_graphs.table([entry("0/0", 2.0), entry("1/0", 1.0), entry("2/0", 0.5)])
    events = (
        _call(0, [("0/0", 10, 500), ("1/0", 100, 200)])
        + _call(10_000, [("0/0", 10, 700), ("1/0", 100, 300)])
        + _call(20_000, [("0/0", 10, 600), ("1/0", 100, 200), ("1/0", 400, 100)])
        + [(R + "1/0", 50_000, 999)]  # outside every marked call: not counted
    )
    got = {r["compile_id"]: r for r in compile_graphs.runs_per_call(rows, events, 3)}
    assert got["0/0"]["runs_per_call"] == 1 and got["1/0"]["runs_per_call"] == pytest.approx(4 / 3)
    assert got["0/0"]["median_s_per_call"] == pytest.approx(600e-9)
    assert got["0/0"]["median_self_s_per_call"] == pytest.approx(
        statistics.median([300, 400, 300]) * 1e-9
    )
    assert got["1/0"]["median_s_per_call"] == pytest.approx(300e-9)
    assert got["2/0"]["runs_per_call"] == 0 and got["2/0"]["unused_in_steady_state"]
    assert not got["0/0"]["unused_in_steady_state"]
    per_call = compile_graphs.per_call_regions(events + _call(30_000, [("5/0", 0, 10)]))
    assert compile_joins.regions_not_in_table(rows, per_call) == ["5/0"]


def test_runs_per_call_without_marks_is_a_mean_and_without_calls_not_measured():
    rows = compile_graphs.table([entry("0/0", 1.0)])
    events = [(R + "0/0", 0, 100), (R + "0/0", 1000, 300)]
    (row,) = compile_graphs.runs_per_call(rows, events, 2)
    assert row["runs_per_call"] == 1 and row["median_s_per_call"] == pytest.approx(200e-9)
    assert row["per_call_basis"].startswith("mean")
    (none,) = compile_graphs.runs_per_call(rows, [], 0)
    assert none["runs_per_call"] is None and none["runs_not_measured"]


def test_coverage_side_by_side_and_never_negative():
    rows = compile_graphs.table([entry("0/0", 3.0), entry("1/0", 1.0)])
    c = compile_graphs.coverage(rows, 4.5, 0.5)
    assert c["rows_cold_s"] == pytest.approx(4.0) and c["first_call_compile_s"] == pytest.approx(
        4.0
    )
    assert c["coverage"] == pytest.approx(1.0) and c["not_in_rows_s"] == pytest.approx(0.0)
    slow_eager = compile_graphs.coverage(rows, 0.5, 0.9)
    assert slow_eager["first_call_compile_s"] == 0.0 and slow_eager["coverage"] is None
    unknown = compile_graphs.coverage(rows, 4.5, None)
    assert unknown["first_call_compile_s"] is None and unknown["coverage"] is None


# -- real: compiling the target -------------------------------------------------------------


def _target():
    spec = importlib.util.spec_from_file_location("_compile_graphs_target", TARGET)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cold_first_call(backend: str) -> tuple[dict, object, torch.Tensor]:
    """The compile phase's way: fresh Dynamo state, eager call timed, then the compiled first call."""
    mod = _target()
    eager_model, (x,) = mod.build()
    model, _ = mod.build()
    sync = calls.synchronizer(torch.device("cpu"))
    dynamo_state.fresh()
    with torch.no_grad():
        _, eager_s = calls.timed_call(eager_model, (x,), sync)
        compiled = first_call.build(model, backend, None, {})
        with dynamo_state.dynamo_logs() as logs:
            _, data, _ = first_call.first_call(lambda: compiled(x), "TwoStage.forward", sync)
    ms = dynamo_state.compilation_metrics()
    result = compile_graphs.probe(ms, data["first_call_s"], eager_s, graph_breaks.break_sites(logs))
    result["first_call"] = data
    return result, compiled, x


def _assert_rows_and_sum(result: dict, low: float) -> None:
    rows, check = result["rows"], result["check"]
    with open(TARGET) as f:
        n_lines = len(f.read().splitlines())
    assert len(rows) == 2  # one break: forward up to it, then the resume function
    for r in rows:
        assert r["file"] == TARGET and 1 <= r["line"] <= n_lines and r["origin"] == "user"
        assert r["ops"] > 0 and r["cold_s"] > 0
    assert sorted(r["graph_breaks"] for r in rows) == [0, 1]
    assert sum(r["cold_s"] for r in rows) == pytest.approx(
        result["first_call"]["phases"]["total_compile_s"]
    )
    assert low <= check["coverage"] <= 1.05, check


@pytest.mark.timing
def test_real_aot_eager_rows_and_sum_match_the_first_call():
    result, compiled, x = _cold_first_call("aot_eager")
    _assert_rows_and_sum(result, low=0.7)
    rows = result["rows"]
    # steady state: each frame's region runs once per call
    from tcdoctor.probes import profile

    with torch.no_grad():
        prof = profile._run(lambda: compiled(x), 5, torch.device("cpu"), None)
    got = compile_graphs.runs_per_call(rows, profile._raw_events(prof), 5)
    assert [r["runs_per_call"] for r in got] == [1, 1]
    assert not any(r["unused_in_steady_state"] for r in got)
    assert all(r["median_s_per_call"] >= r["median_self_s_per_call"] > 0 for r in got)
    # the same ids name the same frames after a reset: a second in-process compile joins
    again, _, _ = _cold_first_call("aot_eager")
    joined = compile_graphs.join_warm(rows, again["rows"])
    assert all(r["warm_s"] and r["warm_s"] > 0 for r in joined)


@pytest.mark.timing
@pytest.mark.inductor
def test_real_inductor_rows_sum_to_the_first_calls_compile_part(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    result, _, _ = _cold_first_call("inductor")
    _assert_rows_and_sum(result, low=0.8)
    assert all(r["codegen_and_cpp_or_triton_s"] > 0 for r in result["rows"])


# -- wired in: the parent's joins, the typed section, every renderer, the CLI -----------------


SAVED = os.path.join(HERE, "data", "schema1_two_breaks.json")


def _graphs(n: int = 7) -> dict:
    """A compile phase's `graphs`: n user frames plus one of torch's (an optimizer step) that the
    steady state never runs, joined with a warm process and a profile the parent's way."""
    from tcdoctor.report import phases

    adam = os.path.join(_TORCH_DIR, "optim", "adam.py")
    stack = [
        f"Line: 40, Name: train_step, Filename: {USER_FILE}",
        f"Line: 200, Name: step, Filename: {adam}",
    ]
    ms = [entry(f"{i}/0", 1.0 + i, 0.5, co_firstlineno=10 + i) for i in range(n)] + [
        entry(f"{n}/0", 0.25, 0.1, co_name="step", co_filename=adam, stack_trace=stack)
    ]
    data = {"compile": {}, "guards": {}, "memory": {}}
    c = {"guards": {}, "graphs": compile_graphs.probe(ms, 40.0, 0.5)}
    phases.BY_NAME["compile"].fill(data, c)
    warm = {"warm_s": 1.0, "phases": {}, "cache": {}, "native_compile_s": None}
    phases.BY_NAME["compile_warm"].fill(data, dict(warm, graphs=compile_graphs.table(ms[:2])))
    calls = [{"0/0": [1, 500, 300], "1/0": [2, 200, 200], "99/1": [1, 5, 5]} for _ in range(3)]
    profile = {"guard_overhead_s_per_call": 1e-6, "method": "m", "region_calls": calls}
    phases.BY_NAME["profile"].fill(data, profile)
    assert "region_calls" not in data["profile"]  # joined, not kept in the report
    return data["compile"]["graphs"]


def test_the_parent_joins_warm_seconds_and_runs_per_call_by_compile_id():
    g = _graphs()
    rows = {r["compile_id"]: r for r in g["rows"]}
    assert rows["0/0"]["warm_s"] == pytest.approx(1.0) and rows["6/0"]["warm_s"] is None
    assert rows["1/0"]["runs_per_call"] == 2 and rows["0/0"][
        "median_self_s_per_call"
    ] == pytest.approx(300e-9)
    assert rows["7/0"]["unused_in_steady_state"] and rows["7/0"]["origin"] == "pytorch"
    assert g["regions_not_in_table"] == ["99/1"]
    assert g["check"]["rows_cold_s"] == pytest.approx(sum(r["cold_s"] for r in g["rows"]))


def _saved_report(graphs: dict | None):
    import json

    from tcdoctor.report.model import Report

    with open(SAVED, encoding="utf-8") as fh:
        data = json.load(fh)
    if graphs is not None:
        data["compile"]["graphs"] = graphs
    return Report.from_dict(data)


def test_the_section_is_typed_and_written_only_when_measured():
    from tcdoctor.report.sections import CompileGraphs

    g = _graphs()
    rep = _saved_report(g)
    assert isinstance(rep.compile.graphs, CompileGraphs) and not rep.compile.graphs.extra
    assert [r.to_dict() for r in rep.compile.graphs.rows] == g["rows"]  # every key, its order
    assert rep.compile.graphs.rows[0].compile_id == g["rows"][0]["compile_id"]
    assert rep.compile.graphs.method == g["method"]
    assert rep.to_dict()["compile"]["graphs"] == g
    bare = _saved_report(None)
    assert bare.compile.graphs is None and "graphs" not in bare.to_dict()["compile"]


def test_the_check_line_never_prints_a_part_larger_than_its_whole():
    """The frames' timers run inside the first call; its compile part (first call − eager call) is
    an estimate that an eager call slower than the compiled call's own run leaves short."""
    from tcdoctor.render.compile_table import sum_line
    from tcdoctor.report.sections import CompileCheck

    over = sum_line(CompileCheck(rows_cold_s=10.56, first_call_compile_s=10.55, coverage=1.001))
    assert over.startswith("frames sum to 10.56 s: all of the first call's compile time")
    assert (
        "estimates it at 10.55 s, 10.00 ms short" in over
        and "of the first call's 10.55" not in over
    )
    under = sum_line(CompileCheck(rows_cold_s=0.645, first_call_compile_s=0.659, coverage=0.979))
    assert under == (
        "frames sum to 645.00 ms of the first call's 659.00 ms compile time "
        "(first call − eager call; coverage 98%)"
    )


def test_every_renderer_shows_the_frames_that_take_most_of_the_cold_time():
    from tcdoctor.render import compile_table
    from tcdoctor.render.html import HtmlRenderer
    from tcdoctor.render.markdown import MarkdownRenderer
    from tcdoctor.render.terminal import TerminalRenderer

    rep = _saved_report(_graphs())
    base = os.path.basename(USER_FILE)
    term = TerminalRenderer(limit=3).render(rep)
    assert f"\n{compile_table.TITLE}:\n" in term
    table = term.split(f"{compile_table.TITLE}:\n")[1]
    assert [line.split()[0] for line in table.splitlines()[2:5]] == ["6/0", "5/0", "4/0"]
    assert f" {base}:16 " in table and USER_FILE not in table  # file names only
    assert "… and 5 more frame(s) (" in table and "coverage " in table
    md = MarkdownRenderer(top=3).render(rep)
    assert f"### {compile_table.TITLE}" in md
    assert USER_FILE.replace("_", "\\_") + ":16 |" in md  # the whole path, escaped
    assert "| 6/0 | forward |" in md and "| 0/0 |" not in md and "… and 5 more frame(s)" in md
    page = HtmlRenderer().render(rep)
    assert f"<h2>{compile_table.TITLE}</h2>" in page
    assert page.count("<td>forward</td>") == 7 and compile_table.UNUSED in page  # every row
    assert "step (PyTorch itself, from " in page
    for text in (term, md, page):
        assert "frames sum to " in text and "coverage " in text
    bare = _saved_report(None)
    for renderer in (TerminalRenderer(), MarkdownRenderer(), HtmlRenderer()):
        assert compile_table.TITLE not in renderer.render(bare)


@pytest.mark.timing
def test_cli_reports_one_row_per_compiled_frame_with_runs_from_the_warm_profile(tmp_path):
    import json

    from conftest import NO_TIMING_PROCESSES, run_cli

    from tcdoctor.render import compile_table

    rc, out, err = run_cli(
        tmp_path,
        "analyze",
        f"{TARGET}:build",
        *("--backend", "aot_eager", "--budget", "0.3", "--threads", "1", "--no-fixes", "-q"),
        *NO_TIMING_PROCESSES,  # the warm process's rows and profile; no timing-only process
        *("--json", "r.json", "--md", "r.md", "--html", ""),
    )
    assert rc == 0, err
    report = json.loads((tmp_path / "r.json").read_text())
    graphs = report["compile"]["graphs"]
    rows, check = graphs["rows"], graphs["check"]
    with open(TARGET) as f:
        n_lines = len(f.read().splitlines())
    assert len(rows) == 2 == report["graphs"]["count"]  # forward, and its resume after the break
    assert sorted(r["compile_id"] for r in rows) == ["0/0", "1/0"]
    for r in rows:
        assert r["file"] == TARGET and 1 <= r["line"] <= n_lines and r["origin"] == "user"
        assert r["cold_s"] > 0 and r["warm_s"] > 0  # joined with the warm child's rows
        assert r["runs_per_call"] == 1 and r["profiled_calls"] >= 5  # the warm child's profile
        assert not r["unused_in_steady_state"]
    assert graphs["regions_not_in_table"] == []
    assert sum(r["cold_s"] for r in rows) == pytest.approx(
        report["compile"]["phases"]["total_compile_s"]
    )
    assert 0.5 <= check["coverage"] <= 1.05, check
    assert "region_calls" not in report["profile"]
    md = (tmp_path / "r.md").read_text()
    base = os.path.basename(TARGET)
    assert f"### {compile_table.TITLE}" in md and "| 0/0 | forward |" in md
    assert f"\n{compile_table.TITLE}:\n" in out and f" {base}:" in out
    assert "frames sum to " in out and "frames sum to " in md
    # time/call is scaled to the unprofiled call: no frame, nor their sum, exceeds the compiled median
    median = report["runtime"]["compiled"]["median_s"]
    assert graphs["time_scale"]["scaled"] and graphs["time_scale"]["compiled_median_s"] == median
    assert sum(r["time_s_per_call"] for r in rows) <= median * (1 + 1e-9)
    assert "time/call is profiled time" in md  # method text: Markdown and HTML, not the terminal


def test_frame_times_are_scaled_to_the_unprofiled_call_and_never_exceed_it():
    """Mixtral's case: one frame profiled at 4.51 ms per call inside a call whose compiled median
    is 3.65 ms (the profiled call took 5.0 ms)."""
    ms = 1e-3
    rows = [
        {"compile_id": "0/0", "median_self_s_per_call": 4.51 * ms, "median_s_per_call": 4.6 * ms}
    ]
    scaled, scale = compile_joins.scale_to_call(rows, 5.0 * ms, 3.65 * ms)
    assert scale["scaled"] and scale["factor"] == pytest.approx(3.65 / 5.0)
    assert not scale["sum_rescaled"]
    (r,) = scaled
    assert r["time_s_per_call"] == pytest.approx(4.51 * 3.65 / 5.0 * ms)  # 3.29 ms
    assert r["profiled_self_s_per_call"] == 4.51 * ms and r["scaled_s_per_call"] <= 3.65 * ms
    # medians need not add up: two frames whose scaled times would sum past the call are
    # scaled once more, to sum to it exactly
    two = [{"compile_id": c, "median_self_s_per_call": 2.0 * ms} for c in ("0/0", "1/0")]
    scaled, scale = compile_joins.scale_to_call(two, 3.5 * ms, 3.0 * ms)
    assert scale["sum_rescaled"]
    assert sum(r["time_s_per_call"] for r in scaled) == pytest.approx(3.0 * ms)
    # a profiled call no slower than the compiled median: the times are shown as profiled
    scaled, scale = compile_joins.scale_to_call(two, 2.5 * ms, 5.0 * ms)
    assert scale["factor"] == 1.0 and scaled[0]["time_s_per_call"] == 2.0 * ms
    # no compiled median: nothing to scale against, and the report says so
    same, scale = compile_joins.scale_to_call(rows, 5.0 * ms, None)
    assert same == rows and not scale["scaled"] and "no compiled median" in scale["why"]


def test_the_consistency_check_catches_a_frame_slower_than_its_call():
    from consistency import parts_over_the_whole

    from tcdoctor.render import compile_table
    from tcdoctor.report.sections import CompileGraphs

    ms = 1e-3
    g = _graphs(2)
    g["rows"][0]["median_self_s_per_call"] = 4.51 * ms  # as Mixtral's table had it
    g["rows"][1]["median_self_s_per_call"] = 0.1 * ms
    rep = _saved_report(g)
    rep.runtime.compiled.median_s = 3.65 * ms
    found = parts_over_the_whole(rep)
    assert len(found) == 2 and "more than the compiled call's median 3.650 ms" in found[0]
    assert "sum to 4.610 ms" in found[1]
    rows, scale = compile_joins.scale_to_call(g["rows"], 5.0 * ms, 3.65 * ms)  # the parent's join
    rep.compile.graphs = CompileGraphs.from_dict(dict(g, rows=rows, time_scale=scale))
    assert parts_over_the_whole(rep) == []
    line = compile_table.scale_line(rep.compile.graphs.time_scale)
    assert "× 0.73" in line and "3.65 ms" in line and "5.00 ms" in line, line
    assert line in compile_table.check_lines(rep.compile.graphs)
