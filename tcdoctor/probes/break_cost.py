"""What each graph break costs per compiled call, from the profiler's events of steady-state calls.

A compiled call runs as nested `Torch-Compiled Region: F/C` events, one per compiled frame: a
frame whose graph ended at a break runs its graph, then (still inside its region) the unsupported
op eagerly, the Python around it, the resume frame's guard check, and the resume frame's own
region, nested. So the cost of the break that ended frame F/C's graph is that region's time
outside its compiled graph call(s) and outside the regions nested in it. A frame Dynamo skipped
(a break in a loop, a fallback to eager) has no region at all: its cost is the call's time
outside every region.

Pitfalls: the graph call is only marked by Inductor (`## Call CompiledFxGraph … ##`); with other
backends the graph's own ops cannot be told from the eager op, so no cost is given (says why).
A call counts as marked when any graph call is marked in it: a frame that traced no op (between two
breaks, e.g. a training step's `zero_grad` frame or the optimizer's wrappers) has a region and no
graph under every backend, and its whole self time is outside a graph (before, such a region made
every Inductor training step "unmarked").
Lost fusion across the break is not visible in any event and is not counted.

What fixing a break can gain is not its cost: the op that runs eagerly after the break still runs
once the break is gone (compiled, it may be faster, never free). So each region's time outside its
graph is split into the top-level `aten::` ops run in it (eager work that would remain) and the
rest (the Python around the break, the resume frame's guard check, region entry and exit): that
rest is the bound on the gain reported for an untried fix. On an LSTM whose break hands `aten::lstm`
to eager, the cost is ~90% of a call and the bound a few percent: what trying `allow_rnn` measured. The profiler slows
calls down, eager ops more than compiled graphs: a break's share is taken against the profiled
call (same basis, never above 100%) and turned into seconds with the timing phase's median.

Torch-free (plain event tuples). Joining these times with the findings (cost, gain bound, ranking)
is the report's job, after every phase: report/break_gain.py.
"""

from __future__ import annotations

import bisect
import statistics

from .guards import CALL_MARK  # profile.py's mark around each profiled call

REGION = "Torch-Compiled Region: "  # Dynamo's event per compiled frame, "...: F/C"
GRAPH_CALL = "## Call CompiledFxGraph"

Event = tuple[str, int, int]  # (name, start ns, duration ns)


def _inside(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return b[0] <= a[0] and a[1] <= b[1] and a != b


def _eager_ns(
    ops: list[tuple[int, int]], span: tuple[int, int], busy: list[tuple[int, int]]
) -> int:
    """Time of the outermost aten ops inside `span` (ops sorted by start) and outside every `busy`
    interval (graph calls, nested regions): the eager work that runs there."""
    lo = bisect.bisect_left(ops, (span[0], -1))
    total, reach = 0, -1
    for s, e in ops[lo:]:
        if s > span[1]:
            break
        if e > span[1] or e <= reach or any(b[0] <= s < b[1] for b in busy):
            continue  # outside the span, nested in an op already counted, or inside a graph
        total, reach = total + (e - s), e
    return total


def per_call(events: list[Event]) -> list[dict]:
    """For each profiled call: {"regions": {compile_id: self ns}, "region_eager": {compile_id: ns of
    eager aten ops in that self time}, "marked": bool, "outside_ns", "outside_eager_ns"}."""
    marks = sorted((s, s + d) for n, s, d in events if n == CALL_MARK)
    regions = [(n[len(REGION) :], s, s + d) for n, s, d in events if n.startswith(REGION)]
    graphs = [(s, s + d) for n, s, d in events if n.startswith(GRAPH_CALL)]
    ops = sorted((s, s + d) for n, s, d in events if n.startswith("aten::"))
    out = []
    for call in marks:
        rs = [r for r in regions if call[0] <= r[1] and r[2] <= call[1]]
        gs = [g for g in graphs if call[0] <= g[0] and g[1] <= call[1]]
        selfs, eager = {}, {}
        for cid, s, e in rs:
            span = (s, e)
            nested = [(ns, ne) for _, ns, ne in rs if _inside((ns, ne), span)]
            direct = [x for x in nested if not any(_inside(x, y) for y in nested)]
            own_graphs = [
                g for g in gs if _inside(g, span) and not any(_inside(g, x) for x in nested)
            ]
            busy = sum(ne - ns for ns, ne in direct) + sum(ge - gs_ for gs_, ge in own_graphs)
            selfs[cid] = selfs.get(cid, 0) + max(0, (e - s) - busy)
            eager[cid] = eager.get(cid, 0) + _eager_ns(ops, span, direct + own_graphs)
        top = [(s, e) for _, s, e in rs if not any(_inside((s, e), (s2, e2)) for _, s2, e2 in rs)]
        out.append(
            {
                "regions": selfs,
                "region_eager": eager,
                "marked": bool(gs) and bool(rs),  # the backend marks its graph calls
                "call_ns": call[1] - call[0],
                "outside_ns": max(0, (call[1] - call[0]) - sum(e - s for s, e in top)),
                "outside_eager_ns": _eager_ns(ops, call, top + gs),
            }
        )
    return out


def summarize(calls: list[dict]) -> dict:
    """Median seconds per call: each region's self time, and the time outside every region."""
    if not calls:
        return {
            "region_self_s": {},
            "outside_regions_s": None,
            "region_eager_s": {},
            "outside_regions_eager_s": None,
            "graph_calls_marked": False,
            "profiled_call_s": None,
        }
    ids = sorted({cid for c in calls for cid in c["regions"]})
    return {
        "profiled_call_s": statistics.median(c["call_ns"] for c in calls) * 1e-9,
        "region_self_s": {
            cid: statistics.median(c["regions"].get(cid, 0) for c in calls) * 1e-9 for cid in ids
        },
        "outside_regions_s": statistics.median(c["outside_ns"] for c in calls) * 1e-9,
        "region_eager_s": {
            cid: statistics.median((c.get("region_eager") or {}).get(cid, 0) for c in calls) * 1e-9
            for cid in ids
        },
        "outside_regions_eager_s": statistics.median(c.get("outside_eager_ns", 0) for c in calls)
        * 1e-9,
        "graph_calls_marked": all(c["marked"] for c in calls),
    }
