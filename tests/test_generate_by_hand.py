"""The by-hand generation script's paired mode (benchmarks/generate_by_hand.py `paired`, no
tcdoctor code) and tcdoctor's paired record (run/serving/generate.py, the compiled process) served
on the same traffic count the same pairs, rounds and new tokens per side, and the same compiles
PyTorch recorded for the same model compiled the same way (issue 60's agreement check compares
their figures; this test checks they describe the same replay, not a speed). Cheap: the 1-layer
Llama of test_generation, the `eager` backend, 2 new tokens, in this process."""

from __future__ import annotations

import importlib.util
import os

import pytest
from test_generation import _model, _prompts
from test_generation_paired import _ctx

import tcdoctor
from tcdoctor import units
from tcdoctor.probes import dynamo_state
from tcdoctor.render.generation import _paired_row, key_rows
from tcdoctor.report.sections.generation import GenerationSection, GenSide
from tcdoctor.run.serving import generate as gen_part
from tcdoctor.thresholds import RULES

pytest.importorskip("transformers")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LENGTHS = (5, 9, 7, 6, 8, 5, 7)  # 7 prompts: 32 pairs is 5 whole rounds (35 pairs)
NEW = 2


def _by_hand():
    path = os.path.join(ROOT, "benchmarks", "generate_by_hand.py")
    spec = importlib.util.spec_from_file_location("generate_by_hand", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_by_hand_paired_mode_counts_the_pairs_tokens_and_compiles_of_the_report():
    w = tcdoctor.Generation(_model(), prompts=_prompts(LENGTHS), max_new_tokens=NEW)
    sink = []
    gen_part.serve_generation(_ctx(w, sink), "compiled")
    got = {ev["key"]: ev["data"] for ev in sink if ev.get("event") == "result"}
    steady, eager = GenSide.from_dict(got["steady"]), GenSide.from_dict(got["paired_eager"])
    section = GenerationSection(steady=steady, paired_eager=eager)
    cold = GenSide.from_dict(got["side"])

    dynamo_state.fresh()  # the by-hand script runs in its own process: PyTorch's records fresh
    hand = _by_hand().paired(_model(), _prompts(LENGTHS), NEW, "eager", RULES.generation_pairs)

    rounds = -(-RULES.generation_pairs // len(LENGTHS))
    assert hand["pairs"] == section.pairs == rounds * len(LENGTHS)
    assert hand["rounds"] == steady.rounds == rounds and hand["round_size"] == steady.round_size
    assert hand["eager"]["tokens"] == eager.new_tokens == section.pairs * NEW
    assert hand["compiled"]["tokens"] == steady.new_tokens == section.pairs * NEW
    assert hand["cold"]["tokens"] == cold.new_tokens == len(LENGTHS) * NEW
    assert cold.compile_count > 0 and hand["compiles"] == cold.compile_count
    assert steady.compile_count == 0  # the warm-up's compiles cover the pairs, on both
    for side in ("eager", "compiled"):  # figures exist, none impossible
        f = hand[side]
        assert 0 < f["ttft_p50_ms"] <= f["ttft_p99_ms"] and 0 < f["itl_p50_ms"] <= f["itl_p99_ms"]
        assert f["tokens_per_s"] > 0
    assert hand["ratio_median"] > 0 and section.vs_eager is not None
    # the report shows the paired figures the script prints: TTFT, ITL and tokens/s, both sides
    rows = {row.label: row.value for row in _paired_row(section)}
    rate = rows["paired in one process: tokens/s"]
    assert units.tokens_rate(eager.tokens_per_s) in rate.split(", compiled steady ")[0]
    assert rate.endswith(units.tokens_rate(steady.tokens_per_s))
    itl = rows["paired in one process: ITL p50 / p90 / p99"]
    assert itl.startswith(f"eager {units.seconds(eager.itl_p50_s)} / ")
    assert f"compiled steady {units.seconds(steady.itl_p50_s)} / " in itl
    # the replay row sets no paired figure beside a first replay's (two moments of the host)
    replay = {row.label: row.value for row in key_rows(section)}["tokens/s over the replay"]
    assert "steady" not in replay
