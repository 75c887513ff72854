"""The main analysis's phase results that fixes are planned from, read once, typed: by the cold
child (experiments/cold_plan.py) and by the parent (the stance fix, experiments/plan.py), each as
the record of the section it fills, after the JSON round trip (`as_sent`) so both read the same.
Pitfall: nothing is joined, unlike the report (`derive`, report/counts.py): the break count is the
graph_breaks phase's own, the speedup one process's, as a fix's `before` has always held."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..attribution import DriftOrigin
from ..encoding import as_sent
from ..sections import CompileTime, GraphBreaks, Numerics, Recompiles, Runtime

# the graph_breaks phase's result holds two sections; the breaks are the one read
READ = {"graph_breaks": GraphBreaks, "compile": CompileTime, "runtime": Runtime}
READ.update(numerics=Numerics, recompiles=Recompiles, drift=DriftOrigin)


@dataclass(frozen=True)
class MainResults:
    """The phase results `READ` names, each as its section's record."""

    graph_breaks: GraphBreaks
    compile: CompileTime
    runtime: Runtime
    numerics: Numerics
    recompiles: Recompiles
    drift: DriftOrigin  # a phase that did not run reads as its record's defaults (None)

    @classmethod
    def of(cls, results: Mapping[str, Any]) -> MainResults:
        """From phase results by phase name (a child's, or the parent's from the done events)."""
        sent = as_sent({name: results.get(name) or {} for name in READ})
        sent["graph_breaks"] = sent["graph_breaks"].get("graph_breaks")
        return cls(**{name: rec.from_dict(sent[name]) for name, rec in READ.items()})

    @property
    def before(self) -> dict:
        """The main analysis's figures a fix is compared with (a fix spec's `before`)."""
        rt = self.runtime
        return {
            "graph_breaks": self.graph_breaks.count,
            "recompiles": self.recompiles.count,
            "speedup": rt.speedup,
            "speedup_ci": rt.speedup_ci,
            "numerics_passed": self.numerics.passed,
            "first_call_s": self.compile.first_call_s,
            "faults_per_call": rt.compiled.minor_faults_per_call,
        }
