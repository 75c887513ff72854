"""The generation section (issue 60), described once (report/layout.py) for every format: the key
figures (TTFT, ITL, TPOT, tokens/s eager against compiled, the compiles, the tokens compared),
the compiles during generation (request, decode step, cache length, guard), the divergences, and
the cache strategies judged against the reference. render/outline.py places them in the serving
fold when the report's serving section holds a generation (`Serving.generation`).

Every figure is written by units.py; a part not measured says why (the section's `not_measured`).
"""

from __future__ import annotations

from .. import units
from ..report.layout import Note, Row, Section, Table, notes
from ..report.model import Report
from ..report.sections.generation import GenCompile, GenerationSection, GenSide, LogitsAt
from .breaks import more_line
from .serving import guard_text, model_section, strategy_cells

TITLE = "Generation"
COMPILES = "Compiles during generation"
TOKENS = "Tokens compared with eager's"
STRATEGIES = "Cache strategies on the prompts"
HOW = (
    "generate, one request at a time, greedy; each token timed in a streamer's put (device "
    "synced); percentiles by nearest rank over every decode step (ITL) or every request (TTFT, "
    "TPOT)"
)
LOOP_HOW = (
    "your own loop, one request at a time, greedy (the argmax of the last position's logits); each "
    "token timed when it is read to the host (device synced); percentiles by nearest rank over "
    "every decode step (ITL) or every request (TTFT, TPOT)"
)


def _gen(report: Report) -> GenerationSection | None:
    return report.serving.generation if report.serving is not None else None


def _nm(g: GenerationSection, key: str) -> str:
    why = g.not_measured.get(key)
    return f"{units.NA} ({why})" if why else units.NA


def _three(side: GenSide | None, name: str) -> str:
    if side is None:
        return units.NA
    xs = [getattr(side, f"{name}_{q}_s") for q in ("p50", "p90", "p99")]
    return " / ".join(units.seconds(x) for x in xs)


def _pair(g: GenerationSection, name: str) -> str:
    return f"eager {_three(g.eager, name)}; compiled {_three(g.compiled, name)}"


def tokens_text(g: GenerationSection) -> str:
    """'8 of 8 requests equal', or the divergences in words."""
    t = g.tokens
    if t is None:
        return _nm(g, "generate")
    text = f"{units.count(t.equal)} of {units.count(t.compared)} requests equal"
    ties = sum(1 for d in t.divergences if d.call == "tie")
    bad = len(t.numerics_failures)
    if ties:
        text += f"; {ties} near-tie(s) (within the numerics rule)"
    if bad:
        text += f"; {bad} NUMERICS FAILURE(S)"
    return text


PRECISION = "precision, not a compiler bug"


def divergence_words(at: LogitsAt) -> str:
    """A token divergence's step judged on its full logits, in words."""
    where = f"request {units.count(at.request)} step {units.count(at.step)}"
    if at.within:
        return f"{where}: logits within the rule, {PRECISION}"
    return f"{where}: the compiled decoder computes something different at {where}"


def logits_text(g: GenerationSection) -> str:
    """The full-logit comparison in one line: pass/FAIL, the steps, the largest difference and
    where, each token divergence's step judged."""
    lg = g.logits
    if lg is None:
        return _nm(g, "logits")
    where = f"request {units.count(lg.max_request)}, step {units.count(lg.max_step)}"
    largest = f"largest difference {units.sci(lg.max_abs_diff)} ({where})"
    if lg.max_abs_diff == 0:
        largest = "every step bitwise equal"
    text = (
        f"{units.numerics_status(lg.passed)}: {units.count(lg.steps)} steps of "
        f"{units.count(lg.requests)} requests compared (tol {units.sci(lg.tol)}), "
        f"{units.count(lg.failed_steps)} outside the rule; {largest}"
    )
    if lg.failed_steps:
        first = (
            f"request {units.count(lg.first_fail_request)} step {units.count(lg.first_fail_step)}"
        )
        text += f"; the compiled decoder computes something different at {first}"
    text += "".join(f"; tokens diverge at {divergence_words(at)}" for at in lg.divergences)
    if lg.unrecorded_steps:
        text += f"; {units.count(lg.unrecorded_steps)} steps not recorded (a side's cap)"
    return text


def _logits_row(g: GenerationSection) -> tuple[Row, ...]:
    """The logits row, in reports that compared them (older ones: none)."""
    if g.logits is None and "logits" not in g.not_measured:
        return ()
    failed = bool(g.logits and g.logits.failed_steps)
    how = (g.logits.method if g.logits else "") or ""
    return (Row("logits equal to eager's, step by step", logits_text(g), how, alarm=failed),)


def _paired_row(g: GenerationSection) -> tuple[Row, ...]:
    """The decision's pairs (reports written before them: none): eager and compiled request times
    served back to back in the compiled process, apart from the eager process's figures above."""
    e, c = g.paired_eager, g.steady
    if e is None:
        return ()
    both = f"eager {_three(e, 'ttft')}; compiled steady {_three(c, 'ttft')}"
    rounds = c.rounds_words(g.pairs) if c is not None else ""
    rate = f"eager {units.tokens_rate(e.tokens_per_s)}, compiled steady "
    rate += units.tokens_rate(c.tokens_per_s if c else None)
    return (
        Row(
            "paired in one process: TTFT p50 / p90 / p99",
            both,
            "what the verdict compares: in the compiled process, each request served eager and "
            "compiled back to back (which first alternating)"
            + (
                f", the prompts in rounds ({rounds}; the interval resamples whole prompts)"
                if rounds
                else ""
            )
            + ", so a phase of the host falls on both; the rows above: eager in its own fresh "
            "process",
        ),
        Row(
            "paired in one process: ITL p50 / p90 / p99",
            f"eager {_three(e, 'itl')}; compiled steady {_three(c, 'itl')}",
        ),
        Row(
            "paired in one process: tokens/s",
            rate,
            "the same pairs: compiled steady's figure beside the eager served with it (the row "
            "'tokens/s over the replay' is each side's own first replay)",
        ),
    )


def _tail_row(g: GenerationSection) -> tuple[Row, ...]:
    """The compiled steady p99s in the two processes of the reference's setting (`again`): how
    far a tail moves between processes, beside the figures a reader compares."""
    a, b = g.steady, g.again
    if a is None or b is None:
        return ()

    def both(name: str) -> str:
        x, y = getattr(a, name), getattr(b, name)
        apart = f" ({units.ratio(max(x, y) / min(x, y))} apart)" if x and y else ""
        return f"{units.seconds(x)} / {units.seconds(y)}{apart}"

    how = (
        "compiled steady, this process / the reference's second process (the strategies' "
        "'reference, again'): one setting, two processes, two moments of the host. A p99 is one "
        f"of the slowest samples: of {units.count(len(a.ttfts))} requests (TTFT; under 100 it is "
        f"the slowest) and {units.count(len(a.itls))} decode steps (ITL). A tail that differs by "
        "less than this, between two settings or two runs, is the host's, not the setting's"
    )
    value = f"TTFT p99 {both('ttft_p99_s')}; ITL p99 {both('itl_p99_s')}"
    return (Row("p99 in two processes of your setting", value, how),)


def key_rows(g: GenerationSection) -> tuple[Row, ...]:
    e, c = g.eager, g.compiled
    rate = f"eager {units.tokens_rate(e.tokens_per_s if e else None)}, compiled "
    rate += units.tokens_rate(c.tokens_per_s if c else None)
    if g.paired_eager is None:  # a report before pairs: steady's own figure (else the paired row)
        rate += (
            f", compiled steady {units.tokens_rate(g.steady.tokens_per_s if g.steady else None)}"
        )
    compiles = units.NA
    if c is not None:
        lost = sum(x.seconds or 0.0 for x in c.compiles)
        compiles = f"{units.count(c.compile_count)} ({units.seconds(lost)} of compiling)"
    past = c.past_limit if c else []
    return (
        Row("prompts", f"{units.count(g.prompts)} x {units.count(g.max_new_tokens)} new tokens"),
        Row("time to first token p50 / p90 / p99", _pair(g, "ttft"), LOOP_HOW if g.loop else HOW),
        Row("inter-token latency p50 / p90 / p99", _pair(g, "itl")),
        Row("time per output token p50 / p90 / p99", _pair(g, "tpot")),
        Row("tokens/s over the replay", rate, "new tokens / the sum of the request times"),
        *_paired_row(g),
        *_tail_row(g),
        Row("compiles during generation", compiles, "CompilationMetrics entries PyTorch added"),
        Row(
            f"requests after recompile_limit ({units.count(c.recompile_limit if c else None)})",
            units.indices(past) if past else "none",
            alarm=bool(past),
        ),
        Row("tokens equal to eager's", tokens_text(g), (g.tokens.method if g.tokens else "") or ""),
        *_logits_row(g),
        Row("warm-up", proof_text(g), ((g.proof or {}).get("method")) or ""),
    )


def proof_text(g: GenerationSection) -> str:
    """The derived warm-up and its proof in one line."""
    p = g.proof
    if not p:
        return _nm(g, "generate_proof")
    n = len(p.get("requests") or [])
    head = f"{n} prompt(s) (requests {units.indices(p.get('requests') or [])}), "
    head += f"{units.seconds(p.get('warmup_s'))} from a restart: "
    if p.get("proven"):
        return head + "proven (no prompt compiled after it under fail_on_recompile)"
    would = [w.get("request") for w in p.get("would_compile") or []]
    return head + (
        f"NOT proven: requests {units.indices(would)} would compile"
        if would
        else f"not proven ({p.get('stopped') or 'a prompt was not served'})"
    )


def section(report: Report) -> Section | None:
    """The key figures (every format); None without a generation."""
    g = _gen(report)
    if g is None:
        return None
    return Section(TITLE, detail=f"{units.count(g.prompts)} prompts", rows=key_rows(g))


def _cells(c: GenCompile) -> list[str]:
    step = "prefill" if c.step == 0 else units.count(c.step)
    return [
        units.count(c.request), step, units.count(c.cache_length), units.seconds(c.seconds),
        c.kind or "", guard_text(c),
    ]  # fmt: skip


def compiles_section(report: Report) -> Section | None:
    """Each compile during generation (every format; long tables cut)."""
    g = _gen(report)
    if g is None or g.compiled is None:
        return None
    rows = [_cells(c) for c in g.compiled.compiles]
    headers = ("request", "step", "cache length", "seconds", "kind", "guard that failed (PyTorch)")
    table = Table(headers, rows, detail=(3,), more=more_line(len(rows)))
    lines = [f"the replay stopped early: {g.compiled.stopped}"] if g.compiled.stopped else []
    return Section(COMPILES, count=len(rows), tables=(table,) if rows else (), notes=notes(lines))


def tokens_section(report: Report) -> Section | None:
    """Each divergence: request, step, tokens, margins, the call (every format)."""
    g = _gen(report)
    if g is None or g.tokens is None or not g.tokens.divergences:
        return None
    rows = [
        [
            units.count(d.request), units.count(d.step),
            f"{units.count(d.eager_token)} / {units.count(d.compiled_token)}",
            units.sci(d.margin_eager), units.sci(d.tie_bound),
            "tie" if d.call == "tie" else "NUMERICS FAILURE" if d.call == "numerics" else units.NA,
        ] + ([_within(d.logits_within)] if g.logits is not None else [])
        for d in g.tokens.divergences
    ]  # fmt: skip
    headers = ("request", "step", "token eager / compiled", "top-two margin", "tie bound", "call")
    if g.logits is not None:
        headers += ("logits at that step (numerics rule)",)
    return Section(
        TOKENS,
        count=len(rows),
        tables=(Table(headers, rows),),
        notes=(Note(g.tokens.method or "", how=True),),
    )


def _within(within: bool | None) -> str:
    if within is None:
        return units.NA
    return (
        f"within: {PRECISION}"
        if within
        else "outside: the compiled decoder computes something different"
    )


BESIDE = "request time vs eager beside it (median)"


def beside_text(x: float | None) -> str:
    """A steady / eager ratio of one process's pairs (`GenStrategy.vs_eager`): '0.72× eager's
    time'; n/a without pairs."""
    return f"{units.ratio(x)} eager's time" if x is not None else units.NA


def strategies_section(report: Report) -> Section | None:
    """Each cache strategy: steady TTFT, ITL p50/p99, tokens/s, compiles, warm-up, cache memory,
    its interval against the reference (every format)."""
    g = _gen(report)
    if g is None:
        return None
    rows, paired = [], any(r.paired_eager is not None for r in g.strategies)
    for r in g.strategies:
        s = r.steady
        figures = [
            units.seconds(s.ttft_p50_s if s else None), units.seconds(s.itl_p50_s if s else None),
            units.seconds(s.itl_p99_s if s else None),
            units.tokens_rate(s.tokens_per_s if s else None),
        ]  # fmt: skip
        again = r.is_reference_again
        extra = [units.nbytes(r.cache_bytes)] + ([beside_text(r.vs_eager)] if paired else [])
        rows.append(strategy_cells(r, figures, extra, again, "reference, again"))
    lines = [f"{k}: {units.NA} ({why})" for k, why in g.not_measured.items() if "strateg" in k or
             k.startswith("generate_")]  # fmt: skip
    if not rows and not lines:
        return None
    headers = ("strategy", "TTFT p50", "ITL p50", "ITL p99", "tokens/s", "compiles",
               "warm-up (cold)", "cache memory", *((BESIDE,) if paired else ()),
               "request time vs reference (interval)")  # fmt: skip
    how = (
        "Each strategy in a fresh process with an empty cache, cold then steady; interval: the "
        "ratio of median request times against the compiled forward with your generate_kwargs, "
        "paired by request, widened by the spread between the reference's two processes."
    )
    if paired:  # reports written since the pairs
        how = (
            "Each strategy in a fresh process with an empty cache, cold then steady, each steady "
            "request served eager and with the strategy back to back. Judged: the column "
            f"'{BESIDE}' (the median request's time over eager's served beside it, one moment "
            "each), against the same ratio of the compiled forward with your generate_kwargs in "
            f"its process ({beside_text(g.vs_eager)}); the interval compares the two request by "
            "request, its bootstrap resampling whole prompts, widened by that ratio's spread "
            "between the reference's two processes. TTFT, ITL and tokens/s are each process's own "
            "absolute figures, taken at different moments of the host: not compared across rows."
        )
    return Section(
        STRATEGIES,
        tables=(Table(headers, rows, detail=(6, 7)),) if rows else (),
        notes=notes(lines) + (Note(how, how=True),),
    )


def sections(report: Report) -> list[Section]:
    """The generation's sections in order (render/outline.py places them)."""
    made = (section, model_section, compiles_section, tokens_section, strategies_section)
    return [s for f in made if (s := f(report)) is not None]
