"""The "Where the compile time goes" section, described once (report/layout.py) for every format:
its headers, each frame's cells and the lines under it (the check and the method). Each format draws
the description (how many rows, escaping, file names shortened); every figure is written by units.py.
"""

from __future__ import annotations

from .. import units
from ..report.layout import Note, Section, Table, Text, where
from ..report.sections import CompileCheck, CompileFrame, CompileGraphs, IsaProbe, TimeScale

TITLE = "Where the compile time goes"
HEADERS = (
    "compile id",
    "function",
    "file:line",
    "ops",
    "cold",
    "warm",
    "runs/call",
    "time/call",
)
UNUSED = "never runs in steady state"


def section(graphs: CompileGraphs | None, isa_probe: IsaProbe | None = None) -> Section | None:
    """Every compiled frame of the cold first call, largest first, the check, which frame paid
    Inductor's one-off CPU probe (`CompileTime.isa_probe`) and the method."""
    if not graphs or not graphs.rows:
        return None
    table = Table(
        HEADERS, [cells(r) for r in graphs.rows], more=lambda shown: rest_line(graphs, shown)
    )
    line = probe_line(isa_probe)
    notes = _check_notes(graphs) + ((Note(line),) if line else ())
    return Section(TITLE, tables=(table,), notes=notes, method=graphs.method or "")


def probe_line(probe: IsaProbe | None) -> str | None:
    """Which frame's cold time holds Inductor's CPU ISA probe, and that a persistent cache folder
    never pays it again; None when there was no probe to name."""
    if not probe or probe.seconds is None:
        return None
    who = f"frame {probe.frame}'s" if probe.frame else "the first call's"
    return (
        f"{who} cold time includes {units.seconds(probe.seconds)} of Inductor's CPU ISA probe "
        f"({units.count(probe.builds)} test builds): its builds are paid once per empty "
        "cache folder (a fresh container, CI), not by your model's graphs; a cache folder that "
        "persists pays them once (every new process still runs its load checks)"
    )


def _function(row: CompileFrame) -> Text:
    """The frame's function; for code that is not the user's, its owner and the user's line that
    led there."""
    name = row.function or units.NA
    if not row.origin or row.origin == "user":
        return Text(name)
    user = row.user_frame
    at = where(user["file"], user["line"]) if user else None
    owner = row.owner or row.origin
    return Text(
        f"{name} ({owner}" + (f", from {at}" if at else "") + ")",
        f"{name} ({owner}" + (f", from {at.short}" if at else "") + ")",
    )


def cells(row: CompileFrame) -> list[str]:
    """One frame's cells, in HEADERS order (a file's `Text` carries the terminal's short form).

    time/call is the frame's own time: its region's median per call without the regions nested in
    it (a resume frame runs inside the region of the frame whose graph broke), so the rows do not
    count a nested frame twice.
    """
    return [
        row.compile_id or units.NA,
        _function(row),
        where(row.file, row.line),
        units.count(row.ops),
        units.seconds(row.cold_s),
        units.seconds(row.warm_s),
        units.mean_count(row.runs_per_call)
        + (f" ({UNUSED})" if row.unused_in_steady_state else ""),
        units.seconds(row.time_per_call),
    ]


def rest_line(graphs: CompileGraphs, shown: int) -> str | None:
    """'… and 3 more frames (0.12 s)' under a table that shows the first `shown` rows only."""
    rest = graphs.rows[shown:]
    if not rest:
        return None
    return f"… and {len(rest)} more frame(s) ({units.seconds(sum(r.cold_s for r in rest))} cold)"


TIME_PER_CALL = (
    "time/call: the frame's own time per steady-state call (median of its compiled region, "
    "without the frames' regions nested in it)"
)


def check_lines(graphs: CompileGraphs, method: bool = True) -> list[str]:
    """The lines under the table as text; `method=False` leaves out what time/call is (the
    terminal shows figures, the method stays in JSON, HTML and Markdown)."""
    return [n.text for n in _check_notes(graphs) if method or not n.how]


def _check_notes(graphs: CompileGraphs) -> tuple[Note, ...]:
    """The check (the rows' sum beside the first call's compile part), what time/call is (a `how`
    line), and what the table leaves out."""
    out = [Note(sum_line(graphs.check)), Note(TIME_PER_CALL, how=True)]
    line = scale_line(graphs.time_scale)
    if line:
        out.append(Note(line, how=True))
    if graphs.regions_not_in_table:
        out.append(
            Note(
                "compiled after the first call and run in steady state (not in the table): "
                + ", ".join(graphs.regions_not_in_table)
            )
        )
    return tuple(out)


def sum_line(check: CompileCheck) -> str:
    """The frames' sum beside the first call's compile part (first call − eager call). The part
    is an estimate: when the eager call ran longer than the compiled call's own execution, the
    frames' timers (inside the first call) sum past it, and the line says so rather than print
    a part larger than its whole."""
    rows, part = check.rows_cold_s, check.first_call_compile_s
    if rows is not None and part is not None and rows > part:
        return (
            f"frames sum to {units.seconds(rows)}: all of the first call's compile time (first "
            f"call − eager call estimates it at {units.seconds(part)}, {units.seconds(rows - part)} "
            "short: the eager call ran longer than the compiled call's own execution)"
        )
    return (
        f"frames sum to {units.seconds(rows)} of the first call's {units.seconds(part)} compile "
        f"time (first call − eager call; coverage {units.percent(check.coverage)})"
    )


def scale_line(scale: TimeScale | None) -> str | None:
    """How time/call relates to the profiled times (report/compile_joins.scale_to_call)."""
    if not scale:
        return None
    if not scale.scaled:
        return f"time/call is profiler time, not scaled ({scale.why})"
    median = units.seconds(scale.compiled_median_s)
    profiled = units.seconds(scale.profiled_call_s)
    factor = f"{scale.factor:.2f}"
    if scale.sum_rescaled:
        return (
            f"time/call is profiled time × {factor}, so the frames' times sum to the compiled "
            f"median {median} (median profiled call {profiled})"
        )
    if scale.factor < 1.0:
        return (
            f"time/call is profiled time × {factor}: the compiled median {median} ÷ the median "
            f"profiled call {profiled} (the profiler slows each call)"
        )
    return f"time/call is profiled time: the median profiled call {profiled} is no slower than the compiled median {median}"
