"""The processes the headline speedup is decided on: each process's row (its figures, its
allocator regime, the load on its pairs), the disturbed ones excluded, the regimes told apart, and
each regime's interval from its own processes. Part of the across-process speedup
(report/processes/: regimes.py here, claims.py, sequential.py).

- **Allocator regimes are decided apart** (`regime`, `by_regime`, `regime_intervals`): when
  processes fall in two allocator regimes (a side faulting ≥ HEAVY_FAULTS_PER_CALL pages per call
  in one and not in another), each regime is decided on at least MIN_PER_REGIME of its own
  processes: its speedup and interval from the spread pooled within the regimes that have two or
  more (one-way analysis of variance: N − k degrees of freedom). A regime of one process borrows
  no spread: it is undecided with the reason (`undecided_why`, claims.combine) and the launcher
  asks for another process. A process run in an environment the user did not launch (glibc's
  thresholds pinned, sequential.pinned_why) is a probe of the other regime, listed and never in
  the headline.
- **Two modes within a regime** (`modes`): sorted by speedup, neighbouring processes of one
  regime MODE_GAP apart split it; the interval is not split, and ci_method says it spans two modes.
- **A disturbed process is excluded, with its reason** (`disturbed`, `classify`): eager is the same
  code in every process, a control, and load only slows it. A process whose eager median lies
  above DISTURBED_RATIO times every other process's of its regime while load was seen in its pairs
  (a share of its kept pairs still loaded, or the median round loaded: probes/timing.py, per pair,
  never the maximum round) is listed with its figures and `excluded`, does not count towards the
  processes decided on, and is replaced by a process that names it (the launcher).
- **Sustained load** (`under_load`): the loaded pairs of the processes decided on; when most
  pairs of every process were loaded, nothing stands out to exclude and the figures are not a
  quiet machine's: undecided, and `undecided_why` (which the verdict's headline shows) says
  "timed under load: N of M pairs loaded".

Pitfalls. Two regimes of two processes each pool 2 degrees of freedom and rarely decide. The
regimes' pooled spread assumes the same spread in both. The load rule cannot see contention that
takes no CPU time (memory bandwidth of another program's threads on other cores).

Torch-free: assembled in the parent, re-read by `tcdoctor report`.
"""

from __future__ import annotations

import math
import statistics

from ... import stats

# A side that takes this many minor page faults per call (1 MiB of fresh 4 KiB pages) re-faults its
# temporaries every call: its time then depends on the glibc heap's history, not on the model.
HEAVY_FAULTS_PER_CALL = 256
PINNED_ENV_LABEL = "glibc malloc thresholds pinned (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_)"
AS_LAUNCHED = "as launched"
FAULTING, NOT_FAULTING = "page-faulting", "not page-faulting"

# An allocator regime is decided on at least this many of its own processes (its own spread).
MIN_PER_REGIME = 2
# A process's eager median this many times above every other process's of its regime, while load
# was seen in its pairs, is a disturbed process (eager is the same code in every process; load
# only slows it).
DISTURBED_RATIO = 1.5
# Load seen in a process's pairs: at least this share of its kept pairs still loaded after reruns
# (probes/timing.py: a round is loaded when others took half a core and a clock tick), or the
# median round's other programs at LOAD_CORES. The maximum over rounds is not load: quiet ~20 ms
# rounds read 0.47–0.53 of a core from /proc/stat's 10 ms ticks alone.
DISTURBED_LOADED_SHARE = 0.1
LOAD_CORES = 0.5
# ... and only while the machine had less than this many cores idle: other programs slow this process
# only when they take cores it needs (its own CPU use plus theirs fill the machine). On 16 cores, a
# step waiting on its GPU keeps one core busy: one core of others beside it leaves 14 idle and is no
# load (a quiet H100 machine was called "under load" by the others' core alone).
ROOM_CORES = 1.0
# A process timed under sustained load: most of its kept pairs loaded (or the median round loaded).
SUSTAINED_SHARE = 0.5
# Two modes within one regime: sorted, two neighbouring processes' speedups this many times apart.
# Processes spread 5-10% (log SD) between them; a 1.4x gap is 3.4 SDs at 10%: among six processes
# of one mode it appears well under 1% of the time. The recipe's modes are 1.45-1.6 and 2.7-3.0.
MODE_GAP = 1.4


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


def _load(result: dict) -> dict:
    """The load figures of a process's timing (probes/load.py via probes/timing.py), {} if none."""
    load = result.get("load") or {}
    return {} if "not_measured" in load else load


def load_seen(load: dict) -> bool:
    """Other programs took CPU during the timing: pairs rerun or kept still loaded (what the report
    names; judging a process reads `loaded_share`)."""
    return bool(load) and (
        (load.get("loaded_pairs") or 0) > 0 or (load.get("retimed_pairs") or 0) > 0
    )


def median_round_loaded(load: dict) -> bool:
    """The median round's other programs at LOAD_CORES or more while less than ROOM_CORES of the
    machine stayed idle (a report from before idle cores were read: the others' figure alone)."""
    idle = load.get("idle_cores_median")
    needed = not isinstance(idle, (int, float)) or idle < ROOM_CORES
    return (load.get("other_cores_median") or 0.0) >= LOAD_CORES and needed


def loaded_share(r: dict) -> float:
    """The share of a process row's kept pairs still loaded after reruns, per pair, from its
    `load` (probes/timing.py) and `samples` (its kept pairs); a loaded median round
    (`median_round_loaded`) counts as every pair loaded. 0 where load was not measured."""
    load = r.get("load") or {}
    if not load or "not_measured" in load:
        return 0.0
    if median_round_loaded(load):
        return 1.0
    pairs = r.get("samples") or 0
    return min(1.0, (load.get("loaded_pairs") or 0) / pairs) if pairs else 0.0


def row(name: str, env: str, result: dict) -> dict:
    """One process's figures, as the report lists them."""
    e, c = faults(result)
    load = _load(result)
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
        **({"load": load} if load else {}),
    }


def disturbed(r: dict, others: list[dict]) -> str | None:
    """Why process `r` is excluded as disturbed, or None. Load only slows: its eager median must lie
    above DISTURBED_RATIO times every other process's of its allocator regime (`others`; two at
    least), and load must be seen in its pairs (`loaded_share` at DISTURBED_LOADED_SHARE). A faster
    eager, or a slower one in quiet pairs, is data (an allocator regime looks like that)."""
    eager = r.get("eager_median_s")
    theirs = [o["eager_median_s"] for o in others if o.get("eager_median_s")]
    if not eager or len(theirs) < 2 or loaded_share(r) < DISTURBED_LOADED_SHARE:
        return None
    lo, hi = min(theirs), max(theirs)
    if eager <= hi * DISTURBED_RATIO:
        return None
    load = r.get("load") or {}
    return (
        f"disturbed: eager took {eager * 1e3:.3g} ms per call against {lo * 1e3:.3g}–"
        f"{hi * 1e3:.3g} ms in the other processes of its allocator regime while "
        f"{load.get('loaded_pairs') or 0} of its {r.get('samples') or 0} pairs ran under load "
        f"(other programs' median {load.get('other_cores_median') or 0.0:.2f} core(s); eager is "
        "the same code in every process and load only slows it)"
    )


def classify(rows: list[dict]) -> list[dict]:
    """Mark probes (an environment the user did not launch) and disturbed processes on `rows`;
    return the rows the headline is decided on. A process is judged against the others of its own
    allocator regime (a process without fault counts against every other)."""
    for r in rows:
        if r["env"] != AS_LAUNCHED:
            r["probe"] = "an environment you did not launch: a probe of the other allocator regime"
    launched = [r for r in rows if not r.get("probe")]
    for r in launched:
        peers = [
            o
            for o in launched
            if o is not r and (None in (o["regime"], r["regime"]) or o["regime"] == r["regime"])
        ]
        why = disturbed(r, peers)
        if why:
            r["excluded"] = why
    return [r for r in launched if not r.get("excluded")]


def under_load(counted: list[dict]) -> dict | None:
    """The load on the processes decided on, per pair: {"loaded_pairs", "pairs",
    "processes_loaded" (most pairs loaded: SUSTAINED_SHARE), "processes", "sustained" (every
    process loaded), "text"}; None when no kept pair was loaded."""
    measured = [r for r in counted if (r.get("load") or {}) and "not_measured" not in r["load"]]
    loaded = sum((r["load"].get("loaded_pairs") or 0) for r in measured)
    if not measured or (not loaded and not any(loaded_share(r) for r in measured)):
        return None
    pairs = sum(r.get("samples") or 0 for r in measured)
    k = sum(loaded_share(r) >= SUSTAINED_SHARE for r in measured)
    sustained = k == len(counted)
    text = f"timed under load: {loaded} of {pairs} pairs loaded" + (
        f", most pairs in every process ({k} of {len(counted)}): other programs took the cores the "
        "timing needed, so the figures are not what a quiet machine gives (can't tell)"
        if sustained
        else f" ({k} of {len(counted)} process(es) with most pairs loaded)"
    )
    return {
        "loaded_pairs": loaded,
        "pairs": pairs,
        "processes_loaded": k,
        "processes": len(counted),
        "sustained": sustained,
        "text": text,
    }


def modes(members: list[dict]) -> list[dict] | None:
    """Two modes within one regime, by the gap rule: sorted by speedup, the widest step between
    neighbouring processes is at least MODE_GAP times: [{"processes", "speedup"} below the gap,
    the same above]. None otherwise."""
    ranked = sorted(members, key=lambda r: r["speedup"])
    if len(ranked) < 2:
        return None
    gap, i = max(
        (b["speedup"] / a["speedup"], i) for i, (a, b) in enumerate(zip(ranked, ranked[1:]))
    )
    if gap < MODE_GAP:
        return None
    return [
        {
            "processes": [r["process"] for r in side],
            "speedup": stats.geometric_mean([r["speedup"] for r in side]),
        }
        for side in (ranked[: i + 1], ranked[i + 1 :])
    ]


def modes_text(found: list[dict]) -> str:
    """'the interval spans two modes (… regime): 1.52× (cold, third) and 2.85× (warm, fourth)'."""
    parts = []
    for m in found:
        where = f" in the {m['regime']} regime" if m.get("regime") else ""
        sides = [f"{x['speedup']:.2f}× ({', '.join(x['processes'])})" for x in m["modes"]]
        parts.append(
            f"the interval spans two modes{where} (a gap of at least {MODE_GAP:g}× between "
            f"neighbouring processes): {' and '.join(sides)}"
        )
    return "; ".join(parts)


def _noise_sd(r: dict) -> float:
    """One process's own measurement noise on the log scale, from its paired 95% interval."""
    return stats.log_sd_of_ci(r["speedup_ci"])


def by_regime(rows: list[dict]) -> dict[str | None, list[dict]]:
    """Process rows by allocator regime (`regime`): what each regime is decided on, and what
    --max-slowdown compares within (claims.compare_processes)."""
    by: dict[str | None, list[dict]] = {}
    for r in rows:
        by.setdefault(r.get("regime"), []).append(r)
    if len(by) > 1 and None in by:  # a process without fault counts joins no regime
        by.pop(None)
    return by


def regime_intervals(
    by: dict[str | None, list[dict]], level: float, extra: int = 0
) -> dict[str | None, list[float] | None]:
    """Each group's confidence interval of its typical speedup, decided on its own processes: None
    for a group of fewer than MIN_PER_REGIME (a lone process never borrows another regime's
    spread). The spread is pooled within the groups that have two or more (N − k degrees of
    freedom, each group's own deviations from its own mean) and taken as at least the group's own
    processes' paired noise, known from their hundreds of pairs: the normal quantile for that
    floor, Student's t for the estimate (stats.known_floor_half_width). `extra`: the interval
    projected as if `extra` more processes of each group landed at its current mean with the
    current spread (sequential.progress's futility rule): the count and the degrees of freedom grow."""
    logs = {g: [math.log(r["speedup"]) for r in rs] for g, rs in by.items()}
    own = {g: v for g, v in logs.items() if len(v) >= MIN_PER_REGIME}
    df = sum(len(v) for v in own.values()) - len(own)
    if df < 1:
        return {g: None for g in by}
    ss = sum(sum((y - statistics.fmean(v)) ** 2 for y in v) for v in own.values())
    sd = math.sqrt(ss / df)
    out: dict[str | None, list[float] | None] = {g: None for g in by}
    for g, v in own.items():
        noise = math.sqrt(statistics.fmean(_noise_sd(r) ** 2 for r in by[g]))
        half = stats.known_floor_half_width(sd, df + extra, noise, level) / math.sqrt(
            len(v) + extra
        )
        m = statistics.fmean(v)
        out[g] = [math.exp(m - half), math.exp(m + half)]
    return out


def decided_on(rows: list[dict] | None) -> list[dict]:
    """The process rows the headline was decided on (not probes, not excluded as disturbed)."""
    return [
        r
        for r in rows or []
        if r.get("speedup") is not None and not r.get("excluded") and not r.get("probe")
    ]


def least_favourable(rows: list[dict]) -> dict | None:
    """The decided-on process with the lowest speedup: what the break-even is computed from, so a
    lucky process never shortens it (probes and disturbed processes are not decided on)."""
    timed_ = decided_on(rows)
    return min(timed_, key=lambda r: r["speedup"]) if timed_ else None


def own_envelope(members: list[dict]) -> list[float]:
    """The envelope of processes' own paired intervals (what a group that cannot decide shows)."""
    return [min(m["speedup_ci"][0] for m in members), max(m["speedup_ci"][1] for m in members)]


def regime_figures(
    by: dict[str | None, list[dict]], cis: dict[str | None, list[float] | None]
) -> list[dict]:
    """Each allocator regime's figures, page-faulting first; `decided` False where the regime's
    interval is only its processes' own (fewer than MIN_PER_REGIME processes of its own); `modes`
    where its processes fall in two (the gap rule)."""
    groups = []
    for name in (FAULTING, NOT_FAULTING):
        members = by[name]
        ci = cis.get(name) or own_envelope(members)
        groups.append(
            {
                "regime": name,
                "processes": [m["process"] for m in members],
                "speedup": stats.geometric_mean([m["speedup"] for m in members]),
                "speedup_ci": ci,
                "decided": cis.get(name) is not None,
                "eager_faults_per_call": max(m["eager_faults_per_call"] or 0 for m in members),
                "compiled_faults_per_call": max(
                    m["compiled_faults_per_call"] or 0 for m in members
                ),
                **({"modes": found} if (found := modes(members)) else {}),
            }
        )
    return groups
