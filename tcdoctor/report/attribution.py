"""Where the compiled call's memory grows (probes/memory_graphs.py) and where its numbers drift
(probes/drift.py): the report's records, and the parent's join of the per-graph bytes with the cold
compile's per-frame table (the user file and line each graph starts at).

Torch-free, like everything the parent imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .keyed import Keyed
from .numerics_row import NumericsRow
from .record import Record


@dataclass
class MemoryAttribution(Record):
    """The compiled peak above eager's, split by compiled graph (`graphs`, largest first: compile_id,
    bytes, own_peak_bytes, function, file, line), with the compile-time working set beside the
    steady-state growth per call. `grew` False: below the threshold, nothing was profiled."""

    OMIT_NONE = ("not_measured", "scale", "largest", "held")

    grew: bool | None = None
    # compiled footprint - eager's, ≥ 0: held memory + steady peak (`held`), else the peaks alone
    growth_bytes: int | None = None
    held: bool | None = None  # held memory is in the growth (probes/memory_graphs.footprints)
    threshold: str | None = None
    compile_working_set_bytes: int | None = None  # RSS growth during the compiling first call
    graphs: list[dict] = field(default_factory=list)
    outside_regions_bytes: int | None = None
    profiled_peak_bytes: int | None = None
    scale: float | None = None
    largest: dict[str, Any] | None = None
    method: str | None = None
    not_measured: str | None = None


@dataclass
class ModuleDrift(Keyed):
    """One module of the drift search (probes/drift.py): its qualified name ('' the whole model),
    its class and where the class is defined, and its output's worst leaf: passed, error/tol
    (`ratio`), compiled and eager rmse vs fp64, the tolerance. The JSON key of `class_` is `class`."""

    KEYS = {"class_": "class"}

    passed: bool | None = None
    ratio: float | None = None
    err_vs_fp64: float | None = None
    eager_err_vs_fp64: float | None = None
    max_abs_err: float | None = None
    tol: float | None = None
    leaf: str | None = None
    dtype: str | None = None
    name: str | None = None
    class_: str | None = None
    class_file: str | None = None
    class_line: int | None = None


@dataclass
class Bisection(Keyed):
    """PyTorch's CompilerBisector on the drift origin alone, in a fresh process
    (probes/bisect_module.py): its verdict, the backend and subsystem it blames and the command
    that reruns it; or `not_run` (why)."""

    verdict: str | None = None
    backend: str | None = None
    subsystem: str | None = None
    command: str | None = None
    not_run: str | None = None


@dataclass
class DriftOrigin(Record):
    """The deepest module whose own compiled output drifts while its inputs were exact.

    `origin`: qualified name, class, class_file, class_line, err_vs_fp64 (compiled), eager_err_vs_fp64,
    tol; `path`: the modules descended through, each with its error relative to tolerance.
    `bisector`: PyTorch's CompilerBisector on the origin alone in a fresh process (verdict, backend,
    subsystem, command) or `not_run` (why). The tried fix "compile around it" is a row of the report's
    fixes (kind disable_module). `checked` False: numerics passed with margin, nothing was run."""

    OMIT_NONE = ("not_measured", "origin", "bisector", "fp64_unavailable_why")

    checked: bool | None = None
    reason: str | None = None
    origin: ModuleDrift | None = None
    path: list[ModuleDrift] = field(default_factory=list)
    modules_compared: int | None = None
    skipped: list[str] = field(
        default_factory=list
    )  # recorded modules not compared (no tensor input)
    fp64_unavailable_why: str | None = None
    bisector: Bisection | None = None
    method: str | None = None
    not_measured: str | None = None


@dataclass
class DivergingCall(Keyed):
    """The first diverging call of a graph (probes/diverge.py): the numerics rows that failed in
    `outputs`, the Python floats and ints it was called with in `scalars`, by source."""

    compile_id: str | None = None
    call: int | None = None
    call_overall: int | None = None
    scalars: dict[str, Any] | None = None
    outputs: list[NumericsRow] | None = None


@dataclass
class GraphSite(Keyed):
    """Where the diverging graph was compiled: its frame, the guards that fix a scalar, and the
    graphs of the same frame compiled before it (`earlier`: compile_id, guards)."""

    function: str | None = None
    file: str | None = None
    line: int | None = None
    guards: list[str] | None = None
    earlier: list[dict] | None = None


@dataclass
class Rerun(Keyed):
    """The reproducer run alone with one backend (and float64 or not), against eager."""

    backend: str | None = None
    fp64: bool | None = None
    max_abs_err: float | None = None
    allclose: bool | None = None
    outputs: list[dict] | None = None  # per output: output, max_abs_err, allclose


@dataclass
class Miscompile(Record):
    """The first compiled graph, and its first call, whose outputs differ from eager's on the real
    inputs at the graph's boundary (probes/diverge.py), and what kind of error it is.

    `found`: compile_id, call (the graph's own call number), call_overall, shapes, scalars (the
    Python floats and ints of the call), outputs (the numerics rows that failed); `site`:
    function, file, line, guards (its specialisations, `L['t'] == 0.0`). `reruns`: the
    reproducer run alone in a fresh process (inductor, aot_eager, inductor in float64: max_abs_err,
    allclose), or `reruns_not_run` (why). `kind`: compiler_bug, precision, aot (AOTAutograd or a
    decomposition) or None (not classified), `verdict` the words. `script`, `issue`: the
    reproducer's text and the pre-filled issue (only for a bug), `folder` where the child left
    them with the saved inputs (`saved`: each tensor's name, shape, dtype, bytes), and the paths
    they were written to beside the reports. `checked` False: numerics did not fail, nothing ran."""

    OMIT_NONE = ("not_measured", "found", "site", "script", "issue", "reruns_not_run")

    checked: bool | None = None
    reason: str | None = None
    found: DivergingCall | None = None
    site: GraphSite | None = None
    calls_compared: int | None = None
    graphs_compared: int | None = None
    why_none: str | None = None
    kind: str | None = None
    verdict: str | None = None
    reruns: list[Rerun] = field(default_factory=list)
    reruns_not_run: str | None = None
    script: str | None = None
    issue: str | None = None
    folder: str | None = None
    saved: list[dict] = field(default_factory=list)
    saved_bytes: int | None = None
    not_written: str | None = None  # why no reproducer is offered (precision; cannot capture)
    script_path: str | None = None
    inputs_path: str | None = None
    issue_path: str | None = None
    cost_s: float | None = None
    method: str | None = None
    not_measured: str | None = None

    @property
    def is_bug(self) -> bool:
        """A kind PyTorch's tracker takes: the reproducer and the issue text go with it."""
        return self.kind in ("compiler_bug", "aot")


def attach_memory(data: dict) -> None:
    """Join each attributed graph with the cold compile's row of the same compile id (function,
    file, line: where the graph's frame starts), and set the compile-time working set beside the
    steady-state growth. Runs after every fill (`phases.derive`)."""
    from .sections.compile import CompileFrame, CompileGraphs  # the sections import this module

    mem = data.get("memory") or {}
    attr = mem.get("attribution")
    if not attr:
        return
    attr["compile_working_set_bytes"] = mem.get("compile_peak_bytes")
    table = CompileGraphs.from_dict((data.get("compile") or {}).get("graphs"))
    rows = {r.compile_id: r for r in table.rows}
    graphs = []
    for g in attr.get("graphs") or []:
        row = rows.get(g.get("compile_id")) or CompileFrame()
        user = row.user_frame or {}
        graphs.append(
            dict(
                g,
                function=row.function,
                file=user.get("file") or row.file,
                line=user.get("line") or row.line,
            )
        )
    attr["graphs"] = graphs
    if graphs:
        attr["largest"] = graphs[0]
