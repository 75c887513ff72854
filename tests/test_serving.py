"""The serving section (issue 55): the traffic, the replay's counts against PyTorch's own, the
eager fallback after recompile_limit, the warm-up proof, a bad request, the threads row, the
parent's plan, and one analysis end to end (cheap: aot_eager, one thread, one process)."""

import json
import math
import os
import subprocess
import sys
import time

import pytest
import torch
from conftest import ROOT, run_cli
from torch import nn

import tcdoctor
from tcdoctor.checks.questions import Questions
from tcdoctor.errors import EXIT_INCOMPLETE
from tcdoctor.options import Options
from tcdoctor.probes import dynamo_state, serve_threads, warmup
from tcdoctor.probes.recompiles import plain_reason
from tcdoctor.probes.traffic_replay import ServeContext, recompile_limit, replay
from tcdoctor.report.events import Event
from tcdoctor.report.model import Report
from tcdoctor.run import serving
from tcdoctor.run.progress import Progress
from tcdoctor.run.serving import aot as aot_part
from tcdoctor.run.serving import section
from tcdoctor.run.serving.part import Ask, Serving
from tcdoctor.run.serving.proof import part_proof
from tcdoctor.run.serving.strategies import part_strategy, varying_dims
from tcdoctor.stats import nearest_rank
from tcdoctor.target.pristine import Pristine
from tcdoctor.target.traffic import Traffic, TrafficError, bucket_of, from_workload, requests

TARGET = os.path.join(ROOT, "tests", "targets", "serve_mlp.py")


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).eval()


def _traffic(sizes):
    return Traffic([(torch.randn(b, 16),) for b in sizes])


def _call(fn, ca):
    with torch.no_grad():
        return ca.apply(fn)


def _replay(fn, workload, n, **kw):
    reqs = requests(workload.traffic, workload, n)
    return replay(fn, reqs, _call, lambda: None, deadline=time.monotonic() + 120, **kw)


# -- the traffic -------------------------------------------------------------------------------


def test_traffic_kinds_requests_and_one_line_refusals():
    w = tcdoctor.Workload(_mlp(), (torch.randn(4, 16),), traffic=_traffic([1, 2, 3]))
    got = [r.shapes for r in requests(w.traffic, w, 5)]  # a list is cycled
    assert got == [f"(Tensor[{b},16] float32)" for b in (1, 2, 3, 1, 2)]
    assert w.traffic.default_n() == 3 and w.traffic.info()["kind"] == "list"

    dist = Traffic.shapes(
        lambda batch, seq: (torch.zeros(batch, seq),), n=50, seed=3, batch=range(1, 5),
        seq={8: 1, 16: 3}, buckets={"seq": [12, 32]},
    )  # fmt: skip
    a = [r.dims for r in requests(dist, w, 20)]
    assert a == [r.dims for r in requests(dist, w, 20)]  # seeded: the same every replay
    assert {d["seq"] for d in a} <= {8, 16} and {d["batch"] for d in a} <= {1, 2, 3, 4}
    padded = [r.dims for r in requests(dist, w, 20, padded=True)]
    assert [p["seq"] for p in padded] == [bucket_of(d["seq"], [12, 32]) for d in a]
    assert [p["batch"] for p in padded] == [d["batch"] for d in a]
    assert bucket_of(40, [12, 32]) == 40  # above every bucket: as drawn

    with pytest.raises(TypeError, match="tcdoctor.Traffic"):
        tcdoctor.Workload(_mlp(), (torch.randn(4, 16),), traffic=[(torch.randn(1, 16),)])
    with pytest.raises(TypeError, match="TrainStep takes no traffic"):
        tcdoctor.TrainStep(
            _mlp(), (torch.randn(4, 16),), torch.zeros(4, 4), nn.MSELoss(),
            torch.optim.SGD(_mlp().parameters(), 0.1), traffic=_traffic([1]),
        )  # fmt: skip
    with pytest.raises(TypeError, match="buckets"):
        Traffic([(torch.randn(1, 16),)], buckets={"seq": [8]})
    with pytest.raises(TypeError, match="dimension 'batch'"):
        Traffic.shapes(lambda batch: (torch.zeros(batch, 16),), batch={})


def test_without_a_traffic_the_inputs_and_variants_are_replayed():
    w = tcdoctor.Workload(_mlp(), (torch.randn(4, 16),), variants=[(torch.randn(2, 16),)])
    t = from_workload(w)
    assert [r.shapes for r in requests(t, w, 3)] == [
        "(Tensor[4,16] float32)",
        "(Tensor[2,16] float32)",
        "(Tensor[4,16] float32)",
    ]
    assert "the target gave no traffic" in t.describe()


def test_nearest_rank_is_one_of_the_samples():
    xs = [float(i) for i in range(1, 101)]
    assert (nearest_rank(xs, 0.5), nearest_rank(xs, 0.9), nearest_rank(xs, 0.99)) == (50, 90, 99)
    assert nearest_rank(xs[:10], 0.99) == 10.0  # under 100 samples p99 is the maximum
    assert nearest_rank([3.0, 1.0, 2.0], 0.5) == 2.0
    hundred = [float(i) for i in range(1, 101)]
    assert nearest_rank(hundred, 0.07) == 7.0  # 0.07 * 100 is 7.000000000000001 in floats


# -- the replay against PyTorch's own records ---------------------------------------------------


def test_replay_compiles_equal_pytorchs_for_the_same_requests_by_hand():
    sizes = [4, 4, 2, 8, 1, 8, 3, 2]
    w = tcdoctor.Workload(_mlp(), (torch.randn(4, 16),), traffic=_traffic(sizes))
    reqs = list(requests(w.traffic, w, len(sizes)))

    dynamo_state.fresh()  # by hand: the same torch.compile, the same requests, PyTorch's records
    by_hand = torch.compile(_mlp(), backend="aot_eager")
    per_request = []
    for r in reqs:
        before = len(dynamo_state.compilation_metrics())
        with torch.no_grad():
            by_hand(*r.args.args)
        per_request.append(dynamo_state.compilation_metrics()[before:])
    expected = [(i, plain_reason(m.recompile_reason) if m.recompile_reason else None)
                for i, ms in enumerate(per_request) for m in ms]  # fmt: skip

    dynamo_state.fresh()
    r = _replay(torch.compile(_mlp(), backend="aot_eager"), w, len(sizes))
    assert [(c["request"], c["reason"]) for c in r.compiles] == expected
    assert len(expected) >= 2 and r.errors == [] and r.fallback_requests == []
    assert all(x is not None and x > 0 for x in r.latencies_s)


def test_the_eager_fallback_after_recompile_limit_is_named_request_by_request():
    """recompile_limit 3 with static shapes: sizes 1, 2, 3 compile; 4 hits the limit (PyTorch's
    metrics entry); every later request of a size never compiled runs eagerly."""
    sizes = [1, 2, 3, 4, 5, 2, 6, 1, 4]
    w = tcdoctor.Workload(_mlp(), (torch.randn(4, 16),), traffic=_traffic(sizes))
    dynamo_state.fresh()
    kwargs = {"backend": "aot_eager", "dynamic": False, "recompile_limit": 3}
    r = _replay(torch.compile(_mlp(), **kwargs), w, len(sizes), compile_kwargs=kwargs)
    assert r.recompile_limit == 3 == recompile_limit(kwargs)
    assert [c["kind"] for c in r.compiles] == ["compile", "recompile", "recompile", "limit"]
    assert r.limit_hit["request"] == 3 and "recompile limit" in r.limit_hit["message"]
    assert r.fallback_requests == [i for i, b in enumerate(sizes) if b not in (1, 2, 3)]
    with torch._dynamo.config.patch(recompile_limit=5):  # set in build(): the config is read
        assert recompile_limit({}) == 5


def test_a_request_the_model_rejects_is_one_line_and_the_rest_is_served():
    sizes = [4, 2, 4]
    reqs = [(torch.randn(b, 16),) for b in sizes]
    reqs.insert(2, (torch.randn(2, 3, 7),))  # wrong rank and width, mid-traffic
    w = tcdoctor.Workload(_mlp(), (torch.randn(4, 16),), traffic=Traffic(reqs))
    r = _replay(_mlp(), w, 4)
    assert [x is None for x in r.latencies_s] == [False, False, True, False]
    (err,) = r.errors
    assert err["request"] == 2 and err["shapes"] == "(Tensor[2,3,7] float32)"
    lines = section.request_errors(section.ReplayPart.from_dict({"eager": r.to_dict()}))
    assert lines == [f"serving: request 2 (Tensor[2,3,7] float32) failed (eager): {err['message']}"]
    assert "\n" not in lines[0] and "mat1 and mat2" in lines[0]


def test_a_traffic_generator_that_raises_stops_the_replay_at_its_request():
    def gen():
        for i in range(10):
            if i == 4:
                raise ValueError("the queue went away")
            yield (torch.randn(2, 16),)

    w = tcdoctor.Workload(_mlp(), (torch.randn(4, 16),), traffic=Traffic(gen))
    r = _replay(_mlp(), w, 10)
    assert len(r.served) == 4 and "request 4" in r.stopped
    (line,) = section.request_errors(section.ReplayPart.from_dict({"eager": r.to_dict()}))
    assert line == (
        "serving: the traffic could not produce request 4: ValueError: the queue went away"
    )
    with pytest.raises(TrafficError):
        list(requests(w.traffic, w, 10))


# -- the warm-up, a strategy and the threads, in-process ----------------------------------------


def _context(sizes, compile_kwargs=None):
    w = tcdoctor.Workload(
        _mlp(), (torch.randn(4, 16),), traffic=_traffic(sizes), compile_kwargs=compile_kwargs or {}
    )
    sink = []
    ctx = ServeContext(
        workload=w, fresh=Pristine(w).fresh, traffic=w.traffic, n=len(sizes),
        options=Options(backend="aot_eager", threads=1), device=torch.device("cpu"),
        deadline=time.monotonic() + 120, sink=sink.append, target=f"{TARGET}:build",
    )  # fmt: skip
    return ctx, sink


def _results(sink):
    return {ev.key: ev.data for ev in map(Event.of, sink) if ev.event == "result"}


def test_the_warmup_proof_passes_on_the_derived_set_and_fails_on_a_planted_incomplete_one():
    sizes = [4, 4, 2, 4, 8, 1, 8, 3]
    ctx, sink = _context(sizes)
    dynamo_state.fresh()
    cold = ctx.replay(ctx.compile(ctx.fresh().model), "cold")
    derived = warmup.derive(cold, ctx)
    assert derived["requests"] == sorted({c["request"] for c in cold.made})
    assert derived["requests"][0] == 0 and len(derived["requests"]) >= 2

    part_proof(ctx, derived["requests"], {"started_unix": None})
    proof = _results(sink)["proof"]
    assert proof["proven"] is True and proof["compiled_requests"] == []

    planted = derived["requests"][:-1]  # the last compile's request left out
    sink.clear()
    part_proof(ctx, planted, {"started_unix": None})
    proof = _results(sink)["proof"]
    assert proof["proven"] is False
    named = proof["compiled_requests"][0]
    assert named["request"] == derived["requests"][-1]
    assert named["shapes"] == cold.shapes[named["request"]] and named["reason"]
    assert torch.compiler.is_compiling() is False


def test_the_warmup_script_compiles_as_the_analysis_did_and_names_the_requests():
    ctx, _ = _context([4, 2])
    text = warmup.script(ctx, [0, 1])
    compile(text, "tcdoctor-warmup.py", "exec")
    assert "backend='aot_eager'" in text and "WARMUP = [0, 1]" in text
    assert repr(TARGET) in text


def test_static_shapes_reach_the_limit_and_the_strategy_names_the_fallback():
    sizes = [1, 2, 3, 4, 5, 2, 6]
    ctx, _ = _context(sizes, {"recompile_limit": 3})
    row = part_strategy(ctx, "static")
    assert row["compiles"] == 3 and row["limit_hit"]["request"] == 3
    assert row["fallback_requests"] == [3, 4, 6]
    assert all(x is not None for x in row["latencies_s"])
    assert row["compile_kwargs"]["dynamic"] == "False"


def test_padding_keeps_the_bucketed_dim_static_and_marks_the_rest_dynamic():
    """Padded to the sequence buckets, the batch size (no buckets) is marked dynamic: one graph
    per bucket, not one per batch size, and no request on the eager fallback."""

    def make(batch, seq):
        return (torch.randn(batch, seq, 16),)

    traffic = Traffic.shapes(make, n=24, seed=1, batch=range(2, 9), seq=range(3, 17),
                             buckets={"seq": [8, 16]})  # fmt: skip
    w = tcdoctor.Workload(_mlp(), (torch.randn(4, 8, 16),), traffic=traffic)
    ctx = ServeContext(
        workload=w, fresh=Pristine(w).fresh, traffic=traffic, n=24,
        options=Options(backend="aot_eager", threads=1), device=torch.device("cpu"),
        deadline=time.monotonic() + 120, sink=[].append, target=f"{TARGET}:build",
    )  # fmt: skip
    assert varying_dims(ctx) == [(0, 0), (0, 1)]
    assert varying_dims(ctx, padded=True) == [(0, 0)]
    row = part_strategy(ctx, "padded")
    assert len(row["marked"]) == 1 and row["marked"][0].endswith("dim 0"), row["marked"]
    assert row["fallback_requests"] == [] and 1 <= row["compiles"] <= 2
    assert row["compile_kwargs"]["dynamic"] == "False"


def test_four_threads_serve_the_traffic_with_outputs_equal_to_eager():
    ctx, _ = _context([4, 2, 4, 8, 2, 4, 1, 8] * 2)
    dynamo_state.fresh()
    eager, compiled = ctx.fresh().model, ctx.compile(ctx.fresh().model)
    for r in ctx.requests():  # warm: the threads compile nothing
        ctx.call(compiled, r.args)
    row = serve_threads.run_threads(ctx, eager, compiled, 4)
    assert row["ok"] is True and row["error"] is None and row["served"] == 16
    assert row["outputs_equal"] is True and row["same_as_one_thread"] is True
    assert row["rps_one"] > 0 and row["rps_n"] > 0 and row["compiles"] == 0


# -- the parent's plan (torch-free) ---------------------------------------------------------------


def _fake_parts(spread=1.0, faster=0.5, fail=None):
    """A `start` that answers each part with made-up latencies: the strategies `faster` times the
    reference; the host part's reference `spread` times the proof's."""
    ref = [0.010 + 0.0001 * (i % 7) for i in range(60)]
    calls = []

    def start(part, seconds, extra):
        calls.append((part, extra.get("strategy"), seconds))
        if part == fail:
            return None, "was killed by SIGSEGV"
        if part == "replay":
            shapes = [f"(Tensor[{1 + i % 3},16] float32)" for i in range(60)]
            side = {"latencies_s": ref, "shapes": shapes, "compiles": [], "errors": []}
            return {"eager": side, "compiled": side, "warmup": {"requests": [0, 1]}}, None
        if part == "proof":
            return {"proof": {"latencies_s": ref, "proven": True}, "warmup_s": 1.0}, None
        if part == "host":
            lat = [x * spread for x in ref]
            return {"compiled_replay": {"latencies_s": lat}, "warmup_s": 2.0, "host": {}}, None
        return {"row": {"name": extra["strategy"], "latencies_s": [x * faster for x in ref]}}, None

    return start, calls


class _Fake(Serving):
    """The serving run with each process answered by `start(process, seconds, handed)`."""

    def __init__(self, start, options, ask, left=600.0):
        super().__init__("t.py:build", options, Questions(), "/nonexistent", 0.0,
                         Progress(enabled=False), ask=Ask.from_dict(ask), parts=serving.PARTS)  # fmt: skip
        self.start, self.left = start, left

    def left_s(self):
        return self.left

    def _start(self, part, process, seconds, handed):
        return self.start(process, seconds, handed)


def _ran(start, options, ask):
    run = _Fake(start, options, ask)
    serving.run_parts(run)
    return run


def test_the_plan_runs_the_parts_in_order_within_their_budgets():
    start, calls = _fake_parts()
    ask = {"requests": 60, "traffic": {"kind": "list"}, "kind": "inference"}
    stage = _ran(start, Options(backend="aot_eager"), ask)
    parts = [(p, s) for p, s, _ in calls]
    assert parts == [("replay", None), ("proof", None), *[("strategy", n) for n in
                     ("static", "dynamic", "marked", "regional")], ("host", None)]  # fmt: skip
    assert calls[0][2] == pytest.approx(600 * 3 / 12)  # the replay's share of what is left
    made = section.build(stage)
    assert made.not_measured["aot"] == aot_part.aot_wanted(Options(backend="aot_eager"))
    assert "bucket" in made.not_measured["padded"]
    assert made.warmup.seconds_cold == 2.0 and made.warmup.seconds_warm == 1.0
    rows = made.strategies
    assert rows[0].name == "automatic" and rows[0].interval is None
    assert {r.interval.decides for r in rows[1:]} == {"faster"}
    Report.from_dict({"serving": made.to_dict()})  # the section as written reads back


def test_a_strategy_is_faster_only_beyond_the_spread_between_processes():
    start, _ = _fake_parts(spread=1.6, faster=0.8)  # two processes of one config differ by 60%
    stage = _ran(start, Options(backend="aot_eager"), {"requests": 60})
    rows = section.build(stage).strategies[1:]
    assert {r.interval.decides for r in rows} == {"inside the noise"}
    assert rows[0].interval.process_spread == pytest.approx(math.log(1.6))


def test_a_failed_part_is_one_error_line_and_the_rest_still_runs():
    start, calls = _fake_parts(fail="proof")
    stage = _ran(start, Options(backend="aot_eager", dynamic=False), {"requests": 60})
    assert stage.failures == [
        {"phase": "serving:proof", "message": "serving (proof): was killed by SIGSEGV"}
    ]
    assert [p for p, _, _ in calls] == ["replay", "proof", "host"]
    assert stage.not_measured["strategies"] == "--no-dynamic"


def test_a_replay_cut_short_proves_nothing_and_says_why():
    def start(part, seconds, extra):  # the compiled side was killed: only eager came back
        return (
            ({"eager": {"latencies_s": [0.01] * 5}}, "timed out")
            if part == "replay"
            else ({"row": {"name": extra.get("strategy"), "latencies_s": [0.01] * 5}}, None)
        )

    stage = _ran(start, Options(backend="aot_eager", dynamic=False), {"requests": 5})
    why = "the replay's compiled side did not finish: no warm-up was derived"
    assert stage.not_measured["proof"] == stage.not_measured["host"] == why
    assert section.build(stage).replay.eager.latencies_s == [0.01] * 5


def test_the_aot_part_builds_then_serves_in_a_fresh_process(tmp_path):
    """The wiring of probes/aot.py (the aot helper's): the build process's `unserved` dict stands
    when the serving process fails, with its failure as the why."""
    seen = []

    def start(part, seconds, extra):
        seen.append((part, extra))
        if part == "aot":
            built = {"package_path": "/x/aot-model.pt2", "exported": True}
            return {"built": built, "unserved": {"exported": True, "not_measured": {}}}, None
        return None, "was killed by SIGKILL (out of memory, or killed from outside)"

    stage = _Fake(start, Options(), {"requests": 5})
    stage.workdir = str(tmp_path)
    aot_part.PART.run(stage)  # its `when` passed: the parent's two processes
    assert [p for p, _ in seen] == ["aot", "aot_serve"]
    assert seen[0][1]["aot"]["out_dir"] == str(tmp_path / "serve-aot")
    assert seen[1][1]["aot"]["built"]["package_path"] == "/x/aot-model.pt2"
    aot = stage.results["aot"]
    assert aot["exported"] is True and "SIGKILL" in aot["not_measured"]["serve"]
    assert stage.failures[0]["phase"] == "serving:aot_serve"


def test_no_traffic_no_serving_section_and_no_process_and_the_stage_says_why():
    from tcdoctor.run import launcher

    assert section.asked(Options(), {"kind": "inference", "name": "x"}) is None
    (stage,) = [s for s in launcher.STAGES if s.name == "serving"]
    run = launcher.Analysis("t.py:build", Options(), Questions(), "/nonexistent",
                            time.monotonic() + 60, Progress(enabled=False), ran=["main"])  # fmt: skip
    env = Event(event="done", phase="environment", data={"workload": {"kind": "inference"}})
    run.events.append(env)
    assert stage.why_not(run) == launcher.NO_TRAFFIC
    env.data["workload"]["traffic"] = {"kind": "list", "default_n": 10}
    assert stage.why_not(run) is None
    assert "serving" not in Report().to_dict()
    assert section.asked(Options(traffic=7), None).requests == 7


# -- one analysis, end to end -------------------------------------------------------------------


CHEAP_SERVE = ("--backend", "aot_eager", "--threads", "1", "--no-warm", "--processes", "1",
               "--no-fixes", "--no-dynamic", "--budget", "0.3", "--no-submodules")  # fmt: skip


def test_a_planted_bad_request_is_one_line_and_the_rest_of_the_report_is_written(tmp_path):
    rc, out, err = run_cli(
        tmp_path, "analyze", f"{TARGET}:build_bad", *CHEAP_SERVE, "--json", "r.json", "--html", "",
        timeout=600,
    )  # fmt: skip
    assert rc == EXIT_INCOMPLETE, out[-2000:] + err[-2000:]
    line = "serving: request 5 (Tensor[2,3,7] float32) failed (eager): RuntimeError: mat1 and mat2"
    assert line in out + err
    report = Report.load(str(tmp_path / "r.json"))  # schema-valid
    s = report.serving
    assert s.traffic.requests == 10 and s.traffic.source == "list"
    assert len(s.replay.eager.latencies_s) == 10 and s.replay.eager.latencies_s[5] is None
    assert s.replay.compiled.p50_s is not None and s.replay.compiled.compiles
    assert 5 not in s.warmup.requests and s.warmup.proof.proven is True
    assert s.restart.first_request_s > s.restart.import_s > 0
    assert s.host.compiled.max_rps > 0 and s.host.eager.max_rps > 0
    assert s.threads.n == 4 and s.threads.ok is True and s.threads.outputs_equal is True
    assert s.threads.requests == 9  # the requests eager serves
    assert s.strategies == [] and s.not_measured["strategies"] == "--no-dynamic"
    # the start-up script, written beside the JSON report and named in it, runs as it is
    script = tmp_path / "tcdoctor-warmup.py"
    assert script.read_text() == s.warmup.script and s.warmup.script_path == str(script)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((tmp_path / "r.json").read_text())["serving"]["replay"]["compiled"]["p99_s"]


@pytest.mark.inductor
def test_a_restart_hits_the_fx_graph_cache_the_replay_filled(tmp_path):
    """The one Inductor test: an FX graph cache hit needs Inductor (aot_eager writes no cache:
    its counters stay at 0). The replay process fills an empty folder; the proof process starts
    from a copy of it and its warm-up compiles nothing in Inductor again."""
    from tcdoctor.run.serving import proof, replay
    from tcdoctor.run.serving.proof import COPY_OF_REPLAY

    opts = Options(backend="inductor", threads=1)
    start = Serving(f"{TARGET}:build", opts, Questions(), str(tmp_path), time.monotonic() + 900,
                    Progress(enabled=False), ask=Ask(requests=3), parts=serving.PARTS)  # fmt: skip
    replay_data, why = start._start(replay.PART, "replay", 400, {})
    assert why is None, why
    warm = replay_data["warmup"]["requests"]
    assert warm == [0, 2]  # batch 4, then batch 2 (automatic dynamic shapes)
    proven, why = start._start(proof.PART, "proof", 400, {"warmup": warm})
    assert why is None, why
    assert proven["cache_start"] == COPY_OF_REPLAY and proven["proof"]["proven"] is True
    restart = proven["restart"]
    fx = restart["caches"]["fx_graph"]
    assert fx["hit"] >= len(warm) and fx["miss"] == 0, restart
    assert restart["compiled_again"]["inductor_compiled"] == 0
    assert restart["compiled_again"]["traced_frames"] == len(warm)  # Dynamo traces again
    assert restart["first_request_s"] > restart["import_s"] > 0


def test_the_spread_between_processes_is_the_largest_pair_of_the_references_three():
    """The replay's compiled side (once compiled: the requests that compiled left out), the proof's
    replay and the host part's compiled replay: the floor a strategy row is widened by is the
    largest pairwise spread, so two processes that happen to agree never hide a third."""
    import math

    from tcdoctor.run.serving.section import HostPart, ProofPart, ReplayPart, process_spread

    base = [1.0e-3] * 20
    compiled = {"latencies_s": [5.0] + [1.3e-3] * 19, "compiles": [{"request": 0}]}
    replay = ReplayPart.from_dict({"compiled": compiled})
    proof = ProofPart.from_dict({"proof": {"latencies_s": base}})
    host = HostPart.from_dict({"compiled_replay": {"latencies_s": [1.02e-3] * 20}})
    assert process_spread(replay, proof, host) == pytest.approx(math.log(1.3))  # not 1.02, not 5000
    assert process_spread(None, proof, host) == pytest.approx(math.log(1.02))
    assert process_spread(None, proof, None) is None


def test_threads_stop_taking_requests_when_the_parts_time_runs_out():
    """A thread still serving after the part's time goes on to the next request no more: left
    running, it would compile and take CPU in the background while the next part measures."""
    ctx, _ = _context([4, 2, 8, 1] * 10)
    eager, compiled = ctx.fresh().model, ctx.compile(ctx.fresh().model)

    class Slow:  # each call 20 ms; the deadline passes before the threads start
        deadline = time.monotonic() - 1.0
        calls = 0

        def requests(self):
            return ctx.requests()

        def call(self, fn, args):
            Slow.calls += 1
            time.sleep(0.02)
            return ctx.call(fn, args)

        def sync(self):
            ctx.sync()

    row = serve_threads.run_threads(Slow(), eager, compiled, 4)
    time.sleep(1.0)  # 40 requests of 20 ms in 4 threads take 0.2 s: left running, all are served
    threaded = Slow.calls - 2 * row["requests"]  # after eager's and one thread's passes
    assert threaded <= 4 < row["requests"], threaded  # the calls in flight when time ran out
    assert row["served"] <= 4 and row["ok"] is False
