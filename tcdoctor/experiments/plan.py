"""What runs after the main analysis, and when: the parent's plan for its later children, read
from the phase results the cold and warm children streamed. The launching (a child's spec, its
cache folder, waiting on it) is run/launcher.py's, which hands each step here a function that
starts one child.

- **The headline's timing processes** (`time_processes`): bare timing-only processes while a
  question in play is undecided and within reach (report/processes/sequential.py `progress`:
  decided, or stopped as futile, at Pocock's level per look); a process excluded as disturbed is
  replaced once; the questions a gate asks (checks/questions.py `Questions`: each --min-speedup,
  --max-slowdown's comparison with the baseline's processes) keep the loop going until answered.
  Then, when every process page-faulted heavily, one more with glibc's thresholds pinned: a probe
  of the other allocator regime, never decided on.
- **The experiments' order and budget** (`run_in_turn`): each planned spec in a child of its own,
  within the deadline and, for those that count against it, the fix budget (`fix_budget`); the
  ones left untried say why.
- **What the warm child runs** (`go_signal`: the experiments that share its process) and what it
  left (`warm_experiments`); the guard-skipping stance, planned once the warm child measured guard
  cost (`stance_fix`); the headline across processes a fix run in a child of its own is compared
  with (`across_processes`).

Torch-free: the parent plans; nothing here starts a process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from ..checks.questions import Questions
from ..options import Options
from ..report.processes import claims, regimes, sequential
from .fixes import before_figures, budget_used_up, plan_stance
from .specs import PHASE_PREFIX, Spec

# One timing-only process, started by the launcher: (index among them, why it runs, glibc's malloc
# thresholds pinned) -> (started: False once past the deadline, its timing result or None).
TimeOne = Callable[[int, str, bool], tuple[bool, dict | None]]
# One experiment child, started by the launcher and waited on: (index in the plan, its spec).
RunOne = Callable[[int, Spec], None]


def time_processes(
    first: Mapping[str, dict | None],
    options: Options,
    rules: Mapping[str, float],
    time_one: TimeOne,
    questions: Questions = Questions(),
    fixes_planned: bool = False,
) -> dict | None:
    """The timing-only processes' record (`sequential.EXTRA_PHASE`'s data: their results and the
    sequence, how many at which level and why they stopped), or None when none ran and no sequence
    was looked at. `first`: the cold and warm processes' timing results (by phase,
    `sequential.PROCESS_OF_PHASE`), which count as the first processes; `rules`: the verdict's
    (min_speedup, equivalence_margin).

    The first look is taken once MIN_LOOK processes have timed, then one more process per look up
    to `--processes` (the cap), within the deadline; a process excluded as disturbed is replaced
    once. Each runs as a plain script calls the model, against the main cache. Processes timed at
    least (the cap allowing) before stopping early: SPREAD_FOR_ROWS when `fixes_planned` (tried
    fixes are judged with the spread between these processes), and `--min-processes` (a report to
    be a regression baseline: --max-slowdown knows the baseline's spread only from the baseline's
    own processes)."""
    rows0 = [
        regimes.row(name, regimes.AS_LAUNCHED, r)
        for phase, name in sequential.PROCESS_OF_PHASE.items()
        if (r := first.get(phase)) and r.get("speedup_ci")
    ]
    if not rows0:
        return None  # nothing timed the main row: another process would fail the same way
    cap, level = options.processes, sequential.look_level(options.processes)
    spread_for = max(sequential.SPREAD_FOR_ROWS if fixes_planned else 0, options.min_processes)
    margin = rules.get("equivalence_margin", claims.EQUIVALENCE_MARGIN)
    extra: list[dict] = []

    def one(why: str, pinned: bool) -> bool:
        """Time one more process (its result, if any, joins `extra`); False past the deadline."""
        started, result = time_one(len(extra), why, pinned)
        if result:
            extra.append(result)
        return started

    stopped, tries = "cap", len(rows0)
    while cap < sequential.MIN_LOOK:  # too few to decide: the processes asked for, no looks
        if len(rows0) + len(extra) >= cap or not one(sequential.SPREAD_WHY, False):
            break
    replaced: set[str] = set()  # excluded processes a later one was started for
    looked: list[int] = []  # the processes decided on at each look taken
    while cap >= sequential.MIN_LOOK:
        rows = rows0 + [regimes.row(r["process"], regimes.AS_LAUNCHED, r) for r in extra]
        counted = regimes.classify(rows)
        if len(counted) >= min(sequential.MIN_LOOK, cap):
            looked.append(len(counted))
            step = sequential.progress(
                counted, questions.speedups, rules["min_speedup"], level, cap, margin
            )
            if step != "more" and not questions.answered(counted, level):
                step = "more"  # check --max-slowdown's comparison is still open
            if step != "more" and len(counted) < min(spread_for, cap):
                step = "more"  # tried fixes are judged with this spread: enough to judge
            if step != "more":  # every question in play answered, or out of reach (futile)
                stopped = step
                break
        excluded = len(rows) - len(counted)
        if len(counted) >= cap or len(rows) >= cap + min(excluded, 2) or tries >= cap + 2:
            break
        why = (
            sequential.SPREAD_WHY
            if len(counted) < sequential.MIN_LOOK
            else sequential.UNDECIDED_WHY
        )
        gone = sequential.replaces(rows, replaced)
        if gone:  # an excluded process is replaced, and the replacement says whom it replaces
            why = sequential.replacement_why(gone)
            replaced.add(gone)
        tries += 1  # a process that fails is left out, and counts here
        if not one(why, pinned=False):
            stopped = "budget"
            break
    timed = len(rows0) + len(extra)
    why = sequential.pinned_why([first.get(p) or {} for p in sequential.PROCESS_OF_PHASE] + extra)
    if why and cap > 1:
        one(why, pinned=True)
    seq = (
        {
            "cap": cap,
            "looks": sequential.looks(cap),
            "level": level,
            "thresholds": sorted({1.0, rules["min_speedup"], *questions.speedups}),
            **({"questions": questions.texts} if questions.texts else {}),
            "margin": margin,
            "timed": timed,
            "stopped": stopped,
            "looks_at": looked,
        }
        if cap >= sequential.MIN_LOOK
        else None
    )
    if not extra and seq is None:
        return None
    return {"processes": extra, **({"sequence": seq} if seq else {})}


def run_in_turn(
    plan: list[Spec],
    fix_budget: float,
    fix_spent: float,
    deadline: float,
    timeout_s: float,
    run_one: RunOne,
) -> tuple[list[dict], dict | None]:
    """Each spec of `plan` run by `run_one`, one after another, within the deadline and, for those
    that count against it, the fix budget (`fix_spent` of it already spent): the ones left untried
    (each with why), and the failure that says how many the deadline left unrun (or None)."""
    not_tried = []
    for i, spec in enumerate(plan):
        if time.monotonic() > deadline - 1:
            return not_tried, {
                "phase": "strategies",
                "message": f"{len(plan) - i} strategy comparison(s) not run: the "
                f"{timeout_s:g}s limit was used up",
            }
        if spec.uses_fix_budget and fix_spent >= fix_budget:
            not_tried.append({"spec": spec.to_dict(), "why": budget_used_up(fix_budget)})
            continue
        started = time.monotonic()
        run_one(i, spec)
        if spec.uses_fix_budget:
            fix_spent += time.monotonic() - started
    return not_tried, None


def fix_budget(compile_result: dict | None, options: Options) -> float:
    """Seconds the tried fixes may take: --fix-budget, else four cold first calls (20 s at least)."""
    if options.fix_budget_s is not None:
        return options.fix_budget_s
    first = (compile_result or {}).get("first_call_s") or 0.0
    return max(20.0, 4 * first)


def go_signal(cold: Mapping[str, dict | None], options: Options) -> dict:
    """What the warm child is told once the cold child is done (`cold`: its compile, runtime and
    plan results): whether to run at all, the compiled call's time (its profiler budget), and the
    planned experiments it runs after its own phases (`Spec.shares_process`: each saves a process
    start, torch's import and build(), and compiles from the main cache) within the fix budget."""
    run = cold.get("compile") is not None
    runtime = cold.get("runtime") or {}
    planned = (cold.get("plan") or {}).get("strategies", []) if run else []
    return {
        "run": run,
        "per_call_s": (runtime.get("compiled") or {}).get("median_s"),
        "experiments": [d for d in planned if Spec.from_dict(d).shares_process],
        "fix_budget_s": fix_budget(cold.get("compile"), options),
    }


def warm_experiments(
    events: list[dict], failure: dict | None
) -> tuple[set[str], float, list[dict]]:
    """What the warm process did with its experiments: the phases it ran (finished or failed, the one
    it died in included: a failure is that experiment's finding) or left untried, the fix budget they
    spent, and the untried ones' records. One it never started is run in a child of its own."""
    ran = {
        ev["phase"]
        for ev in events
        if ev.get("event") in ("done", "failed") and str(ev.get("phase")).startswith(PHASE_PREFIX)
    }
    if failure and str(failure.get("phase")).startswith(PHASE_PREFIX):
        ran.add(failure["phase"])
    spent = sum(
        ev.get("seconds") or 0.0
        for ev in events
        if ev.get("event") == "done"
        and ev.get("phase") in ran
        and Spec.from_dict(ev["data"]["spec"]).uses_fix_budget
    )
    untried = [
        {"spec": ev["spec"], "why": ev["why"]} for ev in events if ev.get("event") == "not_tried"
    ]
    return ran | {ev["phase"] for ev in events if ev.get("event") == "not_tried"}, spent, untried


# the main analysis's phases a planned fix is compared with (fixes.before_figures)
BEFORE_PHASES = ("graph_breaks", "compile", "runtime", "numerics", "recompiles")


def stance_fix(results: Mapping[str, dict | None], options: Options) -> list[Spec]:
    """The guard-skipping stance, once the warm child measured guard cost (`results`: the profile
    and BEFORE_PHASES; planned by the parent: the cold child can't)."""
    from ..report.rules import guard_share
    from ..report.sections import guard_cost
    from ..verdict.thresholds import RULES

    profile, runtime = results.get("profile") or {}, results.get("runtime") or {}
    cost = guard_cost(profile)  # by removal where exact (probes/guard_ab.py), else the profiler's
    over, median = (
        cost["overhead_s_per_call"],
        cost.get("call_s") or (runtime.get("compiled") or {}).get("median_s"),
    )
    if not options.fixes or over is None or not median:
        return []
    before = before_figures({name: results.get(name) for name in BEFORE_PHASES})
    return plan_stance(guard_share(over, median), RULES["guard_overhead_fraction"], before)


def across_processes(results: Mapping[str, dict | None]) -> dict | None:
    """The main row's speedup across the processes that timed it (what a fix run in a child of its
    own is compared with), from the timing phases' results (`sequential.PROCESS_OF_PHASE` and
    `EXTRA_PHASE`)."""
    found = sequential.timed(dict(results))
    return claims.combine(found, sequential.sequence(dict(results))) if found else None
