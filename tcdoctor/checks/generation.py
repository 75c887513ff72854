"""The gate's checks on a Generation (issue 60): `--max-ttft-ms`, `--max-itl-p99-ms`,
`--min-tokens-per-s`, each on the compiled side of the generation section (report/sections/
generation.py): the forward compiled as the user compiles it, served by generate from a cold
start, so the first requests' compiles are in the figures, as a server's first users see them.
A report without a generation section is "not measured (why)", which fails: an unmeasured figure
never passes.
"""

from __future__ import annotations

from .. import units
from ..report.model import Report
from .outcome import CheckResult, judged_in

NO_GENERATION = (
    "no generation section: the target is no tcdoctor.Generation (a model served by generate)"
)


def _compiled(report: Report):
    s = report.serving
    g = s.generation if s is not None else None
    return g.compiled if g is not None else None


def _why(report: Report) -> str:
    s = report.serving
    g = s.generation if s is not None else None
    if g is None:
        return NO_GENERATION
    return g.not_measured.get("generate") or "the compiled side did not finish"


def ttft(report: Report, bound: float) -> CheckResult:
    """--max-ttft-ms: the compiled side's time-to-first-token p99, in ms (compiles included)."""
    side = _compiled(report)
    value = side.ttft_p99_s * 1e3 if side is not None and side.ttft_p99_s is not None else None
    return judged_in("time to first token p99 (ms)", value, bound, True, "ms", _why(report))


def itl_p99(report: Report, bound: float) -> CheckResult:
    """--max-itl-p99-ms: the compiled side's inter-token latency p99, in ms (compiles included)."""
    side = _compiled(report)
    value = side.itl_p99_s * 1e3 if side is not None and side.itl_p99_s is not None else None
    return judged_in("inter-token latency p99 (ms)", value, bound, True, "ms", _why(report))


def tokens_per_s(report: Report, bound: float) -> CheckResult:
    """--min-tokens-per-s: the compiled side's new tokens / the sum of its request times."""
    side = _compiled(report)
    value = side.tokens_per_s if side is not None else None
    return judged_in("tokens/s (compiled)", value, bound, False, "tokens/s", _why(report))


def warmup_proof(report: Report) -> CheckResult:
    """--require-warmup-proof on a Generation: the warm-up derived from the compiled side's
    compiles (run/serving/generate_proof.py) proven in a fresh process under fail_on_recompile;
    each request that would have compiled is a detail line."""
    name, limit = "warm-up proof", "proven"
    g = report.serving.generation  # type: ignore[union-attr]
    proof = g.proof if g is not None else None
    if not proof:
        why = g.not_measured.get("generate_proof") if g is not None else NO_GENERATION
        return CheckResult(name, units.NA, limit, False, f"{units.NA} ({why or 'no proof'})")
    n = len(proof.get("requests") or [])
    if proof.get("proven"):
        return CheckResult(name, limit, limit, True, f"the derived warm-up ({n} prompt(s)) proven")
    would = proof.get("would_compile") or []
    details = tuple(
        f"request {w.get('request')} {w.get('shapes') or ''} at step {w.get('step')}: "
        f"{w.get('message')}"
        for w in would
    )
    reason = (
        f"not proven: request {would[0].get('request')} would compile"
        + (f", and {len(would) - 1} more" if len(would) > 1 else "")
        if would
        else f"not proven ({proof.get('stopped') or 'a prompt was not served'})"
    )
    return CheckResult(name, "not proven", limit, False, reason, details=details)
