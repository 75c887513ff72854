"""A distributed run's reasons and advice: ranks that diverge (hang risks) and compile skews
against the process group's timeout, from the report's `distributed` section."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..report.distributed import SKEW_WARN_FRACTION
from ..report.sections import Advice, Distributed

if TYPE_CHECKING:  # report/model.py imports this module: the class is for annotations only
    from ..report.model import Report
TOPIC = "distributed"
REASON_PREFIX = "Distributed: "


# -- verdict -----------------------------------------------------------------------
def advice(report: Report) -> tuple[list[str], list[Advice]]:
    """Reasons and advice items that the distributed figures call for (empty when there is nothing to say)."""
    sec = report.distributed
    if not sec:
        return [], []
    reasons, items = _divergence_advice(sec)
    more_reasons, more_items = _skew_advice(sec)
    reasons += more_reasons
    items += more_items
    failed = [r.rank for r in sec.ranks if r.finished is False]
    if failed:
        reasons.append(
            f"{REASON_PREFIX}rank(s) {', '.join(map(str, failed))} did not finish: see the errors"
        )
    return reasons, items


def _divergence_advice(sec: Distributed) -> tuple[list[str], list[Advice]]:
    """Ranks that compile differently: one reason for all, one advice item per divergence."""
    divs = sec.divergences
    if not divs:
        return [], []
    kinds = ", ".join(d.what for d in divs)
    reasons = [f"{REASON_PREFIX}ranks compile differently ({kinds}): a collective hang risk"]
    items = [
        Advice(
            topic=TOPIC,
            text=f"{d.text}. Risk: {d.risk}. Make every rank compile the same "
            "graphs: same input shapes (drop_last=True, pad the last batch, or torch._dynamo.mark_dynamic "
            "on the batch dimension), no rank-dependent Python branches in forward.",
            evidence=f"distributed.divergences: {d.kind}",
        )
        for d in divs
    ]
    return reasons, items


def _skew_advice(sec: Distributed) -> tuple[list[str], list[Advice]]:
    """First-call skews that come close to the process-group timeout (the fast ranks wait)."""
    from ..units import seconds

    reasons: list[str] = []
    items: list[Advice] = []
    timeout = sec.timeout_s
    for key, val, label, fix in (
        (
            "compile_skew_s",
            sec.compile_skew_s,
            "cold first calls",
            "warm every rank's cache before the job (TORCHINDUCTOR_CACHE_DIR on "
            "shared storage, or torch.compiler.save_cache_artifacts / load_cache_artifacts) or raise the timeout",
        ),
        (
            "mixed_cache_skew_s",
            sec.mixed_cache_skew_s,
            "a cold rank's first call and a warm rank's",
            "give every rank the same cache (a partially "
            "warm cluster waits for its coldest rank) or raise the process-group timeout past the cold compile",
        ),
    ):
        if val is not None and timeout and val >= SKEW_WARN_FRACTION * timeout:
            reasons.append(
                f"{REASON_PREFIX}{label} differ by {seconds(val)}, {val / timeout:.0%} of the process group's "
                f"{seconds(timeout)} timeout"
            )
            items.append(
                Advice(
                    topic=TOPIC,
                    text=f"{label[0].upper() + label[1:]} differ by {seconds(val)} across ranks, "
                    f"{val / timeout:.0%} of the {seconds(timeout)} timeout: the fast ranks wait at the first "
                    f"collective and a larger model passes the timeout. Fix: {fix}.",
                    evidence=f"distributed.{key} / distributed.timeout_s",
                )
            )
    return reasons, items


def extend_verdict(report: Report) -> None:
    """Add the distributed reasons and advice to the verdict (idempotent; nothing for single-process reports)."""
    if not report.distributed:
        return
    v = report.verdict
    v.reasons = [r for r in v.reasons or [] if not str(r).startswith(REASON_PREFIX)]
    v.advice = [a for a in v.advice or [] if a.topic != TOPIC]
    reasons, items = advice(report)
    v.reasons += reasons
    v.advice += items
