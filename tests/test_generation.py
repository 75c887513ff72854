"""Generation (issue 60): the Generation spec and its one-line refusals, the compiles during
generation against PyTorch's own count (with their request, decode step and cache length), the
tokens compared with eager's (a planted numerics divergence and a planted near-tie), a bad prompt
and a generate that raises mid-request, and the parts as records of the one serving loop. Cheap:
a 1-layer Llama, the `eager` backend, a few tokens, in this process."""

import os
import time

import pytest
import torch
from conftest import ROOT, saved_report

import tcdoctor
from tcdoctor.options import Options
from tcdoctor.probes import dynamo_state
from tcdoctor.probes.traffic_replay import ServeContext
from tcdoctor.report.sections.generation import GenSide, LogitsCompared
from tcdoctor.run.serving import generate as gen_part
from tcdoctor.run.serving import generate_section as gs
from tcdoctor.run.serving import generate_strategies as gen_strategies
from tcdoctor.target.pristine import Pristine

transformers = pytest.importorskip("transformers")

GEN_SAMPLE = os.path.join(ROOT, "samples", "generate.py")
GEN_SAVED = ("--backend", "eager", "--threads", "1", "--no-warm", "--processes", "1",
             "--no-fixes", "--no-dynamic", "--budget", "0.3", "--no-submodules")  # fmt: skip


def _config():
    return transformers.LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
    )  # fmt: skip


class Planted(transformers.LlamaForCausalLM):
    """A Llama whose logits, while Dynamo traces it, are bumped: `mode` "numerics" adds 1.0 to
    token 7 (a wide margin: the compiled tokens are wrong); "tie" makes tokens 5 and 6 the top two,
    5 ahead by 1e-5 in eager, 6 ahead by 1e-5 compiled (within the numerics rule: a tie); "drift"
    adds 1e-3 to every logit compiled (past the rule's 1e-4 * (1 + |logit|), no argmax moved)."""

    mode = "numerics"

    def forward(self, *args, **kwargs):
        out = super().forward(*args, **kwargs)
        logits = out.logits.clone()
        if self.mode == "tie":
            top = logits.amax(-1) + 1.0
            logits[..., 5] = top + 1e-5
            logits[..., 6] = top + (2e-5 if torch.compiler.is_compiling() else 0.0)
        elif self.mode == "drift" and torch.compiler.is_compiling():
            logits = logits + 1e-3
        elif torch.compiler.is_compiling():
            logits[..., 7] += 1.0 + logits.amax(-1) - logits[..., 7]
        out.logits = logits
        return out


def _model(cls=None, mode=None):
    torch.manual_seed(0)
    model = (cls or transformers.LlamaForCausalLM)(_config()).eval()
    if mode:
        model.mode = mode
    return model


def _prompts(lengths=(5, 9, 7)):
    g = torch.Generator().manual_seed(0)
    return [torch.randint(3, 64, (n,), generator=g) for n in lengths]


def _serve(w, side, n=None, files=None):
    sink = []
    ctx = ServeContext(
        workload=w, fresh=Pristine(w).fresh, traffic=w.traffic, n=n or len(w.traffic.source),
        options=Options(backend="eager", threads=1), device=torch.device("cpu"),
        deadline=time.monotonic() + 120, sink=sink.append, files=files,
    )  # fmt: skip
    gen_part.serve_generation(ctx, side)
    return {ev["key"]: ev["data"] for ev in sink if ev.get("event") == "result"}


def test_the_spec_takes_a_hf_model_and_refuses_bad_ones_in_one_line():
    w = tcdoctor.Generation(_model(), prompts=[[5, 6, 7], [8, 9]], max_new_tokens=3)
    assert w.inputs[0].shape == (1, 3) and w.inputs[0].dtype == torch.long
    assert w.traffic.info()["default_n"] == 2
    kw = w.call_generate_kwargs()
    assert kw["do_sample"] is False and kw["min_new_tokens"] == kw["max_new_tokens"] == 3
    assert w.generation_info()["greedy"] is True
    with pytest.raises(TypeError, match="needs a model with .generate"):
        tcdoctor.Generation(torch.nn.Linear(2, 2), prompts=[[1]])
    with pytest.raises(TypeError, match="max_new_tokens"):
        tcdoctor.Generation(_model(), prompts=[[1]], max_new_tokens=0)
    with pytest.raises(TypeError, match="needs prompts"):
        tcdoctor.Generation(_model())


def test_compiles_during_generation_equal_pytorchs_with_their_step_and_cache_length(tmp_path):
    w = tcdoctor.Generation(_model(), prompts=_prompts((5, 9)), max_new_tokens=3)
    eager = _serve(w, "eager", files=str(tmp_path))["side"]
    # PyTorch keeps its metrics in a bounded deque: once full (a long xdist worker), its length
    # stops growing, so the entries are told by when they began, not by a length difference
    t0_us = time.time_ns() // 1000
    got = _serve(w, "compiled", files=str(tmp_path))
    recorded = sum(1 for m in dynamo_state.compilation_metrics() if (m.start_time_us or 0) >= t0_us)
    side = got["side"]
    # every entry PyTorch recorded in the cold and steady replays is one of the cold side's events
    # (the steady replay compiles nothing: same prompts, same compiled forward)
    assert len(side["compiles"]) == recorded >= 2
    assert got["steady"]["compiles"] == []
    first = side["compiles"][0]
    assert (first["request"], first["step"], first["cache_length"], first["kind"]) == (
        0, 0, 5, "compile"
    )  # fmt: skip
    later = [c for c in side["compiles"] if c["kind"] == "recompile"]
    assert all(
        c["reason"] and c["cache_length"] == 5 + c["step"] for c in later if c["request"] == 0
    )
    for times in side["token_times_s"]:
        assert len(times) == 3 and times == sorted(times) and times[0] > 0
    assert _tokens_equal(eager, side).equal == 2
    # every step's logits compared and within the numerics rule: the steps are the tokens compared
    logits = got["logits"]
    assert logits["steps"] == sum(len(t) for t in side["tokens"]) == 6 and logits["requests"] == 2
    assert logits["failed_steps"] == 0 and logits["divergences"] == []
    assert 0 <= logits["max_abs_diff"] <= logits["tol"] == 1e-4
    assert (tmp_path / "generate_eager.logits.pt").exists()


def test_logits_that_drift_without_flipping_a_token_fail_while_the_tokens_pass(tmp_path):
    w = tcdoctor.Generation(_model(Planted, "drift"), prompts=_prompts((6, 4)), max_new_tokens=3)
    eager = _serve(w, "eager", files=str(tmp_path))["side"]
    got = _serve(w, "compiled", files=str(tmp_path))
    assert _tokens_equal(eager, got["side"]).equal == 2  # the tokens say nothing
    logits = got["logits"]
    assert logits["steps"] == logits["failed_steps"] == 6 and logits["divergences"] == []
    assert (logits["first_fail_request"], logits["first_fail_step"]) == (0, 0)
    assert logits["max_abs_diff"] == pytest.approx(1e-3, rel=0.01)


@pytest.mark.parametrize("mode, call", [("numerics", gs.NUMERICS), ("tie", gs.TIE)])
def test_a_planted_divergence_is_named_with_its_step_and_margin(mode, call, tmp_path):
    w = tcdoctor.Generation(_model(Planted, mode), prompts=_prompts((6,)), max_new_tokens=2)
    eager = _serve(w, "eager", files=str(tmp_path))["side"]
    got = _serve(w, "compiled", files=str(tmp_path))
    compiled, logits = got["side"], got["logits"]
    found = _tokens_equal(eager, compiled, logits)
    assert found.compared == 1 and found.equal == 0
    first = found.divergences[0]
    assert (first.request, first.step, first.call) == (0, 0, call)
    # the logits are compared up to and including the divergence (step 0), not after it
    assert logits["steps"] == 1 and [(d["request"], d["step"]) for d in logits["divergences"]] == [
        (0, 0)
    ]
    assert first.logits_within is (call == gs.TIE) is (logits["failed_steps"] == 0)
    _renders_the_logits_row(eager, compiled, found, logits, tie=call == gs.TIE)
    if call == gs.TIE:
        assert first.margin_eager == pytest.approx(1e-5, rel=0.5)
        assert (first.eager_token, first.compiled_token) == (5, 6)
    else:
        assert first.margin_eager > first.tie_bound and first.compiled_token == 7


def _renders_the_logits_row(eager, compiled, tokens, logits, tie):
    """The section with its logits, valid under the schema, in every format: a tie's step is
    precision, a wide margin's the compiled decoder computing something different."""
    import jsonschema

    from tcdoctor.render import generation as rg
    from tcdoctor.render.markdown import MarkdownRenderer
    from tcdoctor.render.terminal import TerminalRenderer
    from tcdoctor.report.model import Report, report_schema

    gen = {"prompts": 1, "max_new_tokens": 2, "eager": eager, "compiled": compiled,
           "tokens": tokens.to_dict(), "logits": logits}  # fmt: skip
    report = Report.from_dict({"serving": {"generation": gen}})
    written = report.to_dict()
    jsonschema.validate(written, report_schema())
    assert written["serving"]["generation"]["logits"]["passed"] is tie
    text = rg.logits_text(report.serving.generation)
    want = (
        rg.PRECISION
        if tie
        else "the compiled decoder computes something different at request 0 step 0"
    )
    assert want in text and text.startswith("pass" if tie else "FAIL")
    for out in (TerminalRenderer().render(report), MarkdownRenderer().render(report)):
        assert "logits equal to eager's" in out and want in out


class Raises(transformers.LlamaForCausalLM):
    """Raises in the third decode step of a prompt of length 9."""

    decodes = None

    def forward(self, *args, **kwargs):
        length = kwargs.get("input_ids", args[0] if args else None).shape[1]
        if length > 1:
            self.decodes = 0 if length == 9 else None
        elif self.decodes is not None:
            self.decodes += 1
            if self.decodes == 2:
                raise RuntimeError("planted failure")
        return super().forward(*args, **kwargs)


def test_a_float_prompt_and_a_generate_that_raises_are_one_line_each_and_the_rest_is_served():
    prompts = [*_prompts((5, 9)), torch.rand(6), torch.ones(62, dtype=torch.long)]
    w = tcdoctor.Generation(_model(Raises), prompts=prompts, max_new_tokens=4)
    side = _serve(w, "eager")["side"]
    lines = gen_part.request_errors(gen_part.Generated.from_dict({"eager": {"side": side}}))
    assert lines == [
        "generation: request 1 (Tensor[9] int64) failed at step 2 (eager): RuntimeError: planted failure",
        "generation: request 2 (Tensor[6] float32) failed (eager): token ids must be an integer "
        "tensor, got float32",
        "generation: request 3 (Tensor[62] int64) failed (eager): 62 prompt + 4 new tokens exceed "
        "the model's max_position_embeddings 64",
    ]
    assert side["tokens"][0] is not None and len(side["tokens"][0]) == 4
    assert side["tokens"][1] is None and side["tokens"][2] is None


def test_prefill_eager_compiles_the_decode_step_once_and_never_a_prompt():
    w = tcdoctor.Generation(_model(), prompts=_prompts((5, 9)), max_new_tokens=3)
    sink = []
    ctx = ServeContext(
        workload=w, fresh=Pristine(w).fresh, traffic=w.traffic, n=2,
        options=Options(backend="eager", threads=1), device=torch.device("cpu"),
        deadline=time.monotonic() + 120, sink=sink.append,
    )  # fmt: skip
    row = gen_strategies.part_strategy(ctx, "prefill_eager")
    assert row["cache_length"] == 9 + 3
    made = [c for c in row["cold"]["compiles"] if c["kind"] in ("compile", "recompile")]
    assert row["compiles"] == len(made) >= 1 and all(c["step"] >= 1 for c in made)
    assert row["steady"]["compiles"] == []  # the decode's shapes never change
    # 2 x layers x kv heads x head dim x length x 4 bytes
    assert row["cache_bytes"] == 2 * 1 * 1 * 16 * 12 * 4


def _fake(side_total, strategies):
    """A `start` answering the generation processes with made-up request times."""
    calls = []

    def start(process, seconds, handed):
        calls.append((process, handed.get("strategy")))
        side = {"total_s": side_total, "tokens": [[1, 2]] * len(side_total), "errors": [],
                "margins": [[1.0, 1.0]] * len(side_total), "device": "cpu"}  # fmt: skip
        if process == "generate_eager":
            return {"side": side}, None
        if process == "generate_compiled":
            compiles = [{"request": 0, "step": 0, "kind": "compile"}]
            return {
                "side": {**side, "compiles": compiles},
                "steady": side,
                "paired_eager": side,
            }, None
        if process == "generate_proof":
            return {"proof": {"requests": handed["warmup"], "proven": True}}, None
        name = handed["strategy"].removeprefix("generate_")
        row = {"name": name, "steady": {"total_s": strategies[name]},
               "paired_eager": {"total_s": side_total}}  # fmt: skip
        return {"row": row}, None

    return start, calls


def test_the_generation_parts_are_records_of_the_serving_loop_judged_by_the_paired_rule():
    from tcdoctor.checks.questions import Questions
    from tcdoctor.run import serving
    from tcdoctor.run.progress import Progress
    from tcdoctor.run.serving import section
    from tcdoctor.run.serving.part import Ask, Serving

    ref = [0.10 + 0.001 * (i % 5) for i in range(20)]
    start, calls = _fake(ref, {"dynamic": [x * 1.02 for x in ref], "static": [x * 0.5 for x in ref],
                               "prefill_eager": [x * 0.99 for x in ref]})  # fmt: skip

    class Fake(Serving):
        def left_s(self):
            return 600.0

        def _start(self, part, process, seconds, handed):
            return start(process, seconds, handed)

    ask = {"requests": 20, "traffic": {"kind": "list"}, "kind": "inference",
           "generation": {"max_new_tokens": 2}}  # fmt: skip
    run = Fake("t.py:build", Options(backend="eager"), Questions(), "/nonexistent", 0.0,
               Progress(enabled=False), ask=Ask.from_dict(ask), parts=serving.PARTS)  # fmt: skip
    serving.run_parts(run)
    assert calls == [("generate_eager", None), ("generate_compiled", None), ("generate_proof", None),
                     *[("generate_strategy", f"generate_{n}") for n in
                       ("dynamic", "static", "prefill_eager")]]  # fmt: skip
    made = section.build(run)
    assert made.replay is None and made.strategies == []  # the forward parts did not run
    assert not any("Generation" in v for v in made.not_measured.values())
    gen = made.generation
    assert gen.not_measured["generate_reduce_overhead"] == gen_strategies.NO_CUDA
    rows = {r.name: r.interval for r in gen.strategies}
    assert rows["dynamic"] is None  # the reference again: the spread's source
    assert rows["static"].decides == "faster" and rows["prefill_eager"].decides != "faster"
    assert gen.tokens.equal == 20 and gen.proof == {"requests": [0], "proven": True}


def test_the_section_reads_as_the_report_record_with_its_figures_derived():
    from tcdoctor.report.model import Report

    side = {"token_times_s": [[0.5, 0.6, 0.8], None, [0.2, 0.25]], "total_s": [0.8, None, 0.25],
            "compiles": [{"request": 0, "step": 1, "cache_length": 6, "kind": "recompile"}]}  # fmt: skip
    report = Report.from_dict({"serving": {"generation": {"eager": side, "compiled": side}}})
    gen = report.serving.generation
    assert gen.compiled.ttft_p50_s == 0.2 and gen.compiled.ttft_p99_s == 0.5
    assert gen.compiled.itl_p50_s == pytest.approx(0.1) and gen.compiled.new_tokens == 5
    assert gen.compiled.tokens_per_s == pytest.approx(5 / 1.05) and gen.traffic_compiles == 1
    written = report.to_dict()["serving"]["generation"]["compiled"]
    assert written["itl_p99_s"] == pytest.approx(0.2) and written["compile_count"] == 1
    assert "generation" not in Report.from_dict({"serving": {}}).to_dict()["serving"]


# -- the saved report (tests/data/make_reports.py: samples/generate.py with GEN_SAVED) ------------


def test_the_saved_section_renders_in_every_format_and_its_limits_are_judged(cli):
    from tcdoctor.checks import generation as checks
    from tcdoctor.render.html import HtmlRenderer
    from tcdoctor.render.markdown import MarkdownRenderer
    from tcdoctor.render.terminal import TerminalRenderer
    from tcdoctor.report.model import Report

    report = Report.load(str(saved_report("generation")))
    g = report.serving.generation
    made = [c for c in g.compiled.compiles if c.kind in ("compile", "recompile")]
    assert g.compiled.compile_count == len(made) >= 1 and made[0].step == 0
    for text in (TerminalRenderer().render(report), MarkdownRenderer().render(report),
                 HtmlRenderer().render(report)):  # fmt: skip
        assert "Compiles during generation" in text and "time to first token" in text
        assert "Cache strategies on the prompts" in text
    ttft = g.compiled.ttft_p99_s * 1e3
    assert checks.ttft(report, ttft * 2).passed and not checks.ttft(report, ttft / 2).passed
    itl = g.compiled.itl_p99_s * 1e3
    assert checks.itl_p99(report, itl * 2).passed and not checks.itl_p99(report, itl / 2).passed
    rate = g.compiled.tokens_per_s
    assert checks.tokens_per_s(report, rate / 2).passed
    assert not checks.tokens_per_s(report, rate * 2).passed
    rc, out, err = cli("check", "--report", str(saved_report("generation")),
                       "--max-ttft-ms", f"{ttft * 2}", "--require-warmup-proof")  # fmt: skip
    assert rc == 0, out + err
    assert "PASS  warm-up proof: the derived warm-up" in out
    rc, out, _ = cli("check", "--report", str(saved_report("serving")), "--max-ttft-ms", "1")
    assert rc == 1 and checks.NO_GENERATION in out


def _tokens_equal(eager, compiled, logits=None):
    """gs.tokens_equal on the processes' wire dicts, read as the section's records."""
    return gs.tokens_equal(
        GenSide.from_dict(eager),
        GenSide.from_dict(compiled),
        logits and LogitsCompared.from_dict(logits),
    )


def _served_compiled(w, forward_wrapper=None):
    """The prompts served once through generate with the forward compiled (the eager backend), in
    this process, as the compiled side's cold replay serves them; `forward_wrapper(compiled)` may
    wrap the compiled forward. The GenResult."""
    from tcdoctor.probes import generate as pg

    ctx = ServeContext(
        workload=w, fresh=Pristine(w).fresh, traffic=w.traffic, n=len(w.traffic.source),
        options=Options(backend="eager", threads=1), device=torch.device("cpu"),
        deadline=time.monotonic() + 120, sink=[].append,
    )  # fmt: skip
    model = ctx.fresh().model
    dynamo_state.fresh()
    kw = gen_part.compile_forward(ctx, model)
    if forward_wrapper is not None:
        model.forward = forward_wrapper(model.forward)
    gen_kw = gen_part.generate_kwargs(ctx, "compiled")
    return pg.replay_generate(
        model, ctx.requests(), gen_kw, ctx.sync, deadline=time.monotonic() + 120, compile_kwargs=kw
    )


def test_each_compile_is_given_the_step_whose_forward_compiled_it_read_after_the_request():
    """The step a compile is attributed to (off the clock, by the wall clock PyTorch stamps its
    entry's end with) is the forward call that made it: call 0 the prefill, call k decode step k,
    read by a mark around each call of the compiled forward; and no token's interval holds a read
    of PyTorch's metrics buffer (one read when the request's clock is made, one after it ends,
    whatever the number of tokens)."""
    w = tcdoctor.Generation(_model(), prompts=_prompts((5, 9)), max_new_tokens=4)
    made: list[tuple[int, int, str]] = []  # (request, forward call, compile id)
    calls = {"request": -1, "call": 0}

    def wrap(compiled):
        def forward(*args, **kwargs):
            ids = kwargs.get("input_ids", args[0] if args else None)
            if ids.shape[-1] > 1:  # a request's prefill: its whole prompt
                calls["request"], calls["call"] = calls["request"] + 1, 0
            mark = dynamo_state.Mark()
            out = compiled(*args, **kwargs)
            made.extend((calls["request"], calls["call"], str(m.compile_id)) for m in mark.take())
            calls["call"] += 1
            return out

        return forward

    res = _served_compiled(w, wrap)
    got = sorted((c["request"], c["step"], c["compile_id"]) for c in res.compiles)
    assert len(made) >= 2 and got == sorted(made)
    assert any(step > 0 for _, step, _ in got)  # a decode step's recompile, not only prefills

    reads = []
    real = dynamo_state._recorded

    def counted():
        reads.append(1)
        return real()

    for new in (2, 6):  # the reads per request do not grow with the tokens
        reads.clear()
        w = tcdoctor.Generation(_model(), prompts=_prompts((5,)), max_new_tokens=new)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(dynamo_state, "_recorded", counted)
            res = _served_compiled(w)
        assert len(res.token_times_s[0]) == new
        assert len(reads) == 2  # the clock's mark when made and its one take after the request
