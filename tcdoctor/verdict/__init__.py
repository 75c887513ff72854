"""The verdict of a report: the decision, its reasons and advice, from the report's figures only.

`decide` is the pure entry point (figures -> rules -> decision -> recommendations); `judge` puts
the verdict on a report together with what its tried fixes showed (`tried.py`) and, for a
distributed run, what its ranks showed (`distributed.py`); `with_verdict` recomputes it on a copy.
A Generation's headline is the generation's decision (`generation.py`: `headline`, read from the
same evidence as its operating model, so the two never disagree).
Every threshold lives in `thresholds.Rules` (its defaults: `thresholds.RULES`).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from ..report.rules import break_even
from ..report.sections import Verdict
from ..thresholds import HORIZONS, RULES, Rules
from . import generation, tried
from .advice import ADVICE_RULES, advice_item, numerics_caveat
from .decision import decision
from .distributed import extend_verdict
from .figures import Figures
from .recommend import recommend
from .serving import operating_model

if TYPE_CHECKING:
    from ..report.model import Report


def judge(report: Report, **rules: Any) -> None:
    """The verdict, plus what the tried fixes and the ablation showed (pure: recomputing gives the same)."""
    report.verdict = decide(report, **rules)
    report.verdict.advice += tried.advice(report)
    tried.annotate(report)
    extend_verdict(report)  # a distributed run's reasons and advice (distributed.py)


def with_verdict(report: Report, **rules: Any) -> Report:
    """A copy of the report with the verdict recomputed (e.g. another --expected-calls)."""
    out = copy.deepcopy(report)
    judge(out, **rules)
    return out


def decide(
    report: Report, expected_calls: int | None = None, min_speedup: float | None = None
) -> Verdict:
    """The verdict of a report: decision, reasons, advice, strategy recommendations, break-even."""
    overrides = {"expected_calls": expected_calls, "min_speedup": min_speedup}
    rules = RULES.replace(**{k: v for k, v in overrides.items() if v is not None})
    fig = Figures.from_report(report)
    advice = [item for rule in ADVICE_RULES for item in rule(fig, rules)]
    verdict, reasons = decision(fig, rules)
    gen = generation.judged(report, rules)
    if gen is not None:  # a Generation: the headline is the generation's decision (generation.py)
        verdict, reasons = generation.headline(gen, (verdict, reasons))
    reasons += numerics_caveat(fig, verdict)
    recs = recommend(report, rules)
    for topic, r in recs.items():
        source = "modes" if topic == "mode" else topic
        advice.append(advice_item(f"strategy: {topic}", r["text"], f"strategies.{source}"))
    be_cold, be_warm = fig.break_even_cold, fig.break_even_warm
    # the cold break-even the verdict judges is a fresh container's (Inductor's CPU ISA probe
    # included: a CI job, a new container or server pays it); where the probe's builds were read,
    # a machine's that has compiled before is given beside it ("probed"), never judged
    probed = report.compile.probed_cold_s
    be_probed = break_even(probed, fig.eager_s, fig.compiled_s) if probed is not None else None
    horizon = int(rules.expected_calls)
    return Verdict(
        decision=verdict,
        reasons=reasons,
        advice=advice,
        recommendations=recs,
        break_even_calls=be_cold["calls"] if be_cold else None,
        break_even={
            "cold": be_cold,
            "warm": be_warm,
            **({"probed": be_probed, "probe_build_s": _build_s(report)} if be_probed else {}),
            "expected_calls": horizon,
            "horizons": dict(HORIZONS),
            **_remedy_break_even(fig, rules),
        },
        rules=rules.to_dict(),
        serving=operating_model(report, verdict, rules),  # the traffic's model (serving.py)
    )


def _build_s(report: Report) -> float | None:
    """The builds of Inductor's CPU ISA probe in the cold first call (compile.isa_probe)."""
    probe = report.compile.isa_probe
    return probe.build_s if probe else None


def _remedy_break_even(fig: Figures, rules: Rules) -> dict:
    """{"remedy": ...}: the best measured compile-time remedy's break-even, when one was measured."""
    if not fig.remedies:
        return {}
    best = fig.best_remedy(rules)
    if best is None:
        return {"remedy": None}
    return {
        "remedy": {
            "name": best.name,
            "title": best.title,
            "calls": best.steps_to_repay,
            "startup_s": best.startup_s,
            "line": best.line,
            "speed": fig.remedy_speed_cost(best),
        }
    }
