"""The headline speedup across processes: each analysis process's paired timing joined into one
figure whose interval covers what another process of the same script would see.

Method. The cold and the warm process each time paired eager/compiled rounds (probes/timing.py);
a third process is timed when the first two disagree beyond their own intervals, or when every
process so far page-faults heavily on one side (then with glibc's malloc thresholds pinned, the
other allocator regime; run/launcher.py decides, `third_process`). The speedup is the geometric
mean of the processes' own figures; its interval comes from a hierarchical bootstrap (processes
resampled, then rounds within each: stats.hierarchical_ratio_ci). When processes fall in different
allocator regimes (a side faulting ≥ HEAVY_FAULTS_PER_CALL pages per call in one process and not in
another), both regimes are reported with their figures, and the interval spans both: the verdict,
the break-even and `check` then use the range, never the luckier process.

Pitfalls. Two or three processes are few: the interval covers the spread they showed, not every
process the machine could produce (pyperf runs 20). One process (--no-warm, the in-process API)
gives that process's own interval, and the report says so.

Torch-free: assembled in the parent, re-read by `tcdoctor report`.
"""

from __future__ import annotations

from typing import Any

from .. import stats

# A side that takes this many minor page faults per call (1 MiB of fresh 4 KiB pages) re-faults its
# temporaries every call: its time then depends on the glibc heap's history, not on the model.
HEAVY_FAULTS_PER_CALL = 256
PINNED_ENV_LABEL = "glibc malloc thresholds pinned (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_)"
FAULTING, NOT_FAULTING = "page-faulting", "not page-faulting"
# the timing phase of each analysis process (report/phases.py) and the name the report gives it
PROCESS_OF_PHASE = {"runtime": "cold", "runtime_warm": "warm", "runtime_extra": "third"}


def timed(results: dict[str, dict | None]) -> list[tuple[str, str, dict]]:
    """(process, environment, timing result) of every process that timed, from phase results."""
    return [
        (name, r.get("env") or "as launched", r)
        for phase, name in PROCESS_OF_PHASE.items()
        if (r := results.get(phase))
    ]


def faults(result: dict) -> tuple[float | None, float | None]:
    """(eager, compiled) minor faults per call of one process's timing."""
    return (
        (result.get("eager") or {}).get("minor_faults_per_call"),
        (result.get("compiled") or {}).get("minor_faults_per_call"),
    )


def regime(result: dict) -> str | None:
    """Which allocator regime a process's timing ran in (None where faults were not counted)."""
    e, c = faults(result)
    if e is None and c is None:
        return None
    return FAULTING if max(e or 0.0, c or 0.0) >= HEAVY_FAULTS_PER_CALL else NOT_FAULTING


def _overlap(a: list[float], b: list[float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def third_process(results: list[dict]) -> tuple[str, bool] | None:
    """Whether to time one more process, why, and whether with glibc's thresholds pinned: when
    every process so far faulted heavily (the other regime is unseen), or when two processes'
    intervals do not overlap. None when the processes agree or fewer than two finished."""
    timed = [r for r in results if r.get("speedup_ci")]
    if len(timed) < 2:
        return None
    regimes = {regime(r) for r in timed}
    if regimes == {FAULTING}:
        return (
            "every process so far page-faults heavily on one side: a process with glibc's malloc "
            "thresholds pinned shows the regime that does not",
            True,
        )
    cis = [r["speedup_ci"] for r in timed]
    if not all(_overlap(a, b) for i, a in enumerate(cis) for b in cis[i + 1 :]):
        return "the first two processes' intervals do not overlap", False
    return None


def row(name: str, env: str, result: dict) -> dict:
    """One process's figures, as the report lists them."""
    e, c = faults(result)
    return {
        "process": name,
        "env": env,
        "speedup": result.get("speedup"),
        "speedup_ci": result.get("speedup_ci"),
        "eager_median_s": (result.get("eager") or {}).get("median_s"),
        "compiled_median_s": (result.get("compiled") or {}).get("median_s"),
        "eager_faults_per_call": e,
        "compiled_faults_per_call": c,
        "regime": regime(result),
        "samples": result.get("samples"),
    }


def combine(processes: list[tuple[str, str, dict]]) -> dict[str, Any]:
    """The across-process figures from (name, env, timing result) of each timed process:
    `speedup`, `speedup_ci`, `processes`, `regimes` (when they differ), `spread`, `across_method`,
    `ci_method`."""
    timed = [(n, e, r) for n, e, r in processes if (r.get("raw") or {}).get("eager_s")]
    rows = [row(n, e, r) for n, e, r in timed]
    est, lo, hi = stats.hierarchical_ratio_ci(
        [(r["raw"]["eager_s"], r["raw"]["compiled_s"]) for _, _, r in timed]
    )
    out: dict[str, Any] = {"processes": rows, "speedup": est, "speedup_ci": [lo, hi]}
    speeds = [r["speedup"] for r in rows]
    out["spread"] = [min(speeds), max(speeds)]
    # every process's own figure is something a process of this script was seen to do: with two
    # or three processes the percentiles can fall just inside the extremes, the interval never does
    out["speedup_ci"] = [min(lo, *speeds), max(hi, *speeds)]
    groups = _regimes(rows)
    if groups:
        out["regimes"] = groups
        out["speedup_ci"] = [
            min(out["speedup_ci"][0], *(g["speedup_ci"][0] for g in groups)),
            max(out["speedup_ci"][1], *(g["speedup_ci"][1] for g in groups)),
        ]
    out["across_method"] = _method(rows, bool(groups))
    out["ci_method"] = (
        "hierarchical bootstrap over processes, then paired rounds within each, 1000 resamples"
        if len(rows) > 1
        else "percentile bootstrap over one process's paired rounds, 1000 resamples"
    )
    return out


def _regimes(rows: list[dict]) -> list[dict] | None:
    """Both allocator regimes with their figures, when the processes fell in both."""
    by: dict[str, list[dict]] = {}
    for r in rows:
        if r["regime"]:
            by.setdefault(r["regime"], []).append(r)
    if len(by) < 2:
        return None
    groups = []
    for name in (FAULTING, NOT_FAULTING):
        members = by[name]
        cis = [m["speedup_ci"] for m in members]
        groups.append(
            {
                "regime": name,
                "processes": [m["process"] for m in members],
                "speedup": stats.geometric_mean([m["speedup"] for m in members]),
                "speedup_ci": [min(c[0] for c in cis), max(c[1] for c in cis)],
                "eager_faults_per_call": max(m["eager_faults_per_call"] or 0 for m in members),
                "compiled_faults_per_call": max(
                    m["compiled_faults_per_call"] or 0 for m in members
                ),
            }
        )
    return groups


def _method(rows: list[dict], regimes: bool) -> str:
    n = len(rows)
    if n == 1:
        return (
            f"one process ({rows[0]['process']}): the interval is that process's paired bootstrap and "
            "does not cover process-to-process spread (run with the warm process to time two)"
        )
    text = (
        f"{n} processes ({', '.join(r['process'] for r in rows)}), each timing paired rounds; the "
        "speedup is the geometric mean of their figures, the 95% interval a hierarchical bootstrap "
        "(processes resampled, then rounds within each, 1000 resamples), widened where needed to hold "
        "every process's own figure"
    )
    if regimes:
        text += (
            f"; the processes fell in two allocator regimes (a side taking ≥ {HEAVY_FAULTS_PER_CALL} "
            "minor page faults per call in one and not in another: glibc's heap history decides), "
            "so the interval spans both regimes' intervals"
        )
    return text


def least_favourable(rows: list[dict]) -> dict | None:
    """The process with the lowest speedup: what the break-even is computed from, so a lucky
    process never shortens it."""
    timed = [r for r in rows or [] if r.get("speedup") is not None]
    return min(timed, key=lambda r: r["speedup"]) if timed else None
