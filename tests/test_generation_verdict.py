"""A Generation's headline is the generation's decision (issue 60): the saved generation report
(tests/data/make_reports.py) with its request times and tokens planted, the verdict recomputed
(torch-free, no analysis), read back wherever the headline is read."""

from __future__ import annotations

import copy

import pytest
from conftest import saved_report

from tcdoctor.checks.judges import verdict as require_verdict
from tcdoctor.outcomes import Decision
from tcdoctor.render.markdown import MarkdownRenderer
from tcdoctor.render.terminal import TerminalRenderer
from tcdoctor.report.diff import figures as diff_figures
from tcdoctor.report.model import Report
from tcdoctor.report.sections.generation import Divergence
from tcdoctor.report.sweep import row_from_report
from tcdoctor.verdict import decide, judge, with_verdict
from tcdoctor.verdict.generation import headline, judged

COMPILING = (Decision.COMPILE, Decision.COMPILE_AFTER_FIXES)


@pytest.fixture(scope="module")
def saved() -> Report:
    return Report.load(str(saved_report("generation")))


def _planted(saved: Report, ratio: float | None = None, divergence: str | None = None) -> Report:
    """The saved report, the compiled steady request times `ratio` x eager's (by request), a
    divergence of `divergence`'s call at request 3, step 5, and the verdict recomputed."""
    r = copy.deepcopy(saved)
    g = r.serving.generation
    if ratio is not None:
        g.steady.total_s = [x * ratio for x in g.decision_eager.total_s]
    if divergence is not None:
        g.tokens.equal = g.tokens.compared - 1
        g.tokens.divergences = [
            Divergence(request=3, step=5, margin_eager=0.4, tie_bound=2e-3, call=divergence)
        ]
    judge(r)
    return r


def _agree(r: Report) -> None:
    """The headline never contradicts the operating model, and every reader reads the same."""
    v, om = r.verdict, r.verdict.serving
    assert (om.model == "jit") == (v.decision in COMPILING), (v.decision, om.text)
    assert v.reasons[0].startswith("Decided by the generation")
    assert om.relation.startswith("The verdict above is this judgement")
    text = {
        Decision.COMPILE: "Compile it",
        Decision.CANT_TELL: "Can't tell yet",
        Decision.DONT_COMPILE: "Don't compile it (yet)",
    }[v.decision]
    assert f"VERDICT: {text}" in TerminalRenderer().render(r)
    assert MarkdownRenderer().render(r).startswith(f"## tcdoctor: {text}")
    back = Report.from_dict(r.to_dict())  # the JSON's verdict
    assert back.verdict.decision == v.decision and back.verdict.serving.model == om.model
    assert row_from_report("t.py:build", back, 0, 1.0, "t").verdict == v.decision  # the sweep
    row = {d["figure"]: d for d in diff_figures(r, r)}["verdict"]  # diff
    assert row["after"] == str(v.decision)


def test_a_generation_decided_faster_heads_compile(saved):
    assert saved.runtime.speedup is not None  # the single forward: not faster (the saved verdict)
    r = _planted(saved, ratio=0.5)
    assert r.verdict.decision == Decision.COMPILE and r.verdict.serving.model == "jit"
    assert "compiled generation is faster than eager" in r.verdict.reasons[0]
    assert f"repaid after {judged(r).repay_requests:,} requests" in r.verdict.reasons[0]
    assert r.verdict.reasons[1].startswith("One forward call on the example inputs (evidence")
    assert require_verdict(r, "compile").passed  # check --require-verdict compile: exit 0
    _agree(r)


def test_a_generation_inside_the_noise_heads_cant_tell_and_slower_dont_compile(saved):
    same = _planted(saved, ratio=1.0)
    assert same.verdict.decision == Decision.CANT_TELL and same.verdict.serving.model == "eager"
    assert "inside the noise" in same.verdict.reasons[0]
    assert "repaid after" not in same.verdict.reasons[0]  # no saving shown, none to repay
    assert require_verdict(same, "compile").inconclusive
    _agree(same)
    slower = _planted(saved, ratio=2.0)
    assert slower.verdict.decision == Decision.DONT_COMPILE
    assert "slower than eager" in slower.verdict.reasons[0]
    assert not require_verdict(slower, "compile-after-fixes").passed
    _agree(slower)


@pytest.mark.parametrize("call", ["numerics", "tie"])
def test_tokens_leaving_eager_beyond_the_numerics_rule_head_dont_compile(saved, call):
    r = _planted(saved, ratio=0.5, divergence=call)
    if call == "tie":  # a near-tie is no numerics failure: the speed decides
        assert r.verdict.decision == Decision.COMPILE
    else:
        assert r.verdict.decision == Decision.DONT_COMPILE and r.verdict.serving.model == "eager"
        assert "at request 3, step 5" in r.verdict.reasons[0]
    _agree(r)


@pytest.mark.parametrize("failed", [0, 4])
def test_logits_leaving_eagers_with_the_tokens_equal_head_dont_compile(saved, failed):
    from tcdoctor.report.sections.generation import LogitsCompared

    r = copy.deepcopy(saved)
    g = r.serving.generation
    g.steady.total_s = [x * 0.5 for x in g.decision_eager.total_s]
    g.logits = LogitsCompared(
        requests=8, steps=64, failed_steps=failed, first_fail_request=2 if failed else None,
        first_fail_step=3 if failed else None, max_abs_diff=1e-3 if failed else 1e-6, tol=1e-4,
    )  # fmt: skip
    judge(r)
    if not failed:  # logits within the rule: the speed decides, as before
        assert r.verdict.decision == Decision.COMPILE
    else:
        assert r.verdict.decision == Decision.DONT_COMPILE and r.verdict.serving.model == "eager"
        want = "computes something different at request 2, step 3: 4 of 64 steps"
        assert want in r.verdict.reasons[0] and want in r.verdict.serving.text
    _agree(r)


def test_a_compiled_forward_that_fails_its_numerics_rules_out_a_faster_generation(saved):
    r = copy.deepcopy(saved)
    r.numerics.passed = False
    r.serving.generation.steady.total_s = [
        x * 0.5 for x in r.serving.generation.decision_eager.total_s
    ]
    judge(r)
    v = r.verdict
    assert v.decision == Decision.DONT_COMPILE and v.serving.model == "eager"
    assert "numerics" in v.reasons[0].lower() and "numerics" in v.serving.text


def test_compiles_repaid_beyond_the_horizon_head_dont_compile(saved):
    r = _planted(saved, ratio=0.5)
    j = judged(r)
    assert j.repay_requests is not None and j.repay_requests > 1
    late = with_verdict(r, expected_calls=j.repay_requests - 1)
    assert late.verdict.decision == Decision.DONT_COMPILE
    assert "repaid only after" in late.verdict.reasons[0]
    _agree(late)
    assert with_verdict(r, expected_calls=j.repay_requests).verdict.decision == Decision.COMPILE


def test_fixes_of_the_users_code_and_an_uncompared_generation_keep_the_forwards_decision(saved):
    r = _planted(saved, ratio=1.0)
    j = judged(r)
    made, why = headline(j, (Decision.COMPILE_AFTER_FIXES, ["fix `x.item()` at m.py:3"]))
    assert made == Decision.COMPILE_AFTER_FIXES and why[1] == "fix `x.item()` at m.py:3"
    r.serving.generation.eager = None  # not compared: the forward decides, said as such
    v = decide(r)
    assert v.decision == decide(_without_generation(r)).decision
    assert v.reasons[0].startswith("The generation was not compared")
    assert v.serving.model is None


def _without_generation(r: Report) -> Report:
    out = copy.deepcopy(r)
    out.serving.generation = None
    return out


# -- the sweep overview's generation columns ----------------------------------------------------


def test_the_sweep_overview_has_the_generations_columns_and_not_measured_for_other_targets(saved):
    import json

    from tcdoctor import units
    from tcdoctor.render.html import HtmlRenderer
    from tcdoctor.report import sweep as sweep_data

    plain = Report.load(str(saved_report("two_breaks")))
    rows = [sweep_data.row_from_report("g.py:build", saved, 0, 3.0, "g"),
            sweep_data.row_from_report("p.py:build", plain, 0, 2.0, "p")]  # fmt: skip
    g = saved.serving.generation
    assert rows[0].ttft_p50_s == g.compiled.ttft_p50_s and rows[0].itl_p99_s == g.compiled.itl_p99_s
    assert rows[0].tokens_per_s == g.steady.tokens_per_s
    assert rows[0].generation_compiles == g.compiled.compile_count >= 1
    sweep = sweep_data.Sweep(options={"backend": "eager"}, rows=rows)
    md = MarkdownRenderer().render_sweep(sweep)
    head = "| TTFT p50 | ITL p99 | tokens/s (steady) | compiles during generation | tokens equal |"
    assert head in md
    cells = [units.seconds(g.compiled.ttft_p50_s), units.seconds(g.compiled.itl_p99_s),
             units.tokens_rate(g.steady.tokens_per_s), str(g.compiled.compile_count),
             f"{g.tokens.equal}/{g.tokens.compared}"]  # fmt: skip
    assert "| " + " | ".join(cells) + " |" in md and cells[-1] == "8/8"
    assert "| " + " | ".join([units.NA] * 5) + " |" in md  # the plain target's
    assert "<th>tokens equal</th>" in HtmlRenderer().render_sweep(sweep)
    back = sweep_data.Sweep.from_dict(json.loads(sweep.to_json()))
    assert back.rows[0].tokens_equal == 8 and back.rows[0].itl_p99_s == g.compiled.itl_p99_s
    alone = sweep_data.Sweep(options={"backend": "eager"}, rows=rows[1:])
    assert "TTFT p50" not in MarkdownRenderer().render_sweep(alone)
    assert "ttft_p50_s" not in json.loads(alone.to_json())["rows"][0]  # a sweep's JSON as it was


def test_a_loop_target_is_judged_in_its_own_words(saved):
    """The user's own loop compiles its decode step, not generate's forward: the operating model,
    the headline and the section's method say so; a Hugging Face target's words stay."""
    hf = _planted(saved, ratio=0.5)
    assert "model.forward compiled" in hf.verdict.serving.text
    loop = copy.deepcopy(saved)
    loop.serving.generation.loop = True
    loop = _planted(loop, ratio=0.5)
    om = loop.verdict.serving
    assert om.text.startswith("JIT: your decode step compiled") and "forward" not in om.text
    assert all("generate_kwargs" not in f for f in om.figures), om.figures
    slow = copy.deepcopy(saved)
    slow.serving.generation.loop = True
    assert "compiling your decode step" in _planted(slow, ratio=1.0).verdict.serving.text
    md = MarkdownRenderer().render(loop)
    assert "your own loop, one request at a time" in md and "streamer" not in md
    assert "streamer" in MarkdownRenderer().render(hf)
    assert Report.from_dict(loop.to_dict()).serving.generation.loop is True
    assert "loop" not in hf.to_dict()["serving"]["generation"]  # a Hugging Face target's JSON
    _agree(loop)


def test_the_break_even_says_its_calls_are_the_single_forwards_not_requests(saved):
    """A generation report's break-even counts calls of the single forward (the runtime section's,
    on the target's inputs), which a generation reader could take for requests or tokens: the key
    figures' row, the tile and the break-even section say so; a report without a generation
    section keeps its words."""
    from tcdoctor.render import break_even, figures

    words = "calls of the single forward timed on the target's inputs"
    rows = {r.label: r for r in figures.section(saved).rows}
    assert saved.verdict.break_even_calls and words in rows["break-even (cold)"].how
    assert words in {r.label: r for r in figures.tiles(saved).rows}["break-even"].how
    assert any(words in n.text for n in break_even.section(saved).notes)
    plain = copy.deepcopy(saved)
    plain.serving = None
    assert words not in {r.label: r for r in figures.section(plain).rows}["break-even (cold)"].how
    assert not any(words in n.text for n in break_even.section(plain).notes)
