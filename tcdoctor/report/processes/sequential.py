"""How many processes time the headline speedup: the sequence of looks, each at Pocock's level,
and the stop rules (decided, futile, the cap). Part of the across-process speedup
(report/processes/: regimes.py, claims.py, sequential.py here).

Method. Fresh processes time paired eager/compiled rounds (probes/timing.py): the cold and the
warm analysis processes (`PROCESS_OF_PHASE`), then bare timing-only processes against the main
cache (`EXTRA_PHASE`, run/launcher.py; a bare process calls the object build() returned as a
plain script does).

- **Processes until the questions in play are answered** (`progress`): the first look is at
  MIN_LOOK processes; while a question in play is unanswered and within reach (the verdict's
  claim until it is faster or slower, while the interval at the cap could give another decided
  claim; each --min-speedup of `check` until the interval lies on one side of it), one more bare
  process runs, up to `--processes` (the cap). The futility stop: a question is out of reach
  when, even if every process left to the cap landed at the current mean with the current spread,
  the interval at the cap would still not answer it; when nothing in play is within reach the
  sequence stops "futile" ("stopped: more processes would not decide").
- **Looking repeatedly is paid for with Pocock's boundary** (`look_level`): every look uses the
  same nominal level, look_level(cap), for looks at MIN_LOOK..cap processes (not equally spaced in
  information; t at each look: T_POCOCK, computed by benchmarks/pocock_t_levels.py; the
  normal-theory constant is computed by stats.pocock_constant), so that the chance any look claims
  a side when the speedup sits on a threshold stays claims.ALPHA, 5% (simulated through the
  launcher's loop in tests/test_regimes_load.py). The report says how many processes ran, at which
  counts it looked, and why they stopped: decided, futile, the cap, or the time budget.

Pitfalls. A look repeated at the same count after an exclusion swapped a process is not in the
Pocock design (rare).

Torch-free: the launcher's loop runs it in the parent.
"""

from __future__ import annotations

from typing import Sequence

from ... import stats
from ...thresholds import RULES
from .claims import ALPHA, Claim, answers, claim
from .regimes import (
    AS_LAUNCHED,
    COLD,
    FAULTING,
    WARM,
    by_regime,
    regime,
    regime_intervals,
    under_load,
)
from .rows import ProcessRow

# the timing phase of each analysis process, and the name the report gives its process; the
# timing-only processes' phase holds a list, one result per process (run/launcher.py)
PROCESS_OF_PHASE = {"runtime": COLD, "runtime_warm": WARM}
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


def replaces(rows: list[ProcessRow], replaced: set[str]) -> str | None:
    """The name of an excluded process (in `rows`) that no process has replaced yet (`replaced`)."""
    return next((r.process for r in rows if r.excluded and r.process not in replaced), None)


def replacement_why(name: str) -> str:
    """Why a timing-only process runs in place of an excluded one (disturbed by load, or an
    analysis process that timed the call unlike the timing-only ones: its row says which)."""
    return (
        f"one more fresh process, as a plain script runs the call: it replaces the {name} process, "
        "left out of the headline (its row says why)"
    )


def _in_play(
    ci: Sequence[float],
    reach: Sequence[float] | None,
    speedups: Sequence[float],
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
    if not now.sided:
        then = claim(reach, min_speedup, margin)
        if then != Claim.UNDECIDED and then != now:
            return True
    return any(not answers(ci, t) and answers(reach, t) for t in speedups)


def decided(
    rows: list[ProcessRow],
    speedups: Sequence[float],
    min_speedup: float,
    level: float,
    margin: float = RULES.equivalence_margin,
) -> bool:
    """Whether the processes `rows` (already classified) answer what is asked: the verdict's claim
    (`claim` is not 'undecided', in every regime) and each of `speedups` (check's
    --min-speedup). Never while a regime has fewer than MIN_PER_REGIME processes or every process
    was timed under sustained load (`under_load`)."""
    by = by_regime(rows)
    cis = regime_intervals(by, level) if len(rows) >= 2 else {}
    if not cis or any(ci is None for ci in cis.values()):
        return False
    if (load := under_load(rows)) and load.sustained:
        return False
    return all(
        claim(ci, min_speedup, margin) != Claim.UNDECIDED and all(answers(ci, t) for t in speedups)
        for ci in cis.values()
    )


def progress(
    rows: list[ProcessRow],
    speedups: Sequence[float],
    min_speedup: float,
    level: float,
    cap: int,
    margin: float = RULES.equivalence_margin,
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
    by = by_regime(rows)
    cis = regime_intervals(by, level) if len(rows) >= 2 else {}
    if not cis or any(ci is None for ci in cis.values()):
        return "more"
    if (load := under_load(rows)) and load.sustained:
        return "more"
    answered = decided(rows, speedups, min_speedup, level, margin)
    left = cap - len(rows)
    if left <= 0:  # at the cap: decided, or the cap stops it as the cap
        return "decided" if answered else "more"
    reach = regime_intervals(by, level, extra=left)
    if any(_in_play(ci, reach[g], speedups, min_speedup, margin) for g, ci in cis.items()):
        return "more"
    return "decided" if answered else "futile"


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
