"""What Dynamo could not trace and what it traced again: graph breaks (`GraphBreak`, `Graphs`,
`GraphBreaks`) and recompiles (`Recompile`, `Recompiles`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ... import units
from ..keyed import Keyed
from ..record import Record


@dataclass
class BreakSite(Keyed):
    """Where a break in code the user did not write lies (probes/graph_breaks.py `attribute`): the
    library frame's file, line, function and code; `called`: the API the user's line calls that
    Dynamo cannot trace (function, file, from). Keyed: the probe's keys, in its order."""

    file: str | None = None
    line: int | None = None
    function: str | None = None
    code: str | None = None
    called: dict[str, Any] | None = None


@dataclass
class SkippedFrame(Keyed):
    """The frame Dynamo skipped (ran eagerly), when `frame_skipped`: its qualified name, file, line
    (its def); `entry`: True when it is the call's first frame (the model's forward, the step)."""

    function: str | None = None
    file: str | None = None
    line: int | None = None
    entry: bool | None = None


@dataclass
class GraphBreak(Record):
    """One unique graph break: where the user's code reaches it, why, whose code it is in."""

    OMIT_NONE = (
        "cost_s_per_call",
        "cost_fraction",
        "profiled_cost_s_per_call",
        "cost_method",
        "cost_not_measured",
        "gain_s_per_call",
        "gain_fraction",
        "gain_source",
        "gain_method",
        "gain_fix",
        "skipped_frame",
    )

    id: str | None = None
    reason: str | None = None
    file: str | None = None
    line: int | None = None
    function: str | None = None
    code: str | None = None
    occurrences: int = 1
    origin: str | None = None  # user / library / pytorch / step
    origin_text: str | None = None
    library: str | None = None
    site: BreakSite | None = None
    frame_skipped: bool | None = None
    skipped_frame: SkippedFrame | None = None
    in_loop: bool | None = None
    explanation: str | None = None
    hints: list[str] | None = None
    gb_id: Any = None
    doc_url: str | None = None
    full_reason: str | None = None
    user_stack: list[dict] | None = None
    cost_s_per_call: float | None = None
    cost_fraction: float | None = None
    profiled_cost_s_per_call: float | None = None
    cost_method: str | None = None
    cost_not_measured: str | None = None
    # What fixing it gains per call: "tried" (measured by a fix tried in a fresh process, `gain_fix`)
    # or "bound" (its cost minus the eager ops that would still run; probes/break_cost.py). Never < 0.
    gain_s_per_call: float | None = None
    gain_fraction: float | None = None
    gain_source: str | None = None
    gain_method: str | None = None
    gain_fix: str | None = None

    @property
    def where(self) -> str:
        return f"{self.file or '?'}:{self.line or '?'}"

    @property
    def users(self) -> bool:
        """The break is in the user's own code: theirs to edit."""
        return (self.origin or "user") == "user"

    @property
    def site_text(self) -> str:
        """' — inside torch _detect_is_causal_mask (transformer.py:1245), PyTorch itself': where a
        break in code the user did not write lies; '' for the user's own code."""
        if not self.origin or self.origin == "user":
            return ""
        site = self.site or BreakSite()
        # the user's line calls an API Dynamo cannot trace (loss.backward(), zero_grad)
        if site.called:
            return (
                f" — a call into {self.library or 'torch'} {site.called.get('function') or ''}, "
                f"{self.origin_text}"
            )
        where = units.file_line(site.file, site.line)
        inside = f"{self.library or ''} {site.function or ''} ({where})"
        return f" — inside {inside}, {self.origin_text}".replace("  ", " ")

    @property
    def gain_text(self) -> str:
        """What fixing the break gains per call, and how that is known:
        'fixing it gains 12 µs per call, 3% of a compiled call (measured: tried `…`)' or
        'fixing it gains at most 41 µs per call, 38% (a bound); 3.65 ms outside graphs'."""
        gain, share, spent = self.gain_s_per_call, self.gain_fraction, self.cost_s_per_call
        cost = f"; {units.seconds(spent)} per call outside graphs" if spent is not None else ""
        if gain is None:
            return f"time outside graphs: {units.seconds(spent)} per call" if cost else ""
        if self.gain_source == "tried":
            return (
                f"fixing it gains {units.seconds(gain)} per call, {units.percent(share)} of a "
                f"compiled call (measured: tried `{self.gain_fix}`){cost}"
            )
        return (
            f"fixing it gains at most {units.seconds(gain)} per call, {units.percent(share)} "
            f"(a bound){cost}"
        )

    @property
    def skipped_text(self) -> str | None:
        """'frame skipped: Detector.forward (nms_loop.py:36), the call's entry, runs eagerly'; the
        short form when the frame is not named (older reports); None when no frame was skipped."""
        if not self.frame_skipped:
            return None
        sf = self.skipped_frame or SkippedFrame()
        if not sf.function:
            return "frame skipped: runs eagerly"
        entry = ", the call's entry," if sf.entry else ""
        return f"frame skipped: {sf.function} ({units.file_line(sf.file, sf.line)}){entry} runs eagerly"


@dataclass
class Graphs(Record):
    """Graphs of one call: `count` from the compile you run (`source`; report/counts.py), explain's beside it."""

    OMIT_NONE = ("not_measured", "source", "explain_run_count", "per_graph_source")

    count: int | None = None
    per_graph: list[dict] = field(default_factory=list)
    explain_op_count: int | None = None
    not_measured: str | None = None
    source: str | None = None
    explain_run_count: int | None = None
    per_graph_source: str | None = None


@dataclass
class GraphBreaks(Record):
    """Graph breaks as Dynamo logged them on one compiled call (probes/graph_breaks.py): the compile
    you run (`source`), with explain's run kept as `explain_run_count` (report/counts.py)."""

    OMIT_NONE = ("not_measured", "source", "explain_run_count")

    count: int | None = None
    unique: list[GraphBreak] = field(default_factory=list)
    skipped_frames: int | None = None
    definition: str | None = None
    dynamo_counters_graph_break: int | None = None
    explain_graph_break_count: int | None = None
    unlogged_fallbacks: list[Any] | None = None
    not_measured: str | None = None
    source: str | None = None
    explain_run_count: int | None = None


@dataclass
class Recompile(Record):
    """One recompile: which function, on which input variant, which guard failed, and when:
    `phase` "first call" (inside the first call, e.g. a helper called again from a loop) or
    "variants" (a later call with one of the workload's variants)."""

    OMIT_NONE = ("phase",)

    function: str | None = None
    reason: str | None = None
    raw_reason: str | None = None
    variant: str | None = None
    variant_index: int | None = None
    compile_s: float | None = None
    call_wall_s: float | None = None
    fail_type: str | None = None
    # the recompiled function's file and first line, when in the user's files (for annotations)
    file: str | None = None
    line: int | None = None
    phase: str | None = None


@dataclass
class Recompiles(Record):
    """Recompiles in the first call and over the workload's input variants (probes/recompiles.py):
    `count` is both, `first_call_count` the first call's share (None: not counted, older reports);
    `recompile_time_s` is the variants' only (the first call's are inside the cold first call)."""

    OMIT_NONE = ("not_measured", "first_call_count")

    count: int | None = None
    first_call_count: int | None = None
    events: list[Recompile] = field(default_factory=list)
    limit: int | None = None
    limit_hit: bool | None = None
    limit_messages: list[str] | None = None
    recompile_time_s: float | None = None
    sequence_wall_s: float | None = None
    variants: int | None = None
    variant_errors: list[dict] | None = None
    source: str | None = None
    state: str | None = None
    not_measured: str | None = None
