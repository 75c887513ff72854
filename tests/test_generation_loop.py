"""The user's own generation loop as a Generation target (issue 60, gpt-fast style): the spec and
its one-line refusals, the compiles during generation against the same loop compiled by hand, the
tokens equal to eager's and to a by-hand greedy loop, a planted numerics divergence named, a decode
that raises or returns the wrong logits one line each with the rest served, and a fresh cache per
request. Cheap: samples/generate_loop.py's tiny decoder, the `eager` backend, a few tokens, in
this process."""

import os
import sys
import time

import pytest
import torch
from conftest import ROOT

import tcdoctor
from tcdoctor.options import Options
from tcdoctor.probes import dynamo_state
from tcdoctor.probes.traffic_replay import ServeContext
from tcdoctor.report.sections.generation import GenSide, LogitsCompared
from tcdoctor.run.serving import generate as gen_part
from tcdoctor.run.serving import generate_section as gs
from tcdoctor.target.generation_loop import LoopStep
from tcdoctor.target.pristine import Pristine
from tcdoctor.thresholds import RULES

sys.path.insert(0, os.path.join(ROOT, "samples"))
import generate_loop as sample  # noqa: E402

LENGTHS = (5, 9, 7)
N = 3


def _gen(decode=sample.decode_one_token, prefill=sample.prefill, cache=sample.new_cache, **kw):
    kw.setdefault("prompts", sample.prompts(LENGTHS))
    return tcdoctor.Generation(
        sample.tiny_decoder(), prefill=prefill, decode=decode, cache=cache, max_new_tokens=N, **kw
    )


def _serve(w, side, files=None):
    sink = []
    ctx = ServeContext(
        workload=w, fresh=Pristine(w).fresh, traffic=w.traffic, n=len(w.traffic.source),
        options=Options(backend="eager", threads=1), device=torch.device("cpu"),
        deadline=time.monotonic() + 120, sink=sink.append, files=files,
    )  # fmt: skip
    gen_part.serve_generation(ctx, side)
    return {ev["key"]: ev["data"] for ev in sink if ev.get("event") == "result"}


def test_the_loop_spec_is_one_decode_step_and_refuses_bad_ones_in_one_line():
    w = _gen()
    assert w.loop and isinstance(w.model, LoopStep) and w.name == "decode step (decode_one_token)"
    token, pos, cache = w.inputs
    assert token.shape == (1, 1) and pos.tolist() == [LENGTHS[0]]
    assert cache[:, :, :, : LENGTHS[0]].abs().sum() > 0 == cache[:, :, :, LENGTHS[0] :].abs().sum()
    assert w.call_generate_kwargs() == {"max_new_tokens": N}
    assert w.generation_info()["loop"] is True
    with pytest.raises(
        TypeError, match="needs prefill= and decode= functions; decode= is NoneType"
    ):
        tcdoctor.Generation(prefill=sample.prefill, prompts=[[1, 2]])
    with pytest.raises(TypeError, match="generate_kwargs=...\\) is for a model's generate"):
        _gen(generate_kwargs={"cache_implementation": "static"})
    with pytest.raises(TypeError, match="cache=...\\) is a function of the model"):
        _gen(cache=torch.zeros(2))


def _by_hand(decode, prompts):
    """The loop as a user writes it: a fresh cache, prefill, then greedy decode steps."""
    model, out = sample.tiny_decoder(), []
    with torch.no_grad():
        for ids in prompts:
            cache, n = sample.new_cache(model), ids.shape[-1]
            logits = sample.prefill(model, ids[None], torch.arange(n), cache)
            tokens = [int(logits[0, -1].argmax())]
            for k in range(1, N):
                token = torch.tensor([[tokens[-1]]])
                tokens.append(
                    int(decode(model, token, torch.tensor([n + k - 1]), cache)[0, -1].argmax())
                )
            out.append(tokens)
    return out


def test_compiles_equal_the_same_loop_compiled_by_hand_and_tokens_equal_eagers(tmp_path):
    w = _gen()
    eager = _serve(w, "eager", str(tmp_path))["side"]
    t0_us = time.time_ns() // 1000
    got = _serve(w, "compiled", str(tmp_path))
    recorded = sum(1 for m in dynamo_state.compilation_metrics() if (m.start_time_us or 0) >= t0_us)
    side = got["side"]
    assert len(side["compiles"]) == recorded and got["steady"]["compiles"] == []
    # the decision's pairs: your decode set back for the eager half (same tokens, nothing compiled)
    paired = got["paired_eager"]
    assert paired["tokens"] == got["steady"]["tokens"] and paired["compiles"] == []
    rows = got["steady"]["rounds"] * len(LENGTHS)  # the rounds (RULES.generation_pairs)
    assert len(paired["start_s"]) == len(got["steady"]["start_s"]) == rows >= RULES.generation_pairs
    # the decode step's shapes never change over the static cache: one compile, at the first decode
    assert [(c["request"], c["step"], c["cache_length"], c["kind"]) for c in side["compiles"]] == [
        (0, 1, LENGTHS[0] + 1, "compile")
    ]
    dynamo_state.fresh()
    t1_us = time.time_ns() // 1000
    hand = _by_hand(
        torch.compile(sample.decode_one_token, backend="eager"), sample.prompts(LENGTHS)
    )
    by_hand = sum(1 for m in dynamo_state.compilation_metrics() if (m.start_time_us or 0) >= t1_us)
    assert by_hand == len(side["compiles"])
    assert (
        eager["tokens"]
        == side["tokens"]
        == hand
        == _by_hand(sample.decode_one_token, sample.prompts(LENGTHS))
    )
    assert _tokens_equal(eager, side).equal == len(LENGTHS)
    for times in side["token_times_s"]:
        assert len(times) == N and times == sorted(times) and times[0] > 0
    assert side["method"] == gen_part.LOOP_METHOD and side["compile_kwargs"]
    # every step's logits (prefill and decodes) within the numerics rule; steps = tokens compared
    logits = got["logits"]
    assert logits["steps"] == len(LENGTHS) * N and logits["failed_steps"] == 0
    assert 0 <= logits["max_abs_diff"] <= logits["tol"] == 1e-4


def drifting_decode(model, token, input_pos, cache):
    """Every logit 1e-3 higher while Dynamo traces: past the rule, no argmax moved."""
    logits = model(token, input_pos, cache)
    return logits + 1e-3 if torch.compiler.is_compiling() else logits


def test_a_decode_step_whose_logits_drift_fails_the_logits_while_the_tokens_pass(tmp_path):
    w = _gen(decode=drifting_decode, prompts=sample.prompts((6, 8)))
    eager = _serve(w, "eager", str(tmp_path))["side"]
    got = _serve(w, "compiled", str(tmp_path))
    assert _tokens_equal(eager, got["side"]).equal == 2
    logits = got["logits"]
    # the prefill (step 0) runs eager on both sides: only the compiled decodes fail
    assert logits["steps"] == 2 * N and logits["failed_steps"] == 2 * (N - 1)
    assert (logits["first_fail_request"], logits["first_fail_step"]) == (0, 1)


def planted_decode(model, token, input_pos, cache):
    """Token 7's logit lifted 1.0 above the top while Dynamo traces (a wide margin: numerics)."""
    logits = model(token, input_pos, cache).clone()
    if torch.compiler.is_compiling():
        logits[..., 7] = logits.amax(-1) + 1.0
    return logits


def test_a_planted_divergence_in_the_decode_step_is_named_with_its_request_step_and_margin(
    tmp_path,
):
    w = _gen(decode=planted_decode, prompts=sample.prompts((6,)))
    eager = _serve(w, "eager", str(tmp_path))["side"]
    got = _serve(w, "compiled", str(tmp_path))
    found = _tokens_equal(eager, got["side"], got["logits"])
    assert found.compared == 1 and found.equal == 0
    first = found.divergences[0]
    assert (first.request, first.step, first.call) == (0, 1, gs.NUMERICS)
    assert first.compiled_token == 7 and first.margin_eager > first.tie_bound
    # the prefill and the diverging decode compared (not the step after), the latter outside
    assert first.logits_within is False and got["logits"]["steps"] == 2
    assert (got["logits"]["first_fail_request"], got["logits"]["first_fail_step"]) == (0, 1)


CACHES: list = []  # per request: (its cache, the caches its prefill and decodes were handed)
WARM: list = []  # the caches handed to a call outside every request (the untimed warm call)


def counted_cache(model):
    cache = sample.new_cache(model)
    CACHES.append((cache, []))
    return cache


def _handed(cache) -> list | None:
    if CACHES and cache is CACHES[-1][0]:
        CACHES[-1][1].append(cache)
        return CACHES[-1][1]
    WARM.append(cache)
    return None


def bad_prefill(model, idx, input_pos, cache):
    _handed(cache)
    return sample.prefill(model, idx, input_pos, cache)


def bad_decode(model, token, input_pos, cache):
    """Request 1 (prompt 9) raises at its second decode; request 2 (prompt 7) returns two
    positions' logits."""
    handed = _handed(cache)
    logits = sample.decode_one_token(model, token, input_pos, cache)
    if handed is None:
        return logits
    plen = int(input_pos[0]) - len(handed) + 2  # decode k: position plen + k - 1, k + 1 handed
    if plen == 9 and len(handed) == 3:
        raise RuntimeError("planted failure")
    return torch.cat([logits, logits], 1) if plen == 7 else logits


def test_a_decode_that_raises_or_returns_wrong_logits_is_one_line_each_and_a_cache_per_request(
    tmp_path,
):
    prompts = [*sample.prompts(LENGTHS), torch.rand(4), *sample.prompts((6,))]
    w = _gen(prefill=bad_prefill, decode=bad_decode, cache=counted_cache, prompts=prompts)
    CACHES.clear(), WARM.clear()
    side = _serve(w, "eager", files=str(tmp_path))["side"]
    lines = gen_part.request_errors(gen_part.Generated.from_dict({"eager": {"side": side}}))
    assert lines == [
        "generation: request 1 (Tensor[9] int64) failed at step 2 (eager): RuntimeError: planted failure",
        "generation: request 2 (Tensor[7] int64) failed at step 1 (eager): ValueError: decode "
        f"returned logits of shape [1, 2, {sample.VOCAB}], not one token's [..., {sample.VOCAB}]",
        "generation: request 3 (Tensor[4] float32) failed (eager): token ids must be an integer "
        "tensor, got float32",
    ]
    assert [len(t) if t else None for t in side["tokens"]] == [N, None, None, None, N]
    # the side file keeps the served requests' steps only: a request that failed mid-generation
    # (1, after a step; 2, at its first decode) is not compared
    kept = torch.load(tmp_path / "generate_eager.logits.pt")["logits"]
    assert sorted(kept) == [0, 4] and all(len(kept[r]) == N for r in kept), sorted(kept)
    # one cache per request that reached the loop (the float prompt did not), handed to that
    # request's prefill and decodes (until it failed) and to no other call; the untimed warm call
    # (one decode on the example inputs) was handed none of them
    assert len({id(c) for c, _ in CACHES}) == len(CACHES) == 4
    assert [len(handed) for _, handed in CACHES] == [N, 3, 2, N] and len(WARM) == 1


@pytest.mark.parametrize("warmup, proven", [([0], True), ([], False)])
def test_the_loops_warmup_is_proven_under_fail_on_recompile_and_an_empty_one_is_not(warmup, proven):
    from tcdoctor.run.serving.generate_proof import part_proof

    w = _gen()
    ctx = ServeContext(
        workload=w, fresh=Pristine(w).fresh, traffic=w.traffic, n=len(LENGTHS),
        options=Options(backend="eager", threads=1), device=torch.device("cpu"),
        deadline=time.monotonic() + 120, sink=lambda ev: None,
    )  # fmt: skip
    proof = part_proof(ctx, warmup)
    assert proof["proven"] is proven and proof["warmup_compiles"] == len(warmup)
    # without the warm-up every prompt's first decode is a compile the stance refuses (none is
    # made, so each request meets it again)
    want = [] if proven else [(r, 1) for r in range(len(LENGTHS))]
    assert [(x["request"], x["step"]) for x in proof["would_compile"]] == want


def _tokens_equal(eager, compiled, logits=None):
    """gs.tokens_equal on the processes' wire dicts, read as the section's records."""
    return gs.tokens_equal(
        GenSide.from_dict(eager),
        GenSide.from_dict(compiled),
        logits and LogitsCompared.from_dict(logits),
    )
