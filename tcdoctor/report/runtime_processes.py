"""The headline speedup across processes: each analysis process's paired timing joined into one
decision, and into a range of what another run of the same script may see.

Method. Fresh processes time paired eager/compiled rounds (probes/timing.py): the cold and the
warm analysis processes, then bare timing-only processes against the main cache (run/launcher.py;
a bare process calls the object build() returned as a plain script does). The processes the
headline is decided on are those launched as the user launches the script and not disturbed:

- **Decision interval** (`speedup_ci`): a confidence interval of the typical process's speedup,
  the geometric mean (stats.log_mean_ci: Student's t on the processes' log speedups, n − 1 degrees
  of freedom, the logs' spread taken as at least the processes' own paired noise). The verdict,
  `check --min-speedup` and the break-even decide on it (`claim`).
- **Prediction interval** (`prediction_interval`): where one more process of the script may land
  (stats.prediction_interval, √(n + 1) times wider), widened to hold every process's own paired
  interval. Shown, labelled as such; nothing decides on it.
- **Processes until the question is answered** (`decided`, run/launcher.py): the first look is at
  MIN_LOOK processes; while the decision at the thresholds in play (1.0 and RULES' min_speedup for
  the verdict, --min-speedup for `check`) is undecided, one more bare process runs, up to
  `--processes` (the cap). Looking repeatedly is paid for with Pocock's boundary: every look uses
  the same nominal level, POCOCK[looks], so that the chance any look claims a side when the speedup
  sits on a threshold stays about 5% (simulated in tests/test_runtime_processes.py). The report says how
  many processes ran and why they stopped: decided, the cap, or the time budget.
- **Allocator regimes are decided apart** (`regimes`): when processes fall in two allocator regimes
  (a side faulting ≥ HEAVY_FAULTS_PER_CALL pages per call in one and not in another), each regime
  gets its speedup and interval from the spread pooled within regimes (one-way analysis of
  variance: N − k degrees of freedom), and the decision says whether compiled is faster in every
  regime, in some, or in none. The decision interval is the envelope of the regimes' intervals, so
  "faster" means faster in every regime. A process run in an environment the user did not launch
  (glibc's thresholds pinned, `pinned_why`) is a probe of the other regime, listed and never in the
  headline.
- **A disturbed process is excluded, with its reason** (`disturbed`): eager is the same code in
  every process, a control. A process whose eager median lies outside the other processes' by more
  than DISTURBED_RATIO while its timing saw load (other programs' CPU time, probes/load.py) is
  listed with its figures and `excluded`, and does not count towards the processes decided on.

Pitfalls. Few processes know the spread poorly: with three, t(2) at Pocock's level is 7.3, so a
model whose processes disagree by 10% needs more processes to decide, honestly. One process
(`--processes 1`, the in-process API) gives that process's own interval, and the report says it
does not cover process-to-process spread.

Torch-free: assembled in the parent, re-read by `tcdoctor report`.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Sequence

from .. import stats, units
from .rules import faster_than_eager, slower_than_eager

# A side that takes this many minor page faults per call (1 MiB of fresh 4 KiB pages) re-faults its
# temporaries every call: its time then depends on the glibc heap's history, not on the model.
HEAVY_FAULTS_PER_CALL = 256
PINNED_ENV_LABEL = "glibc malloc thresholds pinned (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_)"
AS_LAUNCHED = "as launched"
FAULTING, NOT_FAULTING = "page-faulting", "not page-faulting"
# the timing phase of each analysis process, and the name the report gives its process; the
# timing-only processes' phase holds a list, one result per process (run/launcher.py)
PROCESS_OF_PHASE = {"runtime": "cold", "runtime_warm": "warm"}
EXTRA_PHASE = "runtime_extra"
ORDINALS = ("third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh")

# The first decision is taken at this many processes (cold, warm and one bare process: two give t(1)
# = 12.7, which decides nothing); then one more process per look while undecided, up to the cap.
MIN_LOOK = 3
# Pocock's nominal two-sided level per look for K equally spaced looks at an overall 5% (Pocock
# 1977, table 1): every look is held to the same stricter level.
POCOCK = {1: 0.05, 2: 0.0294, 3: 0.0221, 4: 0.0182, 5: 0.0158, 6: 0.0142, 7: 0.0132, 8: 0.0123}
# A process's eager median this many times above (or below) every other process's, while its
# timing saw other programs' load, is a disturbed process (eager is the same code in every process).
DISTURBED_RATIO = 1.5
# Other programs using this many cores on average during a process's timing is load (probes/load.py)
LOAD_CORES = 0.5


def extra_name(i: int) -> str:
    """The name of timing-only process `i` (0-based): third, fourth, …"""
    return ORDINALS[i] if i < len(ORDINALS) else f"process {i + 3}"


def looks(cap: int) -> int:
    """How many decisions a cap of `cap` processes allows: at MIN_LOOK, then one per process."""
    return max(1, cap - MIN_LOOK + 1)


def look_level(cap: int) -> float:
    """The confidence level every look uses so the looks together err about 5% of the time."""
    return 1.0 - POCOCK[min(looks(cap), max(POCOCK))]


def timed(results: dict[str, dict | None]) -> list[tuple[str, str, dict]]:
    """(process, environment, timing result) of every process that timed, from phase results."""
    out = [
        (name, AS_LAUNCHED, r)
        for phase, name in PROCESS_OF_PHASE.items()
        if (r := results.get(phase))
    ]
    for i, r in enumerate((results.get(EXTRA_PHASE) or {}).get("processes") or []):
        out.append((r.get("process") or extra_name(i), r.get("env") or AS_LAUNCHED, r))
    return out


def sequence(results: dict[str, dict | None]) -> dict | None:
    """How the launcher chose the number of processes (cap, level, why it stopped), when it did."""
    return (results.get(EXTRA_PHASE) or {}).get("sequence")


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
    heavily, so the other allocator regime is unseen. None otherwise. That process is a probe of
    the other regime: it is listed, never decided on (the user does not launch it)."""
    timed_ = [r for r in results if r.get("speedup_ci")]
    if timed_ and {regime(r) for r in timed_} == {FAULTING}:
        return (
            "every process so far page-faults heavily on one side: a process with glibc's malloc "
            "thresholds pinned probes the regime that does not (listed, not decided on)"
        )
    return None


SPREAD_WHY = "one more fresh process, as a plain script runs the call, for the spread between processes (--processes)"
UNDECIDED_WHY = (
    "one more fresh process, as a plain script runs the call: the processes so far did not decide "
    "where the speedup lies"
)


def _load(result: dict) -> dict:
    """The load figures of a process's timing (probes/load.py via probes/timing.py), {} if none."""
    load = result.get("load") or {}
    return {} if "not_measured" in load else load


def load_seen(load: dict) -> bool:
    """Other programs took CPU during the timing: pairs rerun or still loaded, or half a core at
    times in the pairs kept."""
    return bool(load) and (
        (load.get("loaded_pairs") or 0) > 0
        or (load.get("retimed_pairs") or 0) > 0
        or (load.get("other_cores_max") or 0.0) >= LOAD_CORES
    )


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
    """Why process `r` is excluded as disturbed, or None: its eager median lies outside every other
    process's by more than DISTURBED_RATIO while its timing saw load. Needs two others."""
    eager = r.get("eager_median_s")
    theirs = [o["eager_median_s"] for o in others if o.get("eager_median_s")]
    if not eager or len(theirs) < 2 or not load_seen(r.get("load") or {}):
        return None
    lo, hi = min(theirs), max(theirs)
    if lo / DISTURBED_RATIO <= eager <= hi * DISTURBED_RATIO:
        return None
    load = r["load"]
    return (
        f"disturbed: eager took {eager * 1e3:.3g} ms per call against {lo * 1e3:.3g}–"
        f"{hi * 1e3:.3g} ms in the other processes while other programs used up to "
        f"{load.get('other_cores_max') or 0.0:.1f} core(s) (eager is the same code in every process)"
    )


def classify(rows: list[dict]) -> list[dict]:
    """Mark probes (an environment the user did not launch) and disturbed processes on `rows`;
    return the rows the headline is decided on."""
    for r in rows:
        if r["env"] != AS_LAUNCHED:
            r["probe"] = "an environment you did not launch: a probe of the other allocator regime"
    launched = [r for r in rows if not r.get("probe")]
    for r in launched:
        why = disturbed(r, [o for o in launched if o is not r])
        if why:
            r["excluded"] = why
    return [r for r in launched if not r.get("excluded")]


def _noise_sd(r: dict) -> float:
    """One process's own measurement noise on the log scale, from its paired 95% interval."""
    lo, hi = r["speedup_ci"]
    return math.log(hi / lo) / (2 * 1.96) if lo and hi and hi > lo > 0 else 0.0


def _groups(rows: list[dict]) -> dict[str | None, list[dict]]:
    by: dict[str | None, list[dict]] = {}
    for r in rows:
        by.setdefault(r["regime"], []).append(r)
    if len(by) > 1 and None in by:  # a process without fault counts joins no regime
        by.pop(None)
    return by


def _group_intervals(
    by: dict[str | None, list[dict]], level: float
) -> dict[str | None, list[float] | None]:
    """Each group's confidence interval of its typical speedup, from the spread pooled within
    groups (N − k degrees of freedom); None for every group when that leaves none."""
    logs = {g: [math.log(r["speedup"]) for r in rs] for g, rs in by.items()}
    n = sum(len(v) for v in logs.values())
    df = n - len(logs)
    if df < 1:
        return {g: None for g in by}
    ss = sum(sum((y - statistics.fmean(v)) ** 2 for y in v) for v in logs.values())
    noise = math.sqrt(statistics.fmean(_noise_sd(r) ** 2 for rs in by.values() for r in rs))
    sd = max(math.sqrt(ss / df), noise)
    t = stats.t_quantile(1 - (1 - level) / 2, df)
    out: dict[str | None, list[float] | None] = {}
    for g, v in logs.items():
        m, half = statistics.fmean(v), t * sd / math.sqrt(len(v))
        out[g] = [math.exp(m - half), math.exp(m + half)]
    return out


def claim(ci: Sequence[float] | None, min_speedup: float) -> str:
    """Where a decision interval puts compiled against eager: 'faster' (low ≥ min_speedup),
    'slower' (high < 1), 'same' (within [1/min_speedup, min_speedup]: no difference that matters),
    or 'undecided' (the interval straddles a threshold)."""
    if not ci or ci[0] is None or ci[1] is None:
        return "undecided"
    lo, hi = ci
    if faster_than_eager(lo, min_speedup):
        return "faster"
    if slower_than_eager(hi):
        return "slower"
    if lo >= 1 / min_speedup and hi <= min_speedup:
        return "same"
    return "undecided"


def answers(ci: Sequence[float] | None, threshold: float) -> bool:
    """The interval lies wholly on one side of `threshold` (at or above, or below)."""
    return bool(ci) and ci[0] is not None and (ci[0] >= threshold or ci[1] < threshold)


def decided(
    rows: list[dict], thresholds: Sequence[float], min_speedup: float, level: float
) -> bool:
    """Whether the processes `rows` (already classified) answer every question in play: the
    verdict's (`claim` is not 'undecided', in every regime) and each of `thresholds` (check's
    --min-speedup)."""
    by = _groups(rows)
    cis = _group_intervals(by, level) if len(rows) >= 2 else {}
    if not cis or any(ci is None for ci in cis.values()):
        return False
    return all(
        claim(ci, min_speedup) != "undecided" and all(answers(ci, t) for t in thresholds)
        for ci in cis.values()
    )


def combine(processes: list[tuple[str, str, dict]], seq: dict | None = None) -> dict[str, Any]:
    """The across-process figures from (name, env, timing result) of each timed process:
    `speedup`, `speedup_ci` (the decision interval), `prediction_interval`, `processes`,
    `regimes` (when they differ), `spread`, `sequence`, `across_method`, `ci_method`."""
    rows = [row(n, e, r) for n, e, r in processes if r.get("speedup") and r.get("speedup_ci")]
    counted = classify(rows) or [r for r in rows if not r.get("probe")] or rows
    speeds = [r["speedup"] for r in counted]
    level = (seq or {}).get("level") or 0.95
    out: dict[str, Any] = {"processes": rows, "spread": [min(speeds), max(speeds)]}
    if len(counted) == 1:
        out["speedup"], out["speedup_ci"] = speeds[0], list(counted[0]["speedup_ci"])
    else:
        by = _groups(counted)
        cis = _group_intervals(by, level)
        out["speedup"] = stats.geometric_mean(speeds)
        if len(by) > 1:
            out["regimes"] = _regimes(by, cis)
        known = [ci for ci in cis.values() if ci is not None]
        if len(known) == len(cis):
            out["speedup_ci"] = [min(c[0] for c in known), max(c[1] for c in known)]
        else:  # one process per regime: no spread within regimes to decide on; the pooled one
            _, lo, hi = stats.log_mean_ci(speeds, level, max(map(_noise_sd, counted)))
            out["speedup_ci"] = [lo, hi]
            out["undecided_why"] = "one process in each allocator regime: no spread within a regime"
        _, lo, hi = stats.prediction_interval(speeds)
        # another run may land where a seen one did, with its own noise, and anywhere the typical
        # speedup may be
        out["prediction_interval"] = [
            min(lo, out["speedup_ci"][0], *(r["speedup_ci"][0] for r in counted)),
            max(hi, out["speedup_ci"][1], *(r["speedup_ci"][1] for r in counted)),
        ]
    if len(counted) > 1:  # the level the decision interval was taken at (Pocock's, per look)
        out["ci_level"] = level
    if seq:
        out["sequence"] = dict(seq, counted=len(counted))
    out["across_method"] = _method(rows, counted, bool(out.get("regimes")), seq)
    out["ci_method"] = (
        f"{level:.1%} confidence interval of the typical (geometric-mean) speedup of {len(counted)} "
        f"processes (log scale, Student's t, {len(counted) - len(out.get('regimes') or [1])} "
        "degree(s) of freedom"
        + (", spread pooled within allocator regimes" if out.get("regimes") else "")
        + (
            f"; Pocock's level for {seq['looks']} looks, 95% over all"
            if seq and seq.get("looks", 1) > 1
            else ""
        )
        + ")"
        if len(counted) > 1
        else "percentile bootstrap over one process's paired rounds, 1000 resamples"
    )
    return out


def _regimes(
    by: dict[str | None, list[dict]], cis: dict[str | None, list[float] | None]
) -> list[dict]:
    """Each allocator regime's figures, page-faulting first; `decided` False where the regime's
    interval is only its processes' own (no spread within regimes to decide on)."""
    groups = []
    for name in (FAULTING, NOT_FAULTING):
        members = by[name]
        ci = cis.get(name) or [
            min(m["speedup_ci"][0] for m in members),
            max(m["speedup_ci"][1] for m in members),
        ]
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
            }
        )
    return groups


def regime_claim(group: dict, min_speedup: float) -> str:
    """One regime's `claim` ('undecided' where its interval decides nothing)."""
    return (
        claim(group.get("speedup_ci"), min_speedup) if group.get("decided", True) else "undecided"
    )


def overall_claim(
    ci: Sequence[float] | None,
    regimes: list[dict] | None,
    undecided_why: str | None,
    min_speedup: float,
) -> str:
    """The headline's claim: in every allocator regime when the processes fell in two (a claim
    only where all regimes agree), 'undecided' when the processes cannot decide."""
    if undecided_why:
        return "undecided"
    if regimes:
        claims = {regime_claim(g, min_speedup) for g in regimes}
        return claims.pop() if len(claims) == 1 else "undecided"
    return claim(ci, min_speedup)


def _method(rows: list[dict], counted: list[dict], regimes: bool, seq: dict | None) -> str:
    n = len(counted)
    if n == 1:
        return (
            f"one process ({counted[0]['process']}): the interval is that process's paired bootstrap "
            "and does not cover process-to-process spread (time several with --processes)"
        )
    text = (
        f"{n} fresh processes decided on ({', '.join(r['process'] for r in counted)}), each timing "
        "paired rounds; the speedup is the geometric mean of their figures and the decision rests on "
        "its confidence interval; the prediction interval is what another run of your script may see"
    )
    left = [r for r in rows if r not in counted]
    for r in left:
        text += f"; {r['process']} not decided on ({r.get('excluded') or r.get('probe')})"
    for r in counted:
        if load_seen(r.get("load") or {}):
            text += f"; load seen in the {r['process']} process: {units.load(r)}"
    if regimes:
        text += (
            f"; the processes fell in two allocator regimes (a side taking ≥ {HEAVY_FAULTS_PER_CALL} "
            "minor page faults per call in one and not in another: glibc's heap history decides), "
            "each decided apart"
        )
    if seq:
        text += f"; {units.stopped(seq)}"
    return text


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
