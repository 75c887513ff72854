"""The headline speedup across processes: each analysis process's paired timing joined into one
decision, and into a range of what another run of the same script may see.

Method. Fresh processes time paired eager/compiled rounds (probes/timing.py): the cold and the
warm analysis processes, then bare timing-only processes against the main cache (run/launcher.py;
a bare process calls the object build() returned as a plain script does). The processes the
headline is decided on are those launched as the user launches the script and not disturbed:

- **Decision interval** (`speedup_ci`): a confidence interval of the typical process's speedup,
  the geometric mean (Student's t on the processes' log speedups, n − 1 degrees of freedom, never
  narrower than the processes' own paired noise with the normal quantile: that noise is known from
  hundreds of pairs, stats.known_floor_half_width). The verdict,
  `check --min-speedup` and the break-even decide on it (`claim`).
- **Prediction interval** (`prediction_interval`): where one more process of the script may land
  (stats.prediction_interval, √(n + 1) times wider), widened to hold every process's own paired
  interval. Shown, labelled as such; nothing decides on it.
- **"The same" is an equivalence answer** (`claim`, `equivalent`): two one-sided tests at
  EQUIVALENCE_MARGIN (RULES' equivalence_margin, ±10%): the decision interval within
  [1/margin, margin] is "no difference that matters (±10%)"; the band is the margin, never
  min_speedup. An interval wholly above 1 and below min_speedup (where min_speedup exceeds the
  margin) is 'below': faster than eager, not by the bar.
- **Processes until the questions in play are answered** (`progress`, run/launcher.py): the first
  look is at MIN_LOOK processes; while a question in play is unanswered and within reach (the
  verdict's claim until it is faster or slower, while the interval at the cap could give another
  decided claim; each --min-speedup of `check` until the interval lies on one side of it), one more
  bare process runs, up to `--processes` (the cap). The futility stop: a question is out of reach
  when, even if every process left to the cap landed at the current mean with the current spread,
  the interval at the cap would still not answer it; when nothing in play is within reach the
  sequence stops "futile" ("stopped: more processes would not decide"). Looking repeatedly is paid for with Pocock's boundary: every look uses
  the same nominal level, look_level(cap), for looks at MIN_LOOK..cap processes (not equally spaced
  in information; t at each look: T_POCOCK, computed by benchmarks/pocock_t_levels.py; the
  normal-theory constant is computed by stats.pocock_constant), so that the chance any look claims a
  side when the speedup sits on a threshold stays 5% (simulated through the launcher's loop in
  tests/test_regimes_load.py). The report says how many processes ran, at which counts it looked,
  and why they stopped: decided, futile, the cap, or the time budget.
- **Allocator regimes are decided apart** (`regimes`): when processes fall in two allocator regimes
  (a side faulting ≥ HEAVY_FAULTS_PER_CALL pages per call in one and not in another), each regime
  is decided on at least MIN_PER_REGIME of its own processes: its speedup and interval from the
  spread pooled within the regimes that have two or more (one-way analysis of variance: N − k
  degrees of freedom). A regime of one process borrows no spread: it is undecided with the reason
  (`undecided_why`) and the launcher asks for another process. The decision says whether compiled is faster in every
  regime, in some, or in none. The decision interval is the envelope of the regimes' intervals, so
  "faster" means faster in every regime. A process run in an environment the user did not launch
  (glibc's thresholds pinned, `pinned_why`) is a probe of the other regime, listed and never in the
  headline.
- **Two modes within a regime** (`modes`): sorted by speedup, neighbouring processes of one
  regime MODE_GAP apart split it; the interval is not split, and ci_method says it spans two modes.
- **A disturbed process is excluded, with its reason** (`disturbed`): eager is the same code in
  every process, a control, and load only slows it. A process whose eager median lies above
  DISTURBED_RATIO times every other process's of its regime while load was seen in its pairs (a
  share of its kept pairs still loaded, or the median round loaded: probes/timing.py, per pair, never
  the maximum round) is listed with its figures and `excluded`, does not count towards the processes
  decided on, and is replaced by a process that names it (the launcher).
- **Sustained load** (`load`, `under_load`): the loaded pairs of the processes decided on; when most
  pairs of every process were loaded, nothing stands out to exclude and the figures are not a quiet
  machine's: undecided, and `undecided_why` (which the verdict's headline shows) says
  "timed under load: N of M pairs loaded".

Pitfalls. Few processes know the spread poorly: with three, t(2) at Pocock's level is 7.3, so a
model whose processes disagree by 10% needs more processes to decide, honestly. Two regimes of two
processes each pool 2 degrees of freedom and rarely decide. The regimes' pooled spread assumes the
same spread in both. A look repeated at the same count after an exclusion swapped a process is not in
the Pocock design (rare). The load rule cannot see contention that takes no CPU time (memory
bandwidth of another program's threads on other cores). One process
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
# Processes the headline times at least (the cap allowing) before an early stop ("the same", or
# more processes would not decide) when tried fixes will be judged with its spread between
# processes (rules.row_decision_interval): with three, the spread rests on 2 degrees of freedom and a
# fix with a true 1.3× gain over an equal headline is named about 70% of the time; with five
# (4 degrees of freedom), over 80% (tests/test_fix_significance.py).
SPREAD_FOR_ROWS = 5
# A regression check (check --baseline --max-slowdown) compares this run's processes with the
# baseline's by Welch's test on the log speedups; the baseline's spread between processes rests on
# its own processes alone, and this run's cannot add to it. Simulated through the loop with the
# check's own comparison (benchmarks/regression_power.py, 5% spread, 1% within, cap 6, 400 trials
# a cell): a true 20% slowdown at a 10% margin fails 62% of the time against a baseline of 3
# processes (a run that stopped at its first look), 82% against 4, 90% against 5, 94% against 6;
# false alarms at the margin 2.0-4.5% at every size.
BASELINE_PROCESSES_FOR_POWER = 5
# The chance, over all looks, that the sequence claims a side when the speedup sits on a threshold.
ALPHA = 0.05
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
# "No difference that matters": the decision interval within [1/EQUIVALENCE_MARGIN,
# EQUIVALENCE_MARGIN] (two one-sided tests, `equivalent`). RULES' equivalence_margin
# (verdict/thresholds.py; report/ imports nothing above it, so the default lives here and
# tests/test_equivalence.py checks the two agree). ±10% is what the cap reaches at typical spread:
# simulated through the launcher's loop (benchmarks/equivalence_simulation.py), a truly equal model
# is called the same 99% of the time at 2% spread between processes and about half at 5%, where
# ±2% (the old band, min_speedup itself) was reached 5% and 0.3% of the time.
EQUIVALENCE_MARGIN = 1.10
# Two modes within one regime: sorted, two neighbouring processes' speedups this many times apart.
# Processes spread 5-10% (log SD) between them; a 1.4x gap is 3.4 SDs at 10%: among six processes
# of one mode it appears well under 1% of the time. The recipe's modes are 1.45-1.6 and 2.7-3.0.
MODE_GAP = 1.4


def extra_name(i: int) -> str:
    """The name of timing-only process `i` (0-based): third, fourth, …"""
    return ORDINALS[i] if i < len(ORDINALS) else f"process {i + 3}"


def looks(cap: int) -> int:
    """How many decisions a cap of `cap` processes allows: at MIN_LOOK, then one per process."""
    return max(1, cap - MIN_LOOK + 1)


def look_schedule(cap: int) -> tuple[int, ...]:
    """The processes decided on at each look a cap allows: MIN_LOOK, MIN_LOOK + 1, …, cap."""
    return tuple(range(MIN_LOOK, cap + 1)) if cap >= MIN_LOOK else (max(cap, 1),)


# Pocock's rule with Student's t at each look: the per-look confidence level for looks at MIN_LOOK,
# MIN_LOOK + 1, …, cap processes (df = n − 1 at n) so that all the looks together claim a side of a
# threshold the speedup sits on ALPHA of the time. Computed once by benchmarks/pocock_t_levels.py
# (4,000,000 simulated runs per cap, ±0.0002); one look is exactly 95%. The normal-theory constant
# for the same looks (stats.pocock_constant, computed) gives 97.8% at cap 6, which with t errs 5.8%.
T_POCOCK = {
    3: 0.95, 4: 0.9694, 5: 0.9771, 6: 0.9812, 7: 0.9839,
    8: 0.9856, 9: 0.9870, 10: 0.9880, 11: 0.9888, 12: 0.9894,
}  # fmt: skip


def look_level(cap: int) -> float:
    """The confidence level every look uses so the looks together err ALPHA of the time, for looks
    at MIN_LOOK..cap processes (T_POCOCK; information grows with the processes, so these looks are
    not equally spaced, and the spread is estimated, so t, not z). Beyond the table: the
    normal-theory level computed for those looks (stats.pocock_level), its error scaled by the
    table's t-to-z ratio at its largest cap. A sequence that stops earlier (decided, the time
    budget) or replaces a disturbed process looks at a subset of these counts: its error is at
    most ALPHA."""
    if cap < MIN_LOOK:
        return 1 - ALPHA
    if cap in T_POCOCK:
        return T_POCOCK[cap]
    top = max(T_POCOCK)
    ratio = (1 - T_POCOCK[top]) / (1 - stats.pocock_level(look_schedule(top), ALPHA))
    return 1 - (1 - stats.pocock_level(look_schedule(cap), ALPHA)) * ratio


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


def replaces(rows: list[dict], replaced: set[str]) -> str | None:
    """The name of an excluded process (in `rows`) that no process has replaced yet (`replaced`)."""
    return next(
        (r["process"] for r in rows if r.get("excluded") and r["process"] not in replaced), None
    )


def replacement_why(name: str) -> str:
    """Why a timing-only process runs in place of an excluded one."""
    return (
        f"one more fresh process, as a plain script runs the call: it replaces the {name} process, "
        "excluded as disturbed"
    )


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


def _groups(rows: list[dict]) -> dict[str | None, list[dict]]:
    by: dict[str | None, list[dict]] = {}
    for r in rows:
        by.setdefault(r["regime"], []).append(r)
    if len(by) > 1 and None in by:  # a process without fault counts joins no regime
        by.pop(None)
    return by


def _group_intervals(
    by: dict[str | None, list[dict]], level: float, extra: int = 0
) -> dict[str | None, list[float] | None]:
    """Each group's confidence interval of its typical speedup, decided on its own processes: None
    for a group of fewer than MIN_PER_REGIME (a lone process never borrows another regime's
    spread). The spread is pooled within the groups that have two or more (N − k degrees of
    freedom, each group's own deviations from its own mean) and taken as at least the group's own
    processes' paired noise, known from their hundreds of pairs: the normal quantile for that
    floor, Student's t for the estimate (stats.known_floor_half_width). `extra`: the interval
    projected as if `extra` more processes of each group landed at its current mean with the
    current spread (`progress`'s futility rule): the count and the degrees of freedom grow."""
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


def claim(
    ci: Sequence[float] | None, min_speedup: float, margin: float = EQUIVALENCE_MARGIN
) -> str:
    """Where a decision interval puts compiled against eager: 'faster' (low ≥ min_speedup),
    'slower' (high < 1), 'same' (`equivalent`: within [1/margin, margin], no difference that
    matters), 'below' (faster than eager but wholly below min_speedup, a difference that matters:
    only where min_speedup exceeds the margin), or 'undecided' (the interval straddles a
    threshold). The band is the equivalence margin, never min_speedup."""
    if not ci or ci[0] is None or ci[1] is None:
        return "undecided"
    lo, hi = ci
    if faster_than_eager(lo, min_speedup):
        return "faster"
    if slower_than_eager(hi):
        return "slower"
    if equivalent(ci, margin):
        return "same"
    if lo >= 1 and hi < min_speedup:
        return "below"
    return "undecided"


def equivalent(ci: Sequence[float] | None, margin: float = EQUIVALENCE_MARGIN) -> bool:
    """Two one-sided tests (TOST) on the decision interval: its low end at or above 1/margin and
    its high end at or below margin, so compiled is neither more than `margin` slower nor more than
    `margin` faster. Each end of the two-sided interval at level L is a one-sided test at (1 − L)/2:
    at Pocock's level for the looks (ALPHA over all), each side errs at most ALPHA/2 (a conservative
    TOST: the (1 − 2α) interval with α = 2.5%)."""
    return (
        bool(ci)
        and ci[0] is not None
        and ci[1] is not None
        and (ci[0] >= 1 / margin and ci[1] <= margin)
    )


def no_difference_text(ci: Sequence[float] | None, margin: float = EQUIVALENCE_MARGIN) -> str:
    """What an interval says of a difference: 'no difference that matters (±10%)' when it lies
    within the margin; 'no difference larger than 0.93–1.12×' when it holds 1 but reaches past the
    margin (no side shown, and no equivalence either); '' otherwise."""
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    if equivalent(ci, margin):
        return f"no difference that matters (±{units.percent(margin - 1)})"
    if ci[0] <= 1 <= ci[1]:
        return f"no difference larger than {ci[0]:.2f}–{ci[1]:.2f}×"
    return ""


def answers(ci: Sequence[float] | None, threshold: float) -> bool:
    """The interval lies wholly on one side of `threshold` (at or above, or below)."""
    return bool(ci) and ci[0] is not None and (ci[0] >= threshold or ci[1] < threshold)


def _in_play(
    ci: Sequence[float],
    reach: Sequence[float] | None,
    thresholds: Sequence[float],
    min_speedup: float,
    margin: float,
) -> bool:
    """Whether a question in play is unanswered by interval `ci` and would be answered by `reach`
    (the interval projected to the cap; None: not yet decidable, more processes may decide it).
    The verdict's question is its claim: until it is 'faster' or 'slower' it is in play while the
    projected claim is decided and another ("the same" may still sharpen into faster or slower;
    faster than eager but not by min_speedup changes nothing). Each gate threshold (check's
    --min-speedup) is in play while unanswered and answered by the projection."""
    if reach is None:
        return True
    now = claim(ci, min_speedup, margin)
    if now not in ("faster", "slower"):
        then = claim(reach, min_speedup, margin)
        if then != "undecided" and then != now:
            return True
    return any(not answers(ci, t) and answers(reach, t) for t in thresholds)


def decided(
    rows: list[dict],
    thresholds: Sequence[float],
    min_speedup: float,
    level: float,
    margin: float = EQUIVALENCE_MARGIN,
) -> bool:
    """Whether the processes `rows` (already classified) answer what is asked: the verdict's claim
    (`claim` is not 'undecided', in every regime) and each of `thresholds` (check's
    --min-speedup). Never while a regime has fewer than MIN_PER_REGIME processes or every process
    was timed under sustained load (`under_load`)."""
    by = _groups(rows)
    cis = _group_intervals(by, level) if len(rows) >= 2 else {}
    if not cis or any(ci is None for ci in cis.values()):
        return False
    if (under_load(rows) or {}).get("sustained"):
        return False
    return all(
        claim(ci, min_speedup, margin) != "undecided" and all(answers(ci, t) for t in thresholds)
        for ci in cis.values()
    )


def progress(
    rows: list[dict],
    thresholds: Sequence[float],
    min_speedup: float,
    level: float,
    cap: int,
    margin: float = EQUIVALENCE_MARGIN,
) -> str:
    """What the launcher does after a look at the processes `rows` (already classified): 'more'
    while some question in play (`_in_play`: the verdict's claim until it is faster or slower,
    each gate threshold) is unanswered and could still be answered by the cap; otherwise
    'decided' (the verdict's claim and every gate threshold answered: `decided`) or 'futile'.

    The futility rule: a question is out of reach when, even if every process left to the cap
    landed at the current mean with the current spread (the mean kept, the spread's degrees of
    freedom and the count grown to the cap, each regime as if every remaining process were its
    own), the interval at the cap at this level would still not answer it. A question answered, or
    out of reach, no longer keeps the loop going. At the cap (no process left) nothing is futile:
    the sequence stops there for the cap."""
    by = _groups(rows)
    cis = _group_intervals(by, level) if len(rows) >= 2 else {}
    if not cis or any(ci is None for ci in cis.values()):
        return "more"
    if (under_load(rows) or {}).get("sustained"):
        return "more"
    answered = decided(rows, thresholds, min_speedup, level, margin)
    left = cap - len(rows)
    if left <= 0:  # at the cap: decided, or the cap stops it as the cap
        return "decided" if answered else "more"
    reach = _group_intervals(by, level, extra=left)
    if any(_in_play(ci, reach[g], thresholds, min_speedup, margin) for g, ci in cis.items()):
        return "more"
    return "decided" if answered else "futile"


def combine(processes: list[tuple[str, str, dict]], seq: dict | None = None) -> dict[str, Any]:
    """The across-process figures from (name, env, timing result) of each timed process:
    `speedup`, `speedup_ci` (the decision interval), `prediction_interval`, `processes`,
    `regimes` (when they differ), `spread`, `sequence`, `across_method`, `ci_method`."""
    rows = [row(n, e, r) for n, e, r in processes if r.get("speedup") and r.get("speedup_ci")]
    counted = classify(rows) or [r for r in rows if not r.get("probe")] or rows
    speeds = [r["speedup"] for r in counted]
    level = (seq or {}).get("level") or 0.95
    out: dict[str, Any] = {"processes": rows, "spread": [min(speeds), max(speeds)]}
    why: list[str] = []  # why the processes cannot decide, whatever the interval says
    load = under_load(counted)
    if load:
        out["load"] = load
        if load["sustained"]:
            why.append(load["text"])
    by: dict[str | None, list[dict]] = {}
    if len(counted) == 1:
        out["speedup"], out["speedup_ci"] = speeds[0], list(counted[0]["speedup_ci"])
    else:
        by = _groups(counted)
        cis = _group_intervals(by, level)
        out["speedup"] = stats.geometric_mean(speeds)
        if len(by) > 1:
            out["regimes"] = _regimes(by, cis)
        # a group that cannot be decided shows its processes' own intervals, and decides nothing
        shown = [ci or _own_envelope(by[g]) for g, ci in cis.items()]
        out["speedup_ci"] = [min(c[0] for c in shown), max(c[1] for c in shown)]
        lone = [(g, rs) for g, rs in by.items() if cis[g] is None]
        if lone:
            why.append(
                "; ".join(f"one process in the {g} regime ({rs[0]['process']})" for g, rs in lone)
                + f": a regime is decided on at least {MIN_PER_REGIME} of its own processes, "
                "never on another regime's spread"
            )
        found = [
            {"regime": g if len(by) > 1 else None, "modes": m}
            for g, rs in by.items()
            if (m := modes(rs))
        ]
        if found:
            out["modes"] = found
        _, lo, hi = stats.prediction_interval(speeds)
        # another run may land where a seen one did, with its own noise, and anywhere the typical
        # speedup may be
        out["prediction_interval"] = [
            min(lo, out["speedup_ci"][0], *(r["speedup_ci"][0] for r in counted)),
            max(hi, out["speedup_ci"][1], *(r["speedup_ci"][1] for r in counted)),
        ]
    if why:
        out["undecided_why"] = "; ".join(why)
    if len(counted) > 1:  # the level the decision interval was taken at (Pocock's, per look)
        out["ci_level"] = level
    if seq:
        out["sequence"] = dict(seq, counted=len(counted))
    out["across_method"] = _method(rows, counted, bool(out.get("regimes")), seq)
    out["ci_method"] = (
        f"{level:.1%} confidence interval of the typical (geometric-mean) speedup of {len(counted)} "
        f"processes (log scale, Student's t, {_df(by)} degree(s) of freedom, the normal quantile "
        "for the processes' own paired noise where that is wider"
        + (
            ", spread pooled within allocator regimes, each regime decided on its own processes"
            if out.get("regimes")
            else ""
        )
        + (
            f"; Pocock's level for looks at {_looks_text(seq)} processes, {1 - ALPHA:.0%} over all"
            if seq and seq.get("looks", 1) > 1
            else ""
        )
        + ")"
        + (f"; {modes_text(out['modes'])}" if out.get("modes") else "")
        if len(counted) > 1
        else "percentile bootstrap over one process's paired rounds, 1000 resamples"
    )
    return out


def _own_envelope(members: list[dict]) -> list[float]:
    """The envelope of processes' own paired intervals (what a group that cannot decide shows)."""
    return [min(m["speedup_ci"][0] for m in members), max(m["speedup_ci"][1] for m in members)]


def _df(by: dict[str | None, list[dict]]) -> int:
    """Degrees of freedom of the spread pooled within the groups of two or more processes."""
    own = [rs for rs in by.values() if len(rs) >= MIN_PER_REGIME]
    return sum(len(rs) for rs in own) - len(own)


def _looks_text(seq: dict) -> str:
    """'3, 4, 5 and 6' (the counts a cap's looks are at)."""
    ns = [str(n) for n in look_schedule(seq.get("cap") or MIN_LOOK)]
    return ns[0] if len(ns) == 1 else ", ".join(ns[:-1]) + " and " + ns[-1]


def _regimes(
    by: dict[str | None, list[dict]], cis: dict[str | None, list[float] | None]
) -> list[dict]:
    """Each allocator regime's figures, page-faulting first; `decided` False where the regime's
    interval is only its processes' own (fewer than MIN_PER_REGIME processes of its own); `modes`
    where its processes fall in two (the gap rule)."""
    groups = []
    for name in (FAULTING, NOT_FAULTING):
        members = by[name]
        ci = cis.get(name) or _own_envelope(members)
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


def regime_claim(group: dict, min_speedup: float, margin: float = EQUIVALENCE_MARGIN) -> str:
    """One regime's `claim` ('undecided' where its interval decides nothing)."""
    return (
        claim(group.get("speedup_ci"), min_speedup, margin)
        if group.get("decided", True)
        else "undecided"
    )


def overall_claim(
    ci: Sequence[float] | None,
    regimes: list[dict] | None,
    undecided_why: str | None,
    min_speedup: float,
    margin: float = EQUIVALENCE_MARGIN,
) -> str:
    """The headline's claim: in every allocator regime when the processes fell in two (a claim
    only where all regimes agree), 'undecided' when the processes cannot decide."""
    if undecided_why:
        return "undecided"
    if regimes:
        claims = {regime_claim(g, min_speedup, margin) for g in regimes}
        return claims.pop() if len(claims) == 1 else "undecided"
    return claim(ci, min_speedup, margin)


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
    load = under_load(counted)
    if load:
        text += f"; {load['text']}"
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


def small_baseline_why(baseline_processes: int) -> str:
    """Why a regression check against a baseline of `baseline_processes` processes can stay
    inconclusive where a larger one would decide ('' when it has BASELINE_PROCESSES_FOR_POWER)."""
    n = baseline_processes
    if n >= BASELINE_PROCESSES_FOR_POWER:
        return ""
    return (
        f"the baseline has {n} process(es) decided on: its spread between processes rests on "
        f"{n - 1} degree(s) of freedom, which processes of this run cannot add to (against 3, a "
        f"20% slowdown at 5% spread fails a 10% margin about 62% of the time; against "
        f"{BASELINE_PROCESSES_FOR_POWER} or more, 90% or more; benchmarks/regression_power.py): "
        f"save the baseline from a run with --min-processes {BASELINE_PROCESSES_FOR_POWER}"
    )
