"""Typed report sections: what an analysis found, as objects with their derived figures.

Each section of the JSON report is a `Record` dataclass in this package, one module per family:
`runtime` (speed), `compile` (compile time, guards), `outputs` (memory, numerics), `breaks` (graph
breaks, recompiles), `strategies` (the ways of compiling tried, cold-start remedies), `fixes` (tried
fixes, source patches, which layer), `verdict`, `distributed` (ranks, the structured compile logs),
`serving` (the traffic replayed: issue 55);
every name is importable from `report.sections` as before. The phase children still send
plain dicts over the pipe (their wire format); `Report.from_dict` (tcdoctor/report/model.py) reads the
assembled dict into these classes once, and everything after that — the verdict, the tried-fix
advice, `check`, `diff` and every renderer — reads attributes, not string keys.

The base class (reading, writing, the JSON Schema and the check of a file against it, all from
the fields' annotations) is `Record` in report/record.py; the rules the derived figures apply
(`Runtime.significantly_faster(rules)`, `Guards.overhead_fraction`, break-even) are in
report/rules.py. A section here is its fields, its derived figures, and how an older file's keys map
onto it (`upgrade`); those listed in a class's `DERIVED` are also written to the JSON for machines
that read it, and ignored on load. Keys a section does not model are kept in `extra`.

Torch-free, like everything `tcdoctor report` imports.
"""

from __future__ import annotations

from ..attribution import DriftOrigin, MemoryAttribution, Miscompile
from ..record import Record
from ..rules import slower_than_eager
from .breaks import GraphBreak, GraphBreaks, Graphs, Recompile, Recompiles
from .compile import (
    GUARDS_BY_PROFILER,
    GUARDS_BY_REMOVAL,
    CompileCheck,
    CompileFrame,
    CompileGraphs,
    CompileTime,
    Guards,
    IsaProbe,
    TimeScale,
    guard_cost,
)
from .distributed import DdpSummary, Distributed, Divergence, RankRow, SlowestRank, TorchTrace
from .fixes import Ablation, FixRow, FixSide, NotTried, Patch
from .outputs import Memory, Numerics
from .runtime import Profile, Runtime, Timing, ci_bounds, vs_eager
from .serving import Serving
from .strategies import CompileRemedies, RegionRow, Regions, RemedyRow, Strategies, StrategyRow
from .verdict import Advice, Verdict

__all__ = [
    "Ablation",
    "Advice",
    "CompileCheck",
    "CompileFrame",
    "CompileGraphs",
    "CompileRemedies",
    "CompileTime",
    "Distributed",
    "Divergence",
    "DriftOrigin",
    "Miscompile",
    "NotTried",
    "FixRow",
    "FixSide",
    "GUARDS_BY_PROFILER",
    "GUARDS_BY_REMOVAL",
    "GraphBreak",
    "GraphBreaks",
    "Graphs",
    "Guards",
    "IsaProbe",
    "Memory",
    "MemoryAttribution",
    "Numerics",
    "Patch",
    "Profile",
    "RankRow",
    "SlowestRank",
    "DdpSummary",
    "Recompile",
    "Recompiles",
    "Record",
    "RegionRow",
    "Regions",
    "RemedyRow",
    "Runtime",
    "Serving",
    "Strategies",
    "StrategyRow",
    "TimeScale",
    "Timing",
    "TorchTrace",
    "Verdict",
    "ci_bounds",
    "guard_cost",
    "slower_than_eager",
    "vs_eager",
]
