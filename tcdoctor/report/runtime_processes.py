"""The headline speedup across processes: each analysis process's paired timing joined into one
figure whose interval covers what another process of the same script would see.

Method. `--processes N` fresh processes time paired eager/compiled rounds (probes/timing.py): the
cold and the warm analysis processes, then timing-only processes against the main cache until N
have timed (run/launcher.py). A timing-only process is bare: it calls the object build() returned
as a plain script does, with nothing of tcdoctor's allocated before (run/runner.py). When every
process page-faulted heavily on one side, one more runs with glibc's malloc thresholds pinned, the
other allocator regime (`pinned_why`). The speedup is
the geometric mean of the processes' own figures; its interval is a 95% **prediction interval for
another process** (stats.prediction_interval: log scale, Student's t with n − 1 degrees of freedom,
√(1 + 1/n)), widened to hold every process's own paired interval. When processes fall in different
allocator regimes (a side faulting ≥ HEAVY_FAULTS_PER_CALL pages per call in one process and not in
another), both regimes are reported with their figures, and the interval spans both: the verdict,
the break-even and `check` then use the range, never the luckier process.

Why a prediction interval. Processes of one script differ by 10–45% here (heap history, code
placement, neighbours), while one process's pairs give ±3%: a confidence interval of the mean of two
or three processes (the bootstrap this module used before) is narrower than the spread it is meant
to cover, and another process's figure fell outside it (issue 27's fidelity runs).

Pitfalls. Few processes know the spread poorly, so the interval is wide by design: with two, t(1) =
12.7; with three, t(2) = 4.3. One process (`--processes 1`, the in-process API) gives that process's
own interval, and the report says it does not cover process-to-process spread.

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
# the timing phase of each analysis process, and the name the report gives its process; the
# timing-only processes' phase holds a list, one result per process (run/launcher.py)
PROCESS_OF_PHASE = {"runtime": "cold", "runtime_warm": "warm"}
EXTRA_PHASE = "runtime_extra"
ORDINALS = ("third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


def extra_name(i: int) -> str:
    """The name of timing-only process `i` (0-based): third, fourth, …"""
    return ORDINALS[i] if i < len(ORDINALS) else f"process {i + 3}"


def timed(results: dict[str, dict | None]) -> list[tuple[str, str, dict]]:
    """(process, environment, timing result) of every process that timed, from phase results."""
    out = [
        (name, "as launched", r)
        for phase, name in PROCESS_OF_PHASE.items()
        if (r := results.get(phase))
    ]
    for i, r in enumerate((results.get(EXTRA_PHASE) or {}).get("processes") or []):
        out.append((r.get("process") or extra_name(i), r.get("env") or "as launched", r))
    return out


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


def pinned_why(results: list[dict]) -> str | None:
    """Why one more process runs with glibc's thresholds pinned: every process so far page-faulted
    heavily, so the other allocator regime is unseen. None otherwise."""
    timed = [r for r in results if r.get("speedup_ci")]
    if timed and {regime(r) for r in timed} == {FAULTING}:
        return (
            "every process so far page-faults heavily on one side: a process with glibc's malloc "
            "thresholds pinned shows the regime that does not"
        )
    return None


SPREAD_WHY = "one more fresh process, as a plain script runs the call, for the spread between processes (--processes)"


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
        **({"why": result["why"]} if result.get("why") else {}),
    }


def combine(processes: list[tuple[str, str, dict]]) -> dict[str, Any]:
    """The across-process figures from (name, env, timing result) of each timed process:
    `speedup`, `speedup_ci`, `processes`, `regimes` (when they differ), `spread`, `across_method`,
    `ci_method`."""
    rows = [row(n, e, r) for n, e, r in processes if r.get("speedup") and r.get("speedup_ci")]
    speeds = [r["speedup"] for r in rows]
    out: dict[str, Any] = {"processes": rows, "spread": [min(speeds), max(speeds)]}
    if len(rows) == 1:
        out["speedup"], out["speedup_ci"] = speeds[0], list(rows[0]["speedup_ci"])
    else:
        est, lo, hi = stats.prediction_interval(speeds)
        # a new process may also land where a seen one did, with that process's own noise
        out["speedup"] = est
        out["speedup_ci"] = [
            min(lo, *(r["speedup_ci"][0] for r in rows)),
            max(hi, *(r["speedup_ci"][1] for r in rows)),
        ]
    groups = _regimes(rows)
    if groups:
        out["regimes"] = groups
        out["speedup_ci"] = [
            min(out["speedup_ci"][0], *(g["speedup_ci"][0] for g in groups)),
            max(out["speedup_ci"][1], *(g["speedup_ci"][1] for g in groups)),
        ]
    out["across_method"] = _method(rows, bool(groups))
    out["ci_method"] = (
        f"95% prediction interval for another process's speedup from {len(rows)} processes' "
        f"figures (log scale, Student's t with {len(rows) - 1} degree(s) of freedom), widened to "
        "hold each process's own paired interval"
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
            "does not cover process-to-process spread (time several with --processes)"
        )
    text = (
        f"{n} fresh processes ({', '.join(r['process'] for r in rows)}), each timing paired rounds; "
        "the speedup is the geometric mean of their figures, the interval a 95% prediction interval "
        "for another process of the same script (wide when few processes were timed or they "
        "disagree: the spread between processes is what another run of your script may see)"
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
