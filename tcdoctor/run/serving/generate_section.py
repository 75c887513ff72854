"""The generation section from the generation parts' results (issue 60): each side's replay, the
compiles during generation, the tokens compared with eager's, the cache strategies judged.

Tokens equal (`tokens_equal`): per request served by both sides, the compiled side's greedy tokens
against eager's, token for token (both produced in their own fresh process from the same prompt).
At the first step where they differ: the request, the step, both tokens, and the margin between
the top two raw logits at that step on each side. Both sides agreed on every earlier token, so the
step's forward saw the same tokens on both; eager's margin says how close the call was. The
numerics rule (probes/numerics.py: `allclose(compiled, eager, rtol=tol, atol=tol)` with tol by
the logits' dtype, 1e-4 for float32) lets each logit move by `tol * (1 + |logit|)`; two logits
may move towards each other, so a margin at most twice that (`tie_bound`) is a TIE: compiled is
within the numerics rule and picked the other of two equal candidates. A wider margin is a
NUMERICS failure: compiled's logits moved by more than the rule allows. The steps after a
divergence are not compared (the two sides then see different tokens).

Where the full logits were compared (probes/generate_logits.py, the compiled process's `logits`
result), the step's logits judged by the numerics rule decide the call instead (`logits_within`):
within the rule, TIE (two candidates within precision, not a compiler bug); outside it, NUMERICS
(the compiled decoder computes something different there). The margin stays the figure shown.

Pitfalls: only the first TOP_TOKENS_KEPT steps of a request keep their margins (probes/generate.py);
a divergence past them is "unknown", never guessed.

Torch-free: the parent imports it.
"""

from __future__ import annotations

from ...report.processes.paired import (
    median_spread,
    pair_interval,
    pair_spread,
    per_request,
    steady,
)
from ...report.sections.generation import (
    Divergence,
    GenerationSection,
    GenSide,
    GenStrategy,
    LogitsCompared,
    TokensEqual,
    reference_again,
)
from .generate import GenProcess, generated
from .part import Serving

LOGITS_DECIDE = (
    "; where that step's full logits were compared, the numerics rule on them decides instead "
    "(within: a tie of two candidates within precision; outside: numerics)"
)
TIE = "tie"
NUMERICS = "numerics"
UNKNOWN = "unknown"


def tie_bound(tol: float, top: float) -> float:
    """The widest margin the numerics rule allows two logits to close: 2 * tol * (1 + |top|)."""
    return 2.0 * tol * (1.0 + abs(top))


def _at(values: list | None, step: int) -> float | None:
    return values[step] if values is not None and step < len(values) else None


def divergence(r: int, eager: GenSide, compiled: GenSide) -> Divergence | None:
    """Request r's first differing token, with both margins and the call; None when equal."""
    a, b = eager.tokens[r], compiled.tokens[r]
    step = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    if step is None and len(a) == len(b):
        return None
    step = min(len(a), len(b)) if step is None else step
    margin = _at(eager.margins[r], step)
    top = _at(eager.top_logits[r], step)
    tol = eager.tol
    bound = tie_bound(tol, top) if tol is not None and top is not None else None
    call = UNKNOWN if margin is None or bound is None else (TIE if margin <= bound else NUMERICS)
    return Divergence(
        request=r,
        step=step,
        eager_token=a[step] if step < len(a) else None,
        compiled_token=b[step] if step < len(b) else None,
        margin_eager=margin,
        margin_compiled=_at(compiled.margins[r], step),
        tie_bound=bound,
        call=call,
    )


def tokens_equal(
    eager: GenSide | None, compiled: GenSide | None, logits: LogitsCompared | None = None
) -> TokensEqual | None:
    """The tokens-equal record (see the module's docstring); None without both sides. `logits`:
    the full-logit comparison, whose verdict at a divergence's step decides its call."""
    if eager is None or compiled is None:
        return None
    both = [
        r
        for r in range(min(len(eager.tokens), len(compiled.tokens)))
        if eager.tokens[r] is not None and compiled.tokens[r] is not None
    ]
    found = [d for r in both if (d := divergence(r, eager, compiled)) is not None]
    at = {(x.request, x.step): x.within for x in logits.divergences} if logits else {}
    for d in found:
        within = at.get((d.request, d.step))
        if within is not None:
            d.logits_within, d.call = within, TIE if within else NUMERICS
    return TokensEqual(
        compared=len(both),
        equal=len(both) - len(found),
        divergences=found,
        tol=eager.tol,
        method="per request, compiled greedy tokens against eager's (each side in its own "
        "process); at the first differing step the top-two margin of eager's raw logits: at most "
        "2 * tol * (1 + |top logit|) (the numerics rule's allclose bound, both logits moving) is a "
        "tie, wider a numerics failure" + (LOGITS_DECIDE if logits else ""),
    )


def build(run: Serving) -> GenerationSection | None:
    """The generation section (report/sections/generation.py's record); None when the target is
    no Generation."""
    gen = run.ask.generation
    if not gen:
        return None
    out = generated(run)
    eager, compiled = out.eager or GenProcess(), out.compiled or GenProcess()
    logits = compiled.logits
    not_measured = run.not_measured_of(generation=True)
    if logits and "why" in logits:
        not_measured["generate_logits"] = logits["why"]
    typed = LogitsCompared.from_dict(logits) if logits and "why" not in logits else None
    eager_side, compiled_side = eager.side, compiled.side
    reference, paired = compiled.steady, compiled.paired_eager
    rows: list[GenStrategy] = run.results.get("generate_strategies") or []
    judge(rows, reference, paired)
    return GenerationSection(
        prompts=run.ask.requests,
        max_new_tokens=gen.max_new_tokens,
        generate_kwargs=gen.generate_kwargs,
        eager=eager_side,
        compiled=compiled_side,
        steady=reference,
        paired_eager=paired,
        tokens=tokens_equal(eager_side, compiled_side, typed),
        strategies=rows,
        process_spread=process_spread(rows, reference, paired),
        proof=run.results.get("generate_proof"),
        not_measured=not_measured,
        loop=gen.loop or None,
        logits=typed,
    )


def _pairs(steady_side: GenSide | None, eager: GenSide | None) -> tuple[dict, dict] | None:
    """(steady request times, paired eager's) of one process's paired replay (None: no pairs)."""
    if eager is None or not eager.total_s:
        return None
    return steady(steady_side.total_s if steady_side else None), steady(eager.total_s)


def _round_size(*sides: GenSide | None) -> int | None:
    """The rounds' size the pairs were served in (every process serves the same rounds: the first
    side that records it); None: one pass, each request its own prompt."""
    return next((s.round_size for s in sides if s is not None and s.round_size), None)


def judge(rows: list[GenStrategy], reference: GenSide | None, paired: GenSide | None) -> None:
    """Each strategy row's `interval` against the reference (the generate part's compiled
    process: its steady replay, paired with eager). Every strategy's process paired its steady
    replay with eager the same way, so per request each side is a ratio to eager of one moment
    (`per_request`); the interval is the strategy's ratios against the reference's, paired by
    request (`pair_interval`: the median request's ratio of the two ratios; its bootstrap resamples
    whole prompts, all their rounds together), widened by the spread
    of the same ratios between the reference's two processes (the `dynamic` row is the second;
    its own row has no interval: it is where the spread comes from). A host phase in one process
    moves both halves of its pairs, not the ratios. run/serving/generate_strategies.py."""
    ref, again = _pairs(reference, paired), reference_again(rows)
    ref_ratio = per_request(*ref) if ref else {}
    second = _pairs(again.steady, again.paired_eager) if again else None
    floor = median_spread(ref_ratio, per_request(*second)) if ref and second else None
    for row in rows:
        iv, pairs = None, _pairs(row.steady, row.paired_eager)
        if row is not again and ref and pairs:
            size = _round_size(reference, row.steady)
            iv = pair_interval(per_request(*pairs), ref_ratio, floor, "dynamic", round_size=size)
        row.interval = iv


def process_spread(
    rows: list[GenStrategy], reference: GenSide | None, paired: GenSide | None
) -> float | None:
    """The spread between the reference's two processes (the generate part's compiled one and the
    `dynamic` strategy's) of the compiled / eager per-request ratio that the headline's interval
    measures (`pair_spread`); None: not both."""
    again = reference_again(rows)
    a = _pairs(reference, paired)
    b = _pairs(again.steady, again.paired_eager) if again else None
    return pair_spread(a, b) if a and b else None
