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

from typing import Any

from ...report.processes.paired import (
    median_spread,
    pair_interval,
    pair_spread,
    per_request,
    steady,
)
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


def divergence(r: int, eager: dict, compiled: dict) -> dict | None:
    """Request r's first differing token, with both margins and the call; None when equal."""
    a, b = eager["tokens"][r], compiled["tokens"][r]
    step = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    if step is None and len(a) == len(b):
        return None
    step = min(len(a), len(b)) if step is None else step
    margin = _at(eager["margins"][r], step)
    top = _at(eager["top_logits"][r], step)
    tol = eager.get("tol")
    bound = tie_bound(tol, top) if tol is not None and top is not None else None
    call = UNKNOWN if margin is None or bound is None else (TIE if margin <= bound else NUMERICS)
    return {
        "request": r,
        "step": step,
        "eager_token": a[step] if step < len(a) else None,
        "compiled_token": b[step] if step < len(b) else None,
        "margin_eager": margin,
        "margin_compiled": _at(compiled["margins"][r], step),
        "tie_bound": bound,
        "call": call,
    }


def tokens_equal(
    eager: dict | None, compiled: dict | None, logits: dict | None = None
) -> dict | None:
    """The tokens-equal record (see the module's docstring); None without both sides. `logits`:
    the full-logit comparison, whose verdict at a divergence's step decides its call."""
    if not eager or not compiled:
        return None
    both = [
        r
        for r in range(min(len(eager["tokens"]), len(compiled["tokens"])))
        if eager["tokens"][r] is not None and compiled["tokens"][r] is not None
    ]
    found = [d for r in both if (d := divergence(r, eager, compiled)) is not None]
    at = {(x["request"], x["step"]): x["within"] for x in (logits or {}).get("divergences") or []}
    for d in found:
        within = at.get((d["request"], d["step"]))
        if within is not None:
            d.update(logits_within=within, call=TIE if within else NUMERICS)
    return {
        "compared": len(both),
        "equal": len(both) - len(found),
        "divergences": found,
        "tol": eager.get("tol"),
        "method": "per request, compiled greedy tokens against eager's (each side in its own "
        "process); at the first differing step the top-two margin of eager's raw logits: at most "
        "2 * tol * (1 + |top logit|) (the numerics rule's allclose bound, both logits moving) is a "
        "tie, wider a numerics failure" + (LOGITS_DECIDE if logits and "why" not in logits else ""),
    }


def build(run: Serving) -> dict | None:
    """The generation section's dict (report/sections/generation.py reads it); None when the
    target is no Generation."""
    gen = run.ask.get("generation")
    if not gen:
        return None
    out = run.results.get("generate") or {}
    eager = (out.get("eager") or {}).get("side")
    compiled = (out.get("compiled") or {}).get("side")
    reference = (out.get("compiled") or {}).get("steady")
    strategies = judge(list(run.results.get("generate_strategies") or []), out.get("compiled"))
    logits = (out.get("compiled") or {}).get("logits")
    not_measured = {k: v for k, v in run.not_measured.items() if k.startswith("generat")}
    if logits and "why" in logits:
        not_measured["generate_logits"] = logits["why"]
    return {
        "prompts": run.ask["requests"],
        "max_new_tokens": gen.get("max_new_tokens"),
        "generate_kwargs": gen.get("generate_kwargs") or {},
        "eager": eager,
        "compiled": compiled,
        "steady": reference,
        "paired_eager": (out.get("compiled") or {}).get("paired_eager"),
        "tokens": tokens_equal(eager, compiled, logits),
        "strategies": strategies,
        "process_spread": process_spread(strategies, out.get("compiled")),
        "proof": run.results.get("generate_proof"),
        "not_measured": not_measured,
        "loop": gen.get("loop") or None,
        "logits": logits if logits and "why" not in logits else None,
    }


def _pairs(rec: dict | None) -> tuple[dict, dict] | None:
    """(steady request times, paired eager's) of one process's paired replay (None: no pairs)."""
    rec = rec or {}
    eager = (rec.get("paired_eager") or {}).get("total_s")
    if not eager:
        return None
    return steady((rec.get("steady") or {}).get("total_s")), steady(eager)


def judge(rows: list[dict], reference: dict | None) -> list[dict]:
    """Each strategy row's `interval` against the reference (`reference`: the generate part's
    compiled process's results, its steady replay paired with eager). Every strategy's process
    paired its steady replay with eager the same way, so per request each side is a ratio to
    eager of one moment (`per_request`); the interval is the strategy's ratios against the
    reference's, paired by request (`pair_interval`: the median request's ratio of the two
    ratios), widened by the spread of the same ratios
    between the reference's two processes (the `dynamic` row is the second; its own row has no
    interval: it is where the spread comes from). A host phase in one process moves both halves
    of its pairs, not the ratios. run/serving/generate_strategies.py."""
    ref = _pairs(reference)
    again = next((r for r in rows if r.get("name") == "dynamic"), None)
    ref_ratio = per_request(*ref) if ref else {}
    floor = None
    if ref and _pairs(again):
        floor = median_spread(ref_ratio, per_request(*_pairs(again)))
    out = []
    for row in rows:
        iv, pairs = None, _pairs(row)
        if row is not again and ref and pairs:
            iv = pair_interval(per_request(*pairs), ref_ratio, floor, "dynamic")
        out.append({**row, "interval": iv.to_dict() if iv is not None else None})
    return out


def process_spread(rows: list[dict], reference: dict | None) -> float | None:
    """The spread between the reference's two processes (the generate part's compiled one and the
    `dynamic` strategy's) of the compiled / eager per-request ratio that the headline's interval
    measures (`pair_spread`); None: not both."""
    again = next((r for r in rows if r.get("name") == "dynamic"), None)
    a, b = _pairs(reference), _pairs(again)
    return pair_spread(a, b) if a and b else None


def sizes(side: dict | None) -> dict[str, Any]:
    """How many requests and tokens a side served (for progress lines and tests)."""
    side = side or {}
    served = [t for t in side.get("tokens") or [] if t is not None]
    return {"requests": len(served), "tokens": sum(len(t) for t in served)}
