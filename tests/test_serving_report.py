"""The serving section as users read it (issue 55, wave 2): drawn in every format from saved
reports (tests/data/schema<N>_serving*.json, written by tests/data/make_reports.py), the verdict's
operating model driven with literal figures, check's serving checks on the saved reports and once
end to end (aot_eager), the sweep's serving columns, the warm-up script beside the reports, and
--traffic refused with --nproc > 1."""

from __future__ import annotations

import copy
import html
import json
import os

import pytest
from conftest import ROOT, saved_report

from tcdoctor import units
from tcdoctor.outcomes import Decision
from tcdoctor.render.html import HtmlRenderer
from tcdoctor.render.markdown import MarkdownRenderer
from tcdoctor.render.terminal import TerminalRenderer
from tcdoctor.report.model import Report
from tcdoctor.report.sections.serving import Aot

SERVE_MLP = os.path.join(ROOT, "tests", "targets", "serve_mlp.py")
# the saved reports' options: one process, aot_eager; the raw one runs the shape strategies
SERVE_SAVED = ("--backend", "aot_eager", "--threads", "1", "--no-warm", "--processes", "1",
               "--no-fixes", "--budget", "0.3", "--no-submodules")  # fmt: skip
SERVE_SAVED_WARMED = (*SERVE_SAVED, "--no-dynamic")

RENDER = {
    "terminal": lambda r: TerminalRenderer().render(r),
    "markdown": lambda r: MarkdownRenderer().render(r),
    "html": lambda r: HtmlRenderer().render(r),
}


def _saved(name: str = "serving") -> Report:
    return Report.load(str(saved_report(name)))


# -- the section in every format ----------------------------------------------------------------


def test_the_section_is_drawn_in_every_format_with_figures_from_units():
    r = _saved()
    s = r.serving
    assert s.traffic_compiles >= 2 and s.proven is True  # the saved raw traffic compiles
    p99 = units.seconds(s.p99_s)
    compiles = [c for c in s.compiled.compiles if c.kind in ("compile", "recompile")]
    for fmt, render in RENDER.items():
        text = render(r)
        assert "Operating model for this traffic" in text, fmt
        assert p99 in text and units.seconds(s.replay.eager.p99_s) in text, fmt
        assert "PROVEN in a fresh process" in text, fmt
        for c in compiles:
            assert units.seconds(c.seconds) in text, (fmt, c)
        assert r.verdict.serving.text.split(":")[0] in text, fmt
    md = RENDER["markdown"](r)
    for heading in ("### Serving (10 requests)", "### Compiles during traffic: 3",
                    "### Latency per request under traffic", "### Warm-up", "### Restart",
                    "### Host time, requests per second and threads",
                    "### Shape strategies on the traffic"):  # fmt: skip
        assert heading in md, heading
    assert "2 \\<= args\\[0\\].size()\\[0\\]" in md  # PyTorch's guard, escaped once
    term = RENDER["terminal"](r)
    assert "### " not in term and "Restart" not in term  # the files' detail parts only
    html = RENDER["html"](r)
    assert "<summary>Serving: 10 requests replayed" in html
    assert "<span>p99 under traffic</span><b>" + p99 in html  # the tile


def test_the_chart_marks_each_compile_stall_and_each_eager_fallback_request():
    r = copy.deepcopy(_saved())
    side = r.serving.compiled
    stalls = {c.request for c in side.compiles}
    side.fallback_requests = [7, 8, 9]
    html = RENDER["html"](r)
    chart = html[html.index('aria-label="latency per request') :]
    chart = chart[: chart.index("</svg>")]
    assert chart.count('fill="#d4504c"><title>request') == len(stalls) > 0
    assert chart.count("served by the eager fallback</title>") == 3
    assert chart.count("<polyline") >= 3  # eager, compiled, after the warm-up
    assert "compile stall" in html and "eager fallback" in html  # the legend
    assert '<span class="pill bad">eager fallback</span>' in html  # the tile warns


def test_strings_from_pytorch_and_the_user_are_escaped_in_every_file():
    r = copy.deepcopy(_saved())
    r.serving.compiled.compiles[1].reason = "<script>alert(1)</script> | *x*"
    r.serving.traffic.description = "<b>mine</b>"
    html, md = RENDER["html"](r), RENDER["markdown"](r)
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>mine" not in html and "&lt;b&gt;mine" in html
    assert "\\<script\\>alert(1)\\</script\\> \\| \\*x\\*" in md and "\\<b\\>mine" in md


def test_each_part_not_measured_says_why_in_every_format():
    r = copy.deepcopy(_saved())
    s = r.serving
    s.restart = s.host = s.threads = None
    s.warmup.proof = None
    s.not_measured.update(proof="the --timeout left 2 s for it", host="the replay did not finish")
    for fmt, render in RENDER.items():
        text = render(r)
        assert "not measured (the --timeout left 2 s for it)" in text, fmt
        assert "not measured (the replay did not finish)" in text, fmt
        assert "not measured (--backend aot" in text, fmt  # the saved report's own AOT why
    assert "proof: the --timeout left 2 s for it" in RENDER["markdown"](r)  # the files' list


FINDING = {"file": "/src/model.py", "line": 12, "code": "if x.sum() > 0:", "kind": "branch",
           "why": "Data dependent error: Eq(u0, 1)", "fix": "torch.cond(pred, true_fn, false_fn, (x,))"}  # fmt: skip


def test_aot_rows_name_the_users_line_or_the_package_against_the_jit():
    r = copy.deepcopy(_saved())
    r.serving.aot = Aot(exported=False, findings=[FINDING], not_measured={"export": "no"})
    for fmt, render in RENDER.items():
        assert "does not export at model.py:12: Data dependent error" in render(r), fmt
    md = RENDER["markdown"](r)
    assert "`/src/model.py:12`" in md and "torch.cond(pred, true\\_fn, false\\_fn, (x,))" in md
    lat = [2e-4] * 10
    r.serving.aot = Aot(exported=True, export_s=1.5, compile_s=23.0, package_bytes=2 ** 20,
                        load_s=0.007, first_request_s=1.2, latencies_s=lat, p50_s=2e-4,
                        p99_s=2e-4, numerics={"status": "pass", "passed": True})  # fmt: skip
    text = RENDER["markdown"](r)
    assert "load 7.00 ms, p50 / p99 200.0 µs / 200.0 µs, numerics pass" in text
    assert "| AOT package | 10 of 10 | 200.0 µs |" in text
    assert "7.00 ms / 1.20 s (the JIT restart's first request: " in text
    assert "23.00 s" in text and "1.0 MiB" in text  # the build, reported, not hidden


def test_the_user_warm_up_is_named_and_its_compiles_kept_apart():
    r = _saved("serving_warmed")
    s = r.serving
    assert s.warmup.source == "yours" and s.warmup.user.made >= 2
    assert s.traffic_compiles == 0 and s.proven is True  # the warm-up covers the traffic
    for fmt, render in RENDER.items():
        text = render(r)
        assert "your Traffic(warmup=...): PROVEN" in text, fmt
        assert f"your warm-up compiled {s.warmup.user.made} time(s) before the traffic" in text
    assert "| your warm-up request | shapes | seconds |" in RENDER["markdown"](r)


def test_a_report_without_traffic_draws_nothing_of_serving():
    r = Report.load(str(saved_report("two_breaks")))
    for fmt, render in RENDER.items():
        text = render(r)
        assert "Serving" not in text and "p99 under traffic" not in text, fmt


# -- the verdict's operating model, driven with literal figures ---------------------------------


def _lat(base: float, n: int = 60) -> list[float]:
    """n latencies around `base` (±5%, a fixed pattern: the same for every call)."""
    return [base * (1 + 0.05 * ((i * 7) % 11 - 5) / 5) for i in range(n)]


def _serving(jit=1e-3, eager=1e-3, aot=None, proven=True, spread=0.02, strategies=(), **kw):
    from tcdoctor.report.sections.serving import Serving

    n = 60
    return Serving.from_dict({
        "traffic": {"requests": n},
        "replay": {"eager": {"latencies_s": _lat(eager)},
                   "compiled": {"latencies_s": [0.5] + _lat(jit)[1:], "recompile_limit": 8,
                                "compiles": [{"request": 0, "kind": "compile", "seconds": 0.5}]}},
        "warmup": {"requests": [0], "proof": {
            "proven": proven, "latencies_s": _lat(jit),
            "compiled_requests": [] if proven else [
                {"request": 7, "shapes": "(Tensor[1,16] float32)", "reason": "2 <= x.size()[0]"}]}},
        "restart": {"first_request_s": kw.get("restart_s", 4.0), "hit": []},
        "aot": None if aot is None else {
            "exported": True, "latencies_s": _lat(aot), "p50_s": aot, "p99_s": aot,
            "first_request_s": kw.get("aot_start_s", 1.0), "load_s": 0.01,
            "numerics": {"status": "pass" if kw.get("aot_ok", True) else "fail",
                         "passed": kw.get("aot_ok", True)}},
        "strategies": list(strategies),
        "process_spread": spread,
        "not_measured": {} if aot is not None else {"aot": "--backend aot_eager"},
    })  # fmt: skip


def _model(decision=Decision.COMPILE, **kw):
    from tcdoctor.verdict.serving import operating_model

    r = Report()
    r.serving = _serving(**kw)
    r.verdict.decision = decision
    return operating_model(r)


def test_jit_is_named_when_it_is_faster_and_its_warm_up_is_proven():
    om = _model(jit=0.5e-3)
    assert om.model == "jit" and "faster than eager on this traffic" in om.text
    assert om.relation.startswith("Agrees with the verdict above")
    other = _model(Decision.DONT_COMPILE, jit=0.5e-3)  # the headline judged steady calls
    assert other.model == "jit" and other.relation.startswith("Beside the verdict, not against it")
    assert any(f.startswith("p99 under traffic: eager 1.0") for f in om.figures)


def test_eager_where_the_jit_is_inside_the_noise_or_not_decided_across_processes():
    om = _model(jit=1.01e-3)
    assert om.model == "eager" and "inside the noise" in om.text
    assert _model(Decision.DONT_COMPILE, jit=1.01e-3).relation.startswith("Agrees")
    # the same 2x speedup with no spread between processes measured is never called faster
    lone = _model(jit=0.5e-3, spread=None)
    assert lone.model == "eager" and "not decided across processes" in lone.text


def test_no_model_where_the_jit_is_faster_but_no_warm_up_covers_the_traffic():
    om = _model(jit=0.5e-3, proven=False)
    assert om.model is None
    assert "request 7 (Tensor[1,16] float32) would compile (2 <= x.size()[0])" in om.text
    assert om.relation.startswith("The verdict above stands as it is")


def test_aot_when_faster_than_the_jit_or_as_fast_and_sooner_after_a_restart():
    assert _model(jit=0.5e-3, aot=0.25e-3).model == "aot"
    same = _model(jit=0.5e-3, aot=0.5e-3, aot_start_s=1.0, restart_s=4.0)
    assert same.model == "aot" and "serves its first request sooner" in same.text
    assert _model(jit=0.5e-3, aot=0.5e-3, aot_start_s=5.0, restart_s=4.0).model == "jit"
    assert _model(jit=0.5e-3, aot=0.25e-3, aot_ok=False).model == "jit"  # numerics failed
    rel = _model(Decision.DONT_COMPILE, jit=1e-3, aot=0.5e-3)
    assert rel.model == "aot" and rel.relation.startswith("Beside the verdict, not against it")
    assert any(f.startswith("AOT: load 10.00 ms") for f in rel.figures)


def _row(name, ratio, decides, fallback=()):
    """A strategy row whose interval decides `decides` (its words derive from its bounds)."""
    from tcdoctor.report.processes.paired import Interval

    high = {"faster": ratio * 1.1, "inside the noise": 1.2}[decides]
    iv = Interval(vs="automatic", ratio=ratio, low=ratio * 0.9, high=high, level=0.95, pairs=60,
                  process_spread=0.05, processes=2).to_dict()  # fmt: skip
    assert iv["decides"] == decides
    return {"name": name, "label": name, "latencies_s": _lat(1e-3), "interval": iv,
            "fallback_requests": list(fallback)}  # fmt: skip


def test_the_best_strategy_is_named_only_where_its_interval_decides_and_marked_alone():
    rows = [_row("static", 0.5, "faster", fallback=[3, 4]), _row("dynamic", 0.7, "faster"),
            _row("marked", 0.6, "inside the noise")]  # fmt: skip
    om = _model(jit=0.5e-3, strategies=rows)
    assert om.strategy == "dynamic" and "0.70× the time" in om.strategy_text
    none = _model(jit=0.5e-3, strategies=[_row("marked", 0.6, "inside the noise")])
    assert none.strategy is None and "beyond the noise" in none.strategy_text
    # the table marks the verdict's strategy and no other, in every format
    r = copy.deepcopy(_saved())
    r.verdict.serving.strategy = "dynamic"
    for fmt, render in RENDER.items():
        text = render(r)
        assert text.count("← best") == 1, fmt
        line = next(ln for ln in text.splitlines() if "← best" in ln)
        assert "dynamic" in line and "static" not in line, fmt
    r.verdict.serving.strategy = None
    assert not any("← best" in render(r) for render in RENDER.values())


# -- check: the serving checks ------------------------------------------------------------------

GATE = ("--max-traffic-compiles", "0", "--require-warmup-proof")


def test_check_passes_on_the_warmed_traffic_and_fails_on_the_raw_one(cli):
    rc, out, err = cli("check", "--report", str(saved_report("serving_warmed")), *GATE)
    assert rc == 0, out + err
    assert "PASS  compiles during traffic: 0 (≤ 0 required)" in out
    assert "PASS  warm-up proof: your warm-up (3 request(s)) proven" in out
    rc, out, err = cli("check", "--report", str(saved_report("serving")), *GATE,
                       "--junit", "j.xml")  # fmt: skip
    assert rc == 1, out + err
    assert "FAIL  compiles during traffic: 3 (≤ 0 required)" in out
    assert "request 2 (Tensor[2,16] float32): recompile (tensor 'args[0]' size mismatch" in out
    assert "PASS  warm-up proof: the derived warm-up (3 request(s)) proven" in out


def test_the_p99_limit_is_judged_in_ms_and_a_report_without_serving_fails_as_not_measured(cli):
    r = _saved()
    ms = r.serving.p99_s * 1e3
    rc, out, _ = cli("check", "--report", str(saved_report("serving")), "--max-p99-ms", f"{ms * 2}")
    assert rc == 0 and f"PASS  p99 under traffic (ms): {ms:.2f} ms" in out
    rc, out, _ = cli("check", "--report", str(saved_report("serving")), "--max-p99-ms", f"{ms / 2}")
    assert rc == 1 and "FAIL  p99 under traffic (ms)" in out
    rc, out, _ = cli("check", "--report", str(saved_report("two_breaks")), "--max-p99-ms", "50",
                     *GATE)  # fmt: skip
    assert rc == 1
    for name in ("p99 under traffic (ms)", "compiles during traffic", "warm-up proof"):
        assert f"FAIL  {name}: not measured (no serving section (analyze with --traffic N" in out


def test_a_warm_up_that_misses_a_request_fails_naming_it():
    from tcdoctor import checks

    r = copy.deepcopy(_saved("serving_warmed"))
    proof = r.serving.warmup.proof
    proof.proven, proof.compiled_requests = (
        False,
        [{"request": 6, "shapes": "(Tensor[1,16] float32)", "reason": "2 <= args[0].size()[0]"}],
    )
    (res,) = checks.check(r, require_warmup_proof=True)
    assert res.failed and res.reason == (
        "not proven: request 6 (Tensor[1,16] float32) would compile (2 <= args[0].size()[0])"
    )


def test_check_on_the_target_end_to_end_passes_on_the_warmed_traffic(cli, tmp_path):
    """Once for real, cheaply (aot_eager, one process): the user's warm-up served first in the
    replay, its compiles start-up cost, the traffic compiling nothing, the proof passing."""
    from test_serving import CHEAP_SERVE

    rc, out, err = cli("check", f"{SERVE_MLP}:build_warmed", *CHEAP_SERVE, *GATE, "--json",
                       "r.json", timeout=600)  # fmt: skip
    assert rc == 0, out[-3000:] + err[-3000:]
    s = Report.load(str(tmp_path / "r.json")).serving
    assert s.warmup.source == "yours" and s.warmup.user.requests == 3
    assert s.warmup.user.made >= 2 and s.traffic_compiles == 0 and s.proven is True
    assert s.warmup.requests == []  # nothing left for a derived warm-up to cover


# -- the sweep's columns, the outputs, the refusals ---------------------------------------------


def test_the_sweep_overview_has_p99_and_traffic_compiles_where_a_target_has_them():
    from tcdoctor.report import sweep as sweep_data

    served, plain = _saved(), Report.load(str(saved_report("two_breaks")))
    rows = [sweep_data.row_from_report("a.py:build", served, 0, 3.0, "a"),
            sweep_data.row_from_report("b.py:build", plain, 0, 2.0, "b")]  # fmt: skip
    sweep = sweep_data.Sweep(options={"backend": "aot_eager"}, rows=rows)
    assert rows[0].p99_s == served.serving.p99_s and rows[0].traffic_compiles == 3
    md = MarkdownRenderer().render_sweep(sweep)
    assert "| p99 under traffic | traffic compiles | took |" in md
    assert f"| {units.seconds(served.serving.p99_s)} | 3 | 3.00 s |" in md
    assert "<th>p99 under traffic</th>" in HtmlRenderer().render_sweep(sweep)
    alone = sweep_data.Sweep(options={"backend": "eager"}, rows=rows[1:])
    assert "p99 under traffic" not in MarkdownRenderer().render_sweep(alone)
    assert "p99_s" not in json.loads(alone.to_json())["rows"][0]  # a sweep's JSON as it was


def test_traffic_with_nproc_above_one_is_refused_in_one_line_before_any_child(cli):
    rc, out, err = cli("analyze", f"{SERVE_MLP}:build", "--traffic", "5", "--nproc", "2")
    assert rc == 2 and out == ""
    assert err.strip().splitlines() == [
        "tcdoctor: error: --traffic replays requests one at a time in single processes, as one "
        "server serves them: it cannot run with --nproc/--nnodes above 1 (analyze the served "
        "model without them)"
    ]


def test_the_warm_up_script_is_written_beside_the_reports_and_named_in_them(tmp_path):
    from tcdoctor.commands.analyze import BESIDE
    from tcdoctor.commands.outputs import write_outputs
    from tcdoctor.render.formats import Outputs

    r = _saved()
    (tmp_path / "out").mkdir()
    (tmp_path / "p").mkdir()
    write_outputs(
        r,
        Outputs.of(json=str(tmp_path / "out" / "r.json"), md=str(tmp_path / "r.md"), beside=BESIDE),
    )
    script = tmp_path / "out" / "tcdoctor-warmup.py"
    assert script.read_text() == r.serving.warmup.script
    assert Report.load(str(tmp_path / "out" / "r.json")).serving.warmup.script_path == str(script)
    assert str(script) in (tmp_path / "r.md").read_text().replace("\\_", "_")
    plain = Report.load(str(saved_report("two_breaks")))  # no serving: no script
    write_outputs(plain, Outputs.of(json=str(tmp_path / "p" / "r.json"), beside=BESIDE))
    assert not (tmp_path / "p" / "tcdoctor-warmup.py").exists()


def test_a_traffic_takes_the_users_warm_up_and_refuses_a_wrong_one():
    import torch

    from tcdoctor import Traffic, Workload
    from tcdoctor.target.traffic import warmup_requests

    make = lambda batch, seq: (torch.zeros(batch, seq),)  # noqa: E731
    t = Traffic.shapes(make, batch=range(1, 4), seq=[8, 16], warmup=[{"batch": 1, "seq": 8}])
    w = Workload(torch.nn.Identity(), (torch.zeros(2, 8),), traffic=t)
    (req,) = warmup_requests(t, w)
    assert (req.index, req.shapes, req.dims) == (0, "(Tensor[1,8] float32)", {"batch": 1, "seq": 8})
    assert t.info()["warmup"] == 1 and Traffic([(torch.zeros(1),)]).info()["warmup"] is None
    with pytest.raises(TypeError, match=r"dicts of the drawn dimensions \(batch, seq\)"):
        Traffic.shapes(make, batch=range(1, 4), seq=[8], warmup=[{"batch": 1}])
    with pytest.raises(TypeError, match="takes a list of requests"):
        Traffic([(torch.zeros(1),)], warmup="(x,)")
    listed = Traffic([(torch.zeros(3, 2),)], warmup=[(torch.zeros(1, 2),)])
    assert [r.shapes for r in warmup_requests(listed, w)] == ["(Tensor[1,2] float32)"]


def test_device_time_is_a_column_only_where_it_was_measured():
    r = copy.deepcopy(_saved())
    md = RENDER["markdown"](r)
    assert "device / request" not in md and "device time: not measured (on CPU" in md
    r.serving.host.compiled.device_s = 4e-5  # as a CUDA run records it
    md = RENDER["markdown"](r)
    assert "| device / request |" in md and "| 40.0 µs |" in md
    assert "device time: not measured" not in md


def test_a_serving_section_whose_replay_failed_is_drawn_and_judged_as_not_measured():
    from tcdoctor import checks
    from tcdoctor.report.sections.serving import Serving
    from tcdoctor.verdict.serving import operating_model

    r = copy.deepcopy(_saved())
    why = "serving replay: RuntimeError: boom"
    r.serving = Serving(not_measured={"replay": why, "proof": "the replay did not finish"})
    r.verdict.serving = operating_model(r)
    assert r.verdict.serving.model is None and "not both replayed" in r.verdict.serving.text
    for fmt, render in RENDER.items():
        text = render(r)
        assert f"not measured ({why})" in text.replace("\\", ""), fmt
    results = checks.check(r, max_p99_ms=10, max_traffic_compiles=0, require_warmup_proof=True)
    assert [x.failed for x in results] == [True, True, True]
    assert all(why in x.reason or "the replay did not finish" in x.reason for x in results)


def test_a_compile_inside_the_threaded_run_is_said_with_its_reason():
    """The threads' requests/s includes any compile made inside the threaded run (seen on GPT-2:
    298 requests/s in one thread, 26.7 in 4, one compile): the row says so in PyTorch's words."""
    from tcdoctor.render.serving_parts import threads_text

    rep = _saved()
    th = rep.serving.threads
    assert th.compiles == 0 and "compile" not in threads_text(rep.serving)
    th.compiles, th.compile_reasons = 1, ["forward: tensor 'x' size mismatch at index 0"]
    text = threads_text(rep.serving)
    assert "1 compile(s) inside the threaded run" in text and "size mismatch at index 0" in text


def test_a_strategy_whose_steady_pass_ran_out_of_time_says_so_in_every_format():
    """GPT-2's static row: 8 compiles took the part's time, the steady pass served no request; its
    p50 and p99 read 'not measured' and a line says why."""
    r = copy.deepcopy(_saved())
    row = next(x for x in r.serving.strategies if x.name == "static")
    row.latencies_s = []  # p50 and p99 are derived from them
    row.stopped = "the part's time ran out after 0 requests"
    for fmt, render in RENDER.items():
        text = html.unescape(render(r)) if fmt == "html" else render(r)
        assert "static: stopped early: the part's time ran out after 0 requests" in text, fmt


def test_a_strategy_past_recompile_limit_names_the_requests_the_eager_fallback_served():
    """The issue's static shapes: the report says the limit was reached and names the requests
    served by the eager fallback, not only how many."""
    r = copy.deepcopy(_saved())
    row = next(x for x in r.serving.strategies if x.name == "static")
    row.recompile_limit, row.limit_hit = 8, {"request": 9, "message": "recompile limit"}
    row.fallback_requests = [9, 10, 12, *range(14, 60)]
    line = (
        "static: recompile_limit (8) reached at request 9; served by the eager fallback: requests "
        "9, 10, 12, 14, 15"
    )
    for fmt, render in RENDER.items():
        text = html.unescape(render(r)) if fmt == "html" else render(r)
        text = text.replace("\\_", "_") if fmt == "markdown" else text  # Markdown's escape
        assert line in text and "(49 in all)" in text, fmt


# -- the one comparison: report/processes/paired.py ----------------------------------------------


def test_a_paired_interval_claims_with_the_one_claim_enum_and_derives_its_words():
    from tcdoctor.report.processes.claims import Claim
    from tcdoctor.report.processes.paired import Interval, ratio_interval
    from tcdoctor.thresholds import RULES

    def iv(low, high, spread=0.05):
        return Interval(vs="automatic", ratio=(low + high) / 2, low=low, high=high, level=0.95,
                        pairs=40, process_spread=spread, processes=2 if spread else 1)  # fmt: skip

    assert iv(0.7, 0.9).claim is Claim.FASTER and iv(0.7, 0.9).decides == "faster"
    assert iv(1.1, 1.3).claim is Claim.SLOWER and iv(1.1, 1.3).decides == "slower"
    noise = iv(0.8, 1.2)
    assert noise.claim is Claim.UNDECIDED and noise.inside_the_noise
    assert noise.decides == "inside the noise"
    alone = iv(0.7, 0.9, spread=None)  # one process: decides nothing across processes
    assert alone.claim is Claim.UNDECIDED and not alone.inside_the_noise
    assert alone.decides.startswith("not decided across processes")
    # a saved report's words, recomputed on load from its bounds, read as the file wrote them
    stored = [r["interval"] for r in _saved().to_dict()["serving"]["strategies"] if r["interval"]]
    assert stored and all(Interval.from_dict(d).to_dict() == d for d in stored)
    # the level and the fewest pairs are the rules'
    a = {i: 1.0 + 0.01 * (i % 3) for i in range(4)}
    b = {i: 2.0 + 0.01 * (i % 5) for i in range(4)}
    assert ratio_interval(a, b, 0.05, "b") is None  # 4 pairs, under RULES.min_pairs
    got = ratio_interval(a, b, 0.05, "b", RULES.replace(min_pairs=4, serving_level=0.9))
    assert got is not None and got.level == 0.9 and got.pairs == 4 and got.claim is Claim.FASTER
