"""Where the compile time goes: one row per frame (graph) the cold first call compiled.

Method. The cold first call's `CompilationMetrics` entries (`torch._dynamo.utils.
get_compilation_metrics()`, taken right after the call) are grouped by `compile_id` ("F/C": frame
F, its C-th compile): a frame's forward entry and, in training, the entry of its backward graph
(compiled when the first backward runs, same id, no frame fields) make one row. Each row's seconds
are split by compiler phase with `first_call.phase_breakdown` (Dynamo = frame - backend,
AOTAutograd, Inductor lowering, codegen + C++/Triton compile), the very split the report's phase
totals use, so the rows add up to `compile.phases.total_compile_s` exactly. Rows are sorted by
cold seconds, largest first. Then:

- warm: the same ids in a warm-cache process (`join_warm`), with the entries' local cache hit and
  miss counts (FX graph cache, AOTAutograd cache);
- steady state: how many times each frame's `Torch-Compiled Region: F/C` event runs per profiled
  call and its median time per call (`per_call_regions` in the profiling child, joined in the
  parent; `runs_per_call` does both in one process); a frame compiled by the first call that
  never runs later is flagged `unused_in_steady_state`;
- the check (`coverage`): the rows' sum against the compile part of the cold first call, measured
  as first_call.py measures it (the first call's wall time minus the eager call's).

Pitfalls:
- Graph breaks per frame: `CompilationMetrics.num_graph_breaks` is not filled in torch 2.13, so
  the count comes from the graph-break log's records and the compile id each was logged under
  (`graph_breaks.break_sites`). Without them, a frame's `restart_reasons` are counted instead: a
  break restarts the frame's analysis, but a data-dependent branch (`if tensor.sum() > 0`) ends a
  graph without a restart reason, so that fallback undercounts (`graph_breaks_source` says which).
- Whose code: `torch.compile(module)` compiles the module's own `forward` (a user file), but a
  frame can be torch's or a library's (`Adam.step`, a `_use_grad` wrapper): such a row gives the
  owner (`userframes.origin_of`) and the deepest user frame of the Python stack Dynamo recorded at
  compile time (`CompilationMetrics.stack_trace`, usually the user's line that called into it).
- Compile ids are assigned in the order frames are first compiled in a process and restart at 0
  after `torch._dynamo.reset()`; the warm process and the profiled calls are matched to the cold
  rows by id, so `join_warm` also checks that the id names the same function and file there.
  The profiled calls carry no function names: they are matched by id alone, which holds while
  the profiling process compiled the same frames in the same order (the warm child does).
- Coverage is not 1: the compile part also holds Dynamo's work outside its per-frame timer (frame
  conversion, the first cache lookup, building the code object's wrappers), and the eager call
  stands in for the compiled code's execution inside the first call. It is a ratio, >= 0, and
  may exceed 1 when the eager call was slower than the compiled execution it stands for.
- The buffer of metrics keeps only 64 entries unless `dynamo_state.fresh()` raised its limit.

Where it runs: `probe` in the compile phase of the cold child (probes/compile_phases.py), `table` again in
the warm child's compile_warm, `per_call_regions` in the profile phase (probes/profile.py); the
parent joins the three with `report/compile_joins.py` (torch-free: `table` imports first_call,
hence torch, and the report layer imports no probe), and the report keeps them as
`compile.graphs` (`report.sections.CompileGraphs`).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, fields
from typing import Any, Iterable

from ..report.compile_joins import RegionCounts, id_key, join_runs, join_warm_rows
from ..target.userframes import ORIGINS, deepest_user_frame, origin_of, readable_function
from .break_cost import REGION  # the compiled regions
from .guards import CALL_MARK  # profile.py's call marks

Event = tuple[str, int, int]  # (name, start ns, duration ns)

METHOD = (
    "one row per compile id of the cold first call's CompilationMetrics entries (a frame's forward "
    "entry plus its backward graph's entry), split by phase as compile.phases (first_call."
    "phase_breakdown), sorted by cold seconds; warm = the same id's entries in the warm-cache "
    "process; runs per call and time per call (median over profiled steady-state calls, with and "
    "without the regions nested in it) from the 'Torch-Compiled Region: F/C' events; coverage = "
    "sum of rows / (cold first call - eager first call)"
)

CACHE_FIELDS = {
    "fx_graph_cache_hit": "inductor_fx_local_cache_hit_count",
    "fx_graph_cache_miss": "inductor_fx_local_cache_miss_count",
    "aot_autograd_cache_hit": "aotautograd_local_cache_hit_count",
    "aot_autograd_cache_miss": "aotautograd_local_cache_miss_count",
}
PHASE_KEYS = (
    "dynamo_s",
    "aot_autograd_s",
    "inductor_lowering_s",
    "codegen_and_cpp_or_triton_s",
    "backward_graphs_s",
)


# -- the cold table -------------------------------------------------------------------------


@dataclass
class Entry:
    """One CompilationMetrics entry: the fields the table reads, read once (`of`)."""

    compile_id: str | None = None
    co_name: str | None = None
    co_filename: str | None = None
    co_firstlineno: int | None = None
    is_forward: bool | None = None
    graph_op_count: int | None = None
    graph_node_count: int | None = None
    guard_count: int | None = None
    entire_frame_compile_time_s: float | None = None
    backend_compile_time_s: float | None = None
    inductor_compile_time_s: float | None = None
    code_gen_time_s: float | None = None
    recompile_reason: str | None = None
    num_graph_breaks: int | None = None
    restart_reasons: list[str] | None = None
    stack_trace: list[str] | None = None
    fail_type: str | None = None
    inductor_fx_local_cache_hit_count: int | None = None
    inductor_fx_local_cache_miss_count: int | None = None
    aotautograd_local_cache_hit_count: int | None = None
    aotautograd_local_cache_miss_count: int | None = None

    @classmethod
    def of(cls, m: Any) -> Entry:
        """A CompilationMetrics entry (dataclass or dict), JSON-safe: a field this torch does not
        have is None; the compile id a string, sets (restart_reasons) sorted lists."""
        get = m.get if isinstance(m, dict) else (lambda k, d=None: getattr(m, k, d))
        e = cls(**{f.name: get(f.name, None) for f in fields(cls)})
        if e.compile_id is not None:
            e.compile_id = str(e.compile_id)
        if e.restart_reasons is not None:
            e.restart_reasons = sorted(str(r) for r in e.restart_reasons)
        if e.stack_trace is not None:
            e.stack_trace = [str(s) for s in e.stack_trace]
        return e


def _phases(entries: list[Entry]) -> dict:
    """first_call's split of one compile id's entries (imported here: first_call needs torch)."""
    from .first_call import phase_breakdown

    return phase_breakdown(entries)


_STACK_LINE = re.compile(r"^Line: (?P<line>-?\d+), Name: (?P<fn>.*?), Filename: (?P<file>.*)$")


def _stack_frames(stack: Iterable[str] | None) -> list[tuple[str, int, str]]:
    """CompilationMetrics.stack_trace ("Line: 19, Name: fn, Filename: f.py", outermost first)."""
    frames = []
    for s in stack or ():
        m = _STACK_LINE.match(s.strip())
        if m:
            frames.append((m["file"], int(m["line"]), m["fn"]))
    return frames


def _owner(frame: Entry | None) -> dict:
    """Who owns the frame's code; for code that is not the user's, the user's line that led there."""
    if frame is None:
        return {"origin": None, "owner": None, "user_frame": None}
    origin = origin_of(frame.co_filename)
    user = None
    if origin != "user":
        found = deepest_user_frame(_stack_frames(frame.stack_trace)[:-1])
        user = {k: found[k] for k in ("file", "line", "function")} if found else None
    return {"origin": origin, "owner": ORIGINS.get(origin, origin), "user_frame": user}


def _break_count(cid: str, frame: Entry, sites: list[dict] | None) -> tuple[int | None, str]:
    if sites is not None:
        return sum(1 for s in sites if s.get("compile_id") == cid), "graph-break log"
    if frame.num_graph_breaks is not None:
        return int(frame.num_graph_breaks), "CompilationMetrics.num_graph_breaks"
    if frame.restart_reasons is not None:
        return len(frame.restart_reasons), "CompilationMetrics.restart_reasons (undercounts)"
    return None, "not recorded"


def _cache(entries: list[Entry]) -> dict:
    """Local cache hits and misses over a compile id's entries (None where no entry has the field)."""
    out = {}
    for key, field in CACHE_FIELDS.items():
        vals = [v for e in entries if (v := getattr(e, field)) is not None]
        out[key] = int(sum(vals)) if vals else None
    return out


def _row(cid: str, entries: list[Entry], sites: list[dict] | None) -> dict:
    frame = next((e for e in entries if e.co_name or e.co_filename), None)
    f = frame or Entry()  # a compile id with no frame entry: every frame field None
    phases = _phases(entries)
    breaks, source = _break_count(cid, f, sites)
    recompile = next((e.recompile_reason for e in entries if e.recompile_reason), None)
    return {
        "compile_id": cid,
        "function": readable_function(f.co_name),
        "file": f.co_filename,
        "line": f.co_firstlineno,
        **_owner(frame),
        "ops": f.graph_op_count,
        "nodes": f.graph_node_count,
        "guards": f.guard_count,
        **{k: phases[k] for k in PHASE_KEYS},
        "cold_s": phases["total_compile_s"] or 0.0,
        "recompile_reason": recompile,
        "graph_breaks": breaks,
        "graph_breaks_source": source,
        "fail_type": next((e.fail_type for e in entries if e.fail_type), None),
        "entries": len(entries),
        "cache": _cache(entries),
    }


def table(metrics: list, break_sites: list[dict] | None = None) -> list[dict]:
    """One row per compile id of ONE call's metrics entries, largest cold seconds first.

    `metrics`: CompilationMetrics objects or dicts (`Entry.of`), e.g. the entries a first call
    added. `break_sites`: `dynamo_state.break_sites(...)` of the same call (graph breaks per frame;
    without it the count falls back to `restart_reasons`, see the module's pitfalls).
    """
    grouped: dict[str, list[Entry]] = {}
    for m in metrics:
        e = Entry.of(m)
        grouped.setdefault(e.compile_id or "?", []).append(e)
    rows = [_row(cid, entries, break_sites) for cid, entries in grouped.items()]
    rows.sort(key=lambda r: (-r["cold_s"], id_key(r["compile_id"])))
    return rows


# -- warm cache ---------------------------------------------------------------------------


def _as_rows(warm: list) -> list[dict]:
    """The warm process's rows: already tabled (torch-free, what a warm child sends) or metrics."""
    if all(isinstance(w, dict) and "cold_s" in w for w in warm):
        return list(warm)
    return table(warm)


def join_warm(rows: list[dict], warm_metrics: list) -> list[dict]:
    """Each row with `warm_s` and `warm_cache` from a warm-cache process's first call
    (`compile_joins.join_warm_rows`); `warm_metrics` are that call's `table()` rows (torch-free,
    what the warm child sends) or its metrics entries."""
    return join_warm_rows(rows, _as_rows(warm_metrics))


# -- steady state -------------------------------------------------------------------------


def _regions_of(regions: list[tuple[str, int, int]]) -> RegionCounts:
    """{compile id: [runs, inclusive ns, self ns]} over the regions (id, start, end) of one call.

    Self = inclusive minus the regions directly nested in it (a resume frame's region runs inside
    the region of the frame whose graph broke): one sweep over the regions sorted by start, outer
    first, with a stack of the open ones, so a call of many regions stays linear.
    """
    out: RegionCounts = {}
    stack: list[list] = []  # [end, accumulator] of the open regions
    for cid, s, e in sorted(regions, key=lambda r: (r[1], -r[2])):
        while stack and stack[-1][0] < e:
            stack.pop()
        acc = out.setdefault(cid, [0, 0, 0])
        acc[0] += 1
        acc[1] += e - s
        acc[2] += e - s
        if stack:
            stack[-1][1][2] -= e - s  # the time is the enclosing region's, not its own
        stack.append([e, acc])
    for acc in out.values():
        acc[2] = max(0, acc[2])
    return out


def per_call_regions(events: list[Event]) -> list[RegionCounts]:
    """For each `tcdoctor.call` mark, in call order: {compile id: [runs, inclusive ns, self ns]}.

    Compact and JSON-ready, so a profiling child can send it instead of its raw events. Events
    are (name, start ns, duration ns); a region outside every mark is not counted.
    """
    marks = sorted((s, s + d) for n, s, d in events if n == CALL_MARK)
    starts = [m[0] for m in marks]
    calls: list[list[tuple[str, int, int]]] = [[] for _ in marks]
    for n, s, d in events:
        if n.startswith(REGION):
            i = bisect.bisect_right(starts, s) - 1
            if i >= 0 and s + d <= marks[i][1]:
                calls[i].append((n[len(REGION) :], s, s + d))
    return [_regions_of(c) for c in calls]


def runs_per_call(rows: list[dict], events: list[Event], calls: int) -> list[dict]:
    """How often each row's compiled region runs per steady-state call, and its median time per call.

    With `tcdoctor.call` marks in `events` the calls are the marks (a median over calls);
    without marks the events are taken as `calls` calls and the times are means
    (`per_call_basis` says which). A row whose region never runs is `unused_in_steady_state`.
    """
    if any(n == CALL_MARK for n, _, _ in events):
        return [
            dict(r, per_call_basis="median over marked calls")
            for r in join_runs(rows, per_call_regions(events))
        ]
    if calls <= 0:
        return join_runs(rows, [])
    total = _regions_of(
        [(n[len(REGION) :], s, s + d) for n, s, d in events if n.startswith(REGION)]
    )
    out = []
    for r in rows:
        runs, incl, own = total.get(r["compile_id"], [0, 0, 0])
        out.append(
            dict(
                r,
                runs_per_call=runs / calls,
                median_s_per_call=incl / calls * 1e-9,
                median_self_s_per_call=own / calls * 1e-9,
                unused_in_steady_state=runs == 0,
                profiled_calls=calls,
                per_call_basis="mean over calls (no per-call marks)",
            )
        )
    return out


# -- the check ----------------------------------------------------------------------------


def coverage(rows: list[dict], first_call_s: float | None, eager_call_s: float | None) -> dict:
    """The rows' cold seconds beside the compile part of the cold first call (never negative).

    Compile part = first compiled call's wall time - the eager call's (the execution inside the
    first call), as first_call.py's `outside_compiler_s` splits it. `coverage` = rows / part.
    """
    rows_s = sum(r["cold_s"] for r in rows)
    part = None
    if first_call_s is not None and eager_call_s is not None:
        part = max(0.0, first_call_s - eager_call_s)
    return {
        "rows_cold_s": rows_s,
        "first_call_s": first_call_s,
        "eager_call_s": eager_call_s,
        "first_call_compile_s": part,
        "coverage": rows_s / part if part else None,
        "not_in_rows_s": max(0.0, part - rows_s) if part is not None else None,
    }


def probe(
    metrics: list,
    first_call_s: float | None,
    eager_call_s: float | None,
    break_sites: list[dict] | None = None,
) -> dict:
    """The compile phase's `graphs` figure: the rows of the first call's entries and the check."""
    rows = table(metrics, break_sites)
    return {"rows": rows, "check": coverage(rows, first_call_s, eager_call_s), "method": METHOD}
