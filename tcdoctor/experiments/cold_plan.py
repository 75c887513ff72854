"""What the cold child plans once its own phases are done: the experiments the parent runs after the
main analysis, from the cold child's findings (its phase results) and the user's workload.

Method: the compile strategies first (`strategies.plan`: the modes, training ways, shape settings
and regions the options and the graph-break count call for), then, with `--fixes`, the source
patches of the breaks in the user's own files (`proving.plan`: those with no mechanical patch are
listed with why, and no child), then the config fixes and the backend ablation (`fixes.plan`), then
the compile-time remedies (`compile_remedies.plan`) after the fixes, so that the fix budget goes to
the ablation first. The order is the order they run in (experiments/plan.py `in_turn`).

The plan is typed (`ExperimentPlan`); the cold child streams it as its "plan" phase (`to_data`,
the JSON the report keeps) and the parent reads it back (`from_data`): which experiments share
the warm process (`shared`), whether fixes were planned (the headline's processes then time the
spread they are judged with), which breaks got no patch.

Pitfalls: planning runs in the cold child (it needs the workload and torch: strategies.py imports
torch), but this module imports the planners only inside `plan`, so the parent, which never imports
torch, reads the plan with the same type. The guard-skipping stance is not planned here: it needs
the warm child's guard cost (experiments/plan.py `stance_fix`, in the parent).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..options import Options
from ..report.phases.results import MainResults
from ..thresholds import RULES
from .specs import FixSpec, Spec


@dataclasses.dataclass(frozen=True)
class ExperimentPlan:
    """The experiments the cold child planned, in the order they run, and what it did not plan."""

    specs: tuple[Spec, ...] = ()
    # the compile-time remedies not tried, each {"remedy", "why"} (the report's remedy section)
    remedies_not_tried: tuple[dict, ...] = ()
    # the breaks in the user's own code that got no patch, each {"spec"..., "why"}: the report's
    # fixes not tried, with no child
    patches_not_planned: tuple[dict, ...] = ()

    def to_data(self) -> dict[str, Any]:
        """The "plan" phase's data, as the report and the parent read it."""
        return {
            "strategies": [s.to_dict() for s in self.specs],
            "remedies_not_tried": list(self.remedies_not_tried),
            "patches_not_planned": list(self.patches_not_planned),
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any] | None) -> ExperimentPlan:
        """The plan a "plan" phase's data describes; an empty plan when the phase did not finish."""
        data = data or {}
        return cls(
            specs=tuple(Spec.from_dict(d) for d in data.get("strategies") or ()),
            remedies_not_tried=tuple(data.get("remedies_not_tried") or ()),
            patches_not_planned=tuple(data.get("patches_not_planned") or ()),
        )

    @property
    def shared(self) -> tuple[Spec, ...]:
        """The experiments the warm process runs after its own phases (`Spec.shares_process`)."""
        return tuple(s for s in self.specs if s.shares_process)

    @property
    def fixes_planned(self) -> bool:
        """Whether a fix was planned: the headline's processes then time the spread it is judged
        with (experiments/plan.py `timing_steps`)."""
        return any(isinstance(s, FixSpec) for s in self.specs)


def plan(workload: Any, target: str, options: Options, results: dict[str, Any]) -> ExperimentPlan:
    """The cold child's plan from its phase results (`results`, by phase name), in run order."""
    from . import compile_remedies, fixes, proving, strategies

    found = MainResults.of(results)
    planned = strategies.plan(
        workload, options, found.graph_breaks.count, RULES.regional_auto_breaks
    )
    patch_specs, no_patch = [], []
    if options.fixes:
        patch_specs, no_patch = proving.plan(results, target, found.before)
    planned += fixes.plan(found, options, RULES.min_speedup, patch_specs)
    remedies, remedies_not_tried = compile_remedies.plan(workload, options, results)
    planned += remedies  # after the fixes: the fix budget goes to the ablation first
    return ExperimentPlan(tuple(planned), tuple(remedies_not_tried), tuple(no_patch))
