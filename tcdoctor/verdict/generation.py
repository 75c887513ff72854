"""The operating model for a Generation (issue 60): which cache and compile setting to serve
`generate` with, and the figures behind it. Reads the report's generation section only
(report/sections/generation.py); verdict/serving.py hands a Generation's report here.

Method: the serving section's one paired rule (report/processes/paired.py `ratio_interval`: the
ratio of median request times, prompt to last token, paired by request, a 95% bootstrap interval
widened by the spread between the reference's two processes, `GenerationSection.process_spread`).
- Compiled greedy tokens that leave eager's beyond the numerics rule (a "numerics" divergence) rule
  compiling out: eager, with the request and step named. A near-tie does not.
- The reference (the forward compiled with the user's generate_kwargs, once compiled: the compiled process's
  steady replay) against eager: compiling pays only when it decides "faster".
- The cache strategy named is the fastest whose interval against the reference decides "faster"
  (the strategies' table); none decides: the reference's setting.
Pitfalls: eager's requests are its one replay (after an untimed eager forward), the reference's
its second (its compiles done): both steady. Without a second reference process no spread is
known and nothing decides across processes (the text says so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import units
from ..report.processes.claims import Claim
from ..report.processes.paired import ratio_interval, steady
from ..report.sections.generation import GenerationSection
from ..report.sections.serving import OperatingModel

if TYPE_CHECKING:
    from ..report.model import Report


def operating_model(report: Report) -> OperatingModel | None:
    """The Generation's operating model (None: no generation section)."""
    g = report.serving.generation if report.serving is not None else None
    if g is None:
        return None
    bad = g.tokens.numerics_failures if g.tokens else []
    iv = None
    if g.eager is not None and g.steady is not None:
        iv = ratio_interval(
            steady(g.steady.total_s), steady(g.eager.total_s), g.process_spread, "eager"
        )
    name, strategy_text = _best(g)
    figures = [f"compiled (your generate_kwargs, steady) / eager request time: {units.paired(iv)}"]
    if bad:
        d = bad[0]
        text = (
            f"eager: compiled greedy tokens leave eager's at request {d.request}, step {d.step} "
            f"(top-two margin {units.sci(d.margin_eager)}, beyond the numerics rule's "
            f"{units.sci(d.tie_bound)})"
        )
        return OperatingModel(model="eager", text=text, figures=figures)
    if iv is None or iv.claim is not Claim.FASTER:
        text = "eager: compiling the forward is not shown faster on these prompts"
        text += f" ({units.paired(iv)})" if iv is not None else " (too few requests to judge)"
        return OperatingModel(
            model="eager", text=text, figures=figures, strategy_text=strategy_text
        )
    setting = f"the {name} cache strategy" if name else "your generate_kwargs"
    text = f"JIT: model.forward compiled, with {setting} ({units.paired(iv)} vs eager)"
    return OperatingModel(
        model="jit", text=text, figures=figures, strategy=name, strategy_text=strategy_text
    )


def _best(g: GenerationSection) -> tuple[str | None, str]:
    """The fastest strategy whose interval decides "faster" against the reference, and its line."""
    faster = [
        r for r in g.strategies if r.interval is not None and r.interval.claim is Claim.FASTER
    ]
    if not faster:
        judged = [r for r in g.strategies if r.interval is not None]
        if not judged:
            return None, ""
        return None, "no cache strategy is faster than your generate_kwargs' beyond the noise"
    best = min(faster, key=lambda r: r.interval.ratio)  # type: ignore[union-attr]
    return best.name, f"best cache strategy: {best.label} ({units.paired(best.interval)})"
