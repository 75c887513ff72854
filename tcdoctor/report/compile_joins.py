"""Where the compile time goes, joined in the parent: the cold first call's per-frame rows
(probes/compile_graphs.py) with the warm child's rows and the profile's compiled regions.

The cold child sends the rows, the warm child its own rows (`compile_warm`) and the regions that
ran in each profiled call (`profile`); `report/phases.py` joins them as each phase is filled. The
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
