"""Where the compile time goes, joined in the parent: the cold first call's per-frame rows
(probes/compile_graphs.py) with the warm child's rows and the profile's compiled regions.

The cold child sends the rows, the warm child its own rows (`compile_warm`) and the regions that
ran in each profiled call (`profile`); `report/phases/` joins them as each phase is filled. The
join is by compile id ("F/C"), which holds while both processes compiled the same frames in the
same order (see the probe's pitfalls). Torch-free, like everything the parent imports.
"""

from __future__ import annotations

import re
import statistics

RegionCounts = dict[str, list[int]]  # {compile id: [runs, inclusive ns, self ns]} of one call


def id_key(cid: str) -> tuple:
    """A compile id's sort key: "10/0" after "2/1" (numbers compared as numbers)."""
    parts = re.findall(r"\d+", cid or "")
    return tuple(int(p) for p in parts) or (cid,)


def join_warm_rows(rows: list[dict], warm_rows: list[dict]) -> list[dict]:
    """Each row with `warm_s` (the same compile id's seconds in a warm-cache process) and `warm_cache`.

    `warm_rows`: the warm first call's rows (`compile_graphs.table`). An id the warm process did
    not compile, or compiled for another function, gets `warm_s` None and `warm_not_measured`
    saying why: ids match only when both processes compile the same frames in the same order.
    """
    warm = {w["compile_id"]: w for w in warm_rows}
    out = []
    for r in rows:
        w = warm.get(r["compile_id"])
        r = dict(r)
        if w is None:
            r.update(
                warm_s=None, warm_cache=None, warm_not_measured="not compiled by the warm call"
            )
        elif (w.get("function"), w.get("file")) != (r.get("function"), r.get("file")):
            r.update(
                warm_s=None,
                warm_cache=None,
                warm_not_measured=f"the warm process compiled {w.get('function')} under this id",
            )
        else:
            r.update(warm_s=w["cold_s"], warm_cache=w.get("cache"))
        out.append(r)
    return out


def join_runs(rows: list[dict], per_call: list[RegionCounts]) -> list[dict]:
    """Rows with `runs_per_call`, `median_s_per_call` (inclusive of nested regions) and
    `median_self_s_per_call` (without them), from `compile_graphs.per_call_regions` output of
    steady-state calls; a row whose region never runs is `unused_in_steady_state`."""
    n = len(per_call)
    out = []
    for r in rows:
        r = dict(r)
        if n == 0:
            r.update(runs_per_call=None, runs_not_measured="no profiled call")
            out.append(r)
            continue
        got = [c.get(r["compile_id"], [0, 0, 0]) for c in per_call]
        runs = sum(g[0] for g in got) / n
        r.update(
            runs_per_call=runs,
            median_s_per_call=statistics.median(g[1] for g in got) * 1e-9,
            median_self_s_per_call=statistics.median(g[2] for g in got) * 1e-9,
            unused_in_steady_state=runs == 0,
            profiled_calls=n,
        )
        out.append(r)
    return out


def regions_not_in_table(rows: list[dict], per_call: list[RegionCounts]) -> list[str]:
    """Compile ids that ran in steady state but were not compiled by the first call (e.g. a
    recompile during warm-up): compile time the table does not show."""
    known = {r["compile_id"] for r in rows}
    return sorted({cid for c in per_call for cid in c if cid not in known}, key=id_key)


SCALED = (
    "time/call is the frame's profiled own time scaled to the unprofiled call: × (the timing "
    "phase's compiled median ÷ the median profiled call), so the profiler's own cost per event "
    "does not make a frame look slower than the call it is part of"
)


def scale_to_call(
    rows: list[dict], profiled_call_s: float | None, compiled_median_s: float | None
) -> tuple[list[dict], dict]:
    """Rows with `time_s_per_call` (what the table shows) and the scale used.

    The profiled times (`median_self_s_per_call`, `median_s_per_call`) are taken under the
    profiler, which slows every call (on Mixtral one frame read 4.51 ms per call inside a 3.65 ms
    compiled call). Each is multiplied by min(1, compiled median / median profiled call); if the
    frames' own times still sum past the compiled median (medians do not add up), all are scaled
    down once more to sum to it. So no frame, and not the frames together, exceeds the compiled
    call's median. The profiled figures are kept as `profiled_self_s_per_call`."""
    timed = [r for r in rows if r.get("median_self_s_per_call") is not None]
    if not timed or not compiled_median_s:
        why = "no compiled median from the timing phase" if timed else "no profiled frame"
        return rows, {"scaled": False, "why": why}
    factor = 1.0
    if profiled_call_s and profiled_call_s > compiled_median_s:
        factor = compiled_median_s / profiled_call_s
    total = sum(r["median_self_s_per_call"] for r in timed) * factor
    sum_factor = compiled_median_s / total if total > compiled_median_s else 1.0
    scale = factor * sum_factor
    out = []
    for r in rows:
        r = dict(r)
        own = r.get("median_self_s_per_call")
        if own is not None:
            r["profiled_self_s_per_call"] = own
            r["time_s_per_call"] = own * scale
            if r.get("median_s_per_call") is not None:  # inclusive of nested frames
                r["scaled_s_per_call"] = min(r["median_s_per_call"] * scale, compiled_median_s)
        out.append(r)
    return out, {
        "scaled": True,
        "factor": scale,
        "profiled_call_s": profiled_call_s,
        "compiled_median_s": compiled_median_s,
        "sum_rescaled": sum_factor < 1.0,
        "method": SCALED,
    }
