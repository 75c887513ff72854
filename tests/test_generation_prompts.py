"""A generation's interval counts prompts, not repeats (issue 60): the paired replay serves the
traffic's prompts in rounds (the same prompts in the same order), so a prompt's 4 pairs share its
length and its systematic ratio. The bootstrap resamples whole prompts (a cluster bootstrap,
report/processes/paired.py `prompts`, stats.cluster_bootstrap). Pure figures, no model, no torch
process: the saved report (one pass) gives exactly the interval it gave; a prompt repeated 4
times widens the interval; independent data decides the same side. No test asserts a speedup."""

from __future__ import annotations

import json
import math
import random
import statistics

import pytest
from conftest import saved_report

from tcdoctor.report.model import Report
from tcdoctor.report.processes.claims import Claim
from tcdoctor.report.processes.paired import pair_interval, prompts, ratio_interval, steady
from tcdoctor.report.sections.generation import GenSide, GenStrategy
from tcdoctor.run.serving import generate_section as gs
from tcdoctor.stats import bootstrap, percentile_ci
from tcdoctor.verdict.generation import judged


def _pairwise(num: dict, den: dict, floor: float | None) -> tuple[float, float]:
    """The bootstrap before rounds, written out: each request a sample of its own."""
    both = sorted(set(num) & set(den))
    a, b = [num[i] for i in both], [den[i] for i in both]

    def stat(idx: list[int]) -> float:
        return statistics.median([a[i] for i in idx]) / statistics.median([b[i] for i in idx])

    low, high = percentile_ci(bootstrap(stat, len(both), resamples=1000, seed=0), 0.95)
    w = math.exp(floor) if floor is not None else 1.0
    return low / w, high * w


def test_a_report_of_one_pass_gives_exactly_the_interval_it_gave():
    """The saved generation report (8 prompts, each served once): every prompt is its own
    cluster, so its stored strategy intervals and its headline's come out to the last digit, with
    the rounds' size read as the prompts (one round) or absent."""
    path = saved_report("generation")
    g_json = json.loads(path.read_text())["serving"]["generation"]
    r = Report.load(str(path))
    g = r.serving.generation
    assert g.steady.round_size is None and g.prompts == 8  # written before rounds
    ref = steady(g.steady.total_s)
    stored = [s for s in g_json["strategies"] if s.get("interval")]
    assert len(stored) == 2
    for s in stored:
        mine = steady(s["steady"]["total_s"])
        for size in (None, g.prompts):
            iv = ratio_interval(mine, ref, g.process_spread, "dynamic", round_size=size)
            assert (iv.low, iv.high, iv.ratio) == (s["interval"]["low"], s["interval"]["high"],
                                                  s["interval"]["ratio"])  # fmt: skip
        assert _pairwise(mine, ref, g.process_spread) == (
            s["interval"]["low"],
            s["interval"]["high"],
        )
    head = judged(r).interval
    assert (head.low, head.high) == _pairwise(ref, steady(g.eager.total_s), g.process_spread)
    one = pair_interval(ref, steady(g.eager.total_s), 0.01, "eager", round_size=g.prompts)
    assert one == pair_interval(ref, steady(g.eager.total_s), 0.01, "eager")


def _rounds(ratios: list[float], rounds: int, jitter: float, seed: int) -> dict[int, float]:
    """{request: compiled / eager} of `rounds` rounds of the prompts' ratios, each repeat within
    +-`jitter` of its prompt's."""
    rng = random.Random(seed)
    n = len(ratios)
    return {i: ratios[i % n] * (1 + rng.uniform(-jitter, jitter)) for i in range(rounds * n)}


def _interval(per: dict[int, float], size: int | None):
    return pair_interval(per, dict.fromkeys(per, 1.0), 0.01, "eager", round_size=size)


def test_a_prompt_repeated_in_every_round_widens_the_interval():
    """8 prompts x 4 rounds, each repeat of a prompt within 1% of its own ratio (correlated), one
    slow prompt (1.6x) among them: the pairwise bootstrap counts 32 samples, the prompts' 8; the
    cluster interval is at least as wide (here wider), both around the same median."""
    per = _rounds([0.70, 0.74, 0.78, 0.82, 0.86, 0.90, 0.96, 1.60], 4, 0.01, seed=1)
    assert prompts(sorted(per), 8) == [[p, p + 8, p + 16, p + 24] for p in range(8)]
    pairwise, cluster = _interval(per, None), _interval(per, 8)
    assert cluster.ratio == pairwise.ratio and cluster.pairs == pairwise.pairs == 32
    assert cluster.low <= pairwise.low and cluster.high >= pairwise.high
    width = [math.log(iv.high / iv.low) for iv in (cluster, pairwise)]
    assert width[0] > 1.5 * width[1]  # 8 prompts' evidence, not 32 pairs'


def test_independent_pairs_decide_the_same_side_by_prompt_or_by_pair():
    """32 independent pairs (no prompt's repeats alike) around 0.8 and around 1.25: resampled by
    prompt (rounds of 8) or by pair, the interval decides the same side."""
    for centre, claim in ((0.8, Claim.FASTER), (1.25, Claim.SLOWER)):
        rng = random.Random(7)
        per = {i: centre * math.exp(rng.gauss(0, 0.05)) for i in range(32)}
        assert _interval(per, None).claim is claim
        assert _interval(per, 8).claim is claim


def test_the_strategies_judge_resamples_the_prompts_of_the_recorded_rounds():
    """`judge` reads the rounds' size from the records: a strategy row's interval is the cluster
    one (rounds of 8), not the pairwise one, on the same ratios."""
    base = [0.010 + 0.001 * (i % 8) for i in range(32)]
    mine = _rounds([0.70, 0.74, 0.78, 0.82, 0.86, 0.90, 0.96, 1.60], 4, 0.01, seed=2)
    steady_s = [x * mine[i] for i, x in enumerate(base)]

    def side(times: list[float]) -> dict:
        return {"total_s": list(times), "rounds": 4, "round_size": 8, "pairs_wanted": 32}

    rows = [GenStrategy.from_dict(r) for r in (
        {"name": "dynamic", "steady": side(x * 1.01 for x in base), "paired_eager": side(base)},
        {"name": "static", "steady": side(steady_s), "paired_eager": side(base)},
    )]  # fmt: skip
    reference, paired = GenSide.from_dict(side(base)), GenSide.from_dict(side(base))
    gs.judge(rows, reference, paired)
    ratios = {i: steady_s[i] / base[i] for i in range(32)}
    floor = abs(math.log(1 / 1.01))
    cluster = pair_interval(ratios, dict.fromkeys(ratios, 1.0), floor, "dynamic", round_size=8)
    pairwise = pair_interval(ratios, dict.fromkeys(ratios, 1.0), floor, "dynamic")
    got = rows[1].interval
    assert got.low == cluster.low and got.high == cluster.high
    assert (got.low, got.high) != (pairwise.low, pairwise.high)


def test_the_strategies_table_shows_the_ratio_each_row_is_judged_by():
    """The saved report with pairs planted: `static`'s process ran 4x faster than the reference's
    throughout (its absolute request times far below), its strategy 1.5x eager's time beside it; the
    table's judged column reads each row's own ratio to eager (1.50×; dynamic's 0.80×), the how
    note names the column and the reference's ratio, and the interval says slower, as the column
    does, not faster, as the absolute figures would."""
    from tcdoctor.render import generation as rg
    from tcdoctor.render.markdown import MarkdownRenderer

    r = Report.load(str(saved_report("generation")))
    g = r.serving.generation
    assert rg.BESIDE not in MarkdownRenderer().render(r)  # no pairs: the column absent
    base = [0.010 + 0.001 * (i % 8) for i in range(32)]
    wobble = [1 + 0.01 * ((i * 3) % 5 - 2) for i in range(32)]

    def side(times) -> GenSide:
        return GenSide.from_dict({"total_s": list(times), "rounds": 4, "round_size": 8})

    g.steady, g.paired_eager = side(x * 0.8 for x in base), side(base)
    g.process_spread = 0.01
    rows = {s.name: s for s in g.strategies}
    rows["dynamic"].steady = side(x * 0.8 * w for x, w in zip(base, wobble))
    rows["dynamic"].paired_eager = side(base)
    rows["static"].steady = side(x * 1.5 / 4 * w for x, w in zip(base, wobble))
    rows["static"].paired_eager = side(x / 4 for x in base)
    rows["prefill_eager"].paired_eager = None
    gs.judge(g.strategies, g.steady, g.paired_eager)
    assert rows["static"].vs_eager == pytest.approx(1.5, rel=0.03)
    fast = [statistics.median(rows[k].steady.total_s) for k in ("static", "dynamic")]
    assert fast[0] < fast[1] / 2  # static's absolute request time: its process ran faster
    assert rows["static"].interval.claim is Claim.SLOWER
    sec = rg.strategies_section(r)
    table = sec.tables[0]
    col = list(table.headers).index(rg.BESIDE)
    cells = {str(row[0]).split(" ")[0]: row for row in table.rows}
    assert cells["static"][col] == rg.beside_text(rows["static"].vs_eager)
    assert cells["static"][col].startswith(("1.49×", "1.50×", "1.51×"))
    assert cells["dynamic"][col] == rg.beside_text(rows["dynamic"].vs_eager)
    assert cells["prefill_eager"][col] == rg.beside_text(None)
    how = sec.notes[-1].text
    assert rg.BESIDE in how and rg.beside_text(g.vs_eager) in how and "0.80×" in how
    assert rg.BESIDE in MarkdownRenderer().render(r)


def test_the_tail_is_shown_in_both_processes_of_the_reference_setting():
    """The saved report with its steady replays planted: this process's slowest request 3 ms, the
    second process's (the `dynamic` strategy, judged by no interval) 2 ms; the key figures give
    both p99s and how far apart (1.50×), and the sample counts they rest on. A report without the
    reference's second process (its row judged, or absent) has no such row."""
    from tcdoctor.render import generation as rg
    from tcdoctor.render.markdown import MarkdownRenderer

    r = Report.load(str(saved_report("generation")))
    g = r.serving.generation

    def side(ttft_ms: list[float]) -> GenSide:
        # 3 tokens a request, 1 ms apart: ITL the same in both, 2 steps a request
        times = [[t / 1e3, t / 1e3 + 1e-3, t / 1e3 + 2e-3] for t in ttft_ms]
        return GenSide.from_dict({"token_times_s": times, "total_s": [t[-1] for t in times]})

    g.steady = side([2.0] * 31 + [3.0])
    rows = {s.name: s for s in g.strategies}
    rows["dynamic"].steady = side([1.5] * 31 + [2.0])
    tail = {row.label: row for row in rg.key_rows(g)}["p99 in two processes of your setting"]
    assert (
        tail.value
        == "TTFT p99 3.00 ms / 2.00 ms (1.50× apart); ITL p99 1.00 ms / 1.00 ms (1.00× apart)"
    )
    assert "of 32 requests (TTFT; under 100 it is the slowest) and 64 decode steps" in tail.how
    assert tail.value in MarkdownRenderer().render(r)
    rows["dynamic"].interval = rows["static"].interval  # judged: a strategy, not the reference
    assert "p99 in two processes of your setting" not in [row.label for row in rg.key_rows(g)]
    g.strategies = []
    assert "p99 in two processes of your setting" not in [row.label for row in rg.key_rows(g)]
