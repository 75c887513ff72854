"""Advice that was tried, not guessed: fixes that need no source edit, and the layer a loss comes from.

Fixes. For each finding whose fix is a switch the user can flip without editing their model
(a `torch._dynamo.config` flag named in the break's hint or registry entry, compiled autograd
for a backward inside a compiled step, the `skip_guard_eval_unsafe` stance when guards dominate,
glibc's malloc thresholds pinned in the environment when compiled calls page-fault heavily), a
fresh child applies it and measures it with the real backend (compile, paired timing against eager,
numerics); a `torch._dynamo.config` switch first with the cheap `eager` backend (does the break go
away? counted from Dynamo's graph-break log, as the main analysis counts), and with the real
backend only if it does. Shape fixes (`dynamic=True`, `mark_dynamic`) and regional compilation are
the strategy rows already measured: they are cited, never compiled again.

Ablation. When compiled is not faster, or numerics fail, the same subject runs with
`backend="eager"` (Dynamo only) and `"aot_eager"` (plus AOTAutograd) next to the real backend
(the main analysis, reused): the first layer that is already slower, or already drifts, is
where the loss comes from.

Each planned fix or ablation is a typed spec (specs.py): the line a user writes and how the fix is
applied in the child belong to its class; this module plans them, runs them, and words the outcome.
Planning is torch-free (the parent adds the stance fix once the warm child has measured guards).
"""

from __future__ import annotations

import os
import platform
import re
import time
from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

from .. import units
from ..outcomes import FixOutcome
from ..report.encoding import as_sent
from ..report.processes.claims import Claim, apart
from ..report.processes.regimes import HEAVY_FAULTS_PER_CALL
from ..report.rules import ACROSS_WORDS
from ..report.sections.breaks import GraphBreak
from ..report.sections.fixes import Check, FixSide
from .specs import (
    AblationSpec,
    ConfigFix,
    ConfigSetFix,
    DisableModuleFix,
    EnvFix,
    FixSpec,
    InductorConfigFix,
    Spec,
    StanceFix,
)

if TYPE_CHECKING:
    from ..report.phases.results import MainResults
    from ..report.sections import FixRow

# the forms PyTorch's hints name a boolean switch in: "`torch._dynamo.config.X = True`",
# "Set `torch._dynamo.config.X` to True" (GB0293), "Change `torch._dynamo.config.X` to `True`" (GB0231)
CONFIG_HINT = re.compile(
    r"torch\._dynamo\.config\.(\w+)\s*=\s*True"
    r"|(?:[Ss]et|[Cc]hange)\s+`?torch\._dynamo\.config\.(\w+)`?\s+to\s+`?True"
)
# set-valued switches: print → reorderable_logging_functions (GB0059), a Logger method →
# ignore_logging_functions (GB0291); the member is read from the break's explanation/context
SET_HINT = re.compile(
    r"torch\._dynamo\.config\.(reorderable_logging_functions|ignore_logging_functions)"
)
PRINTED = re.compile(r"builtin (?:operator )?`(print)`")
LOGGER_METHOD = re.compile(r"method: <Logger [^>]*>\.(\w+)")
ABLATION_BACKENDS = ("eager", "aot_eager")
# glibc returns big freed blocks to the OS, and faults them in again on the next call, as its dynamic
# mmap/trim thresholds decide from the heap's history: the same model can page-fault thousands of times
# per call in one process and not at all in another (Inductor's per-call channels-last weight copies on
# conv nets). Pinned in the environment (no code edit; glibc reads it at start), the heap keeps them.
MALLOC_PINNED = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}


def budget_used_up(budget_s: float) -> str:
    """Why a planned fix, ablation or remedy was not tried (in the warm process or by the parent)."""
    return f"the fix budget ({budget_s:.0f} s, --fix-budget) was used up"


IN_PROCESS = "the main row timed in this same process"
ACROSS_PROCESSES = "the main row across the analysis processes"


def judged(spec: Spec, timing: dict | None, timed_in: str) -> Spec:
    """A fix compared with the main row as `timing` gives it: timed in its own process
    (`IN_PROCESS`, the warm process: the same allocator state and neighbours on both sides, its
    page faults too), or across processes (`ACROSS_PROCESSES`, a fix in a child of its own: its
    interval covers process-to-process spread), never with another process's pairs."""
    if isinstance(spec, FixSpec) and timing and timing.get("speedup") is not None:
        spec.before.update(speedup=timing["speedup"], speedup_ci=timing.get("speedup_ci"))
        if timed_in == IN_PROCESS:
            compiled = timing.get("compiled") or {}
            spec.before["faults_per_call"] = compiled.get("minor_faults_per_call")
        spec.before["timed_in"] = timed_in
    return spec


def config_fixes(findings: list[GraphBreak]) -> dict[str, list[str]]:
    """Config switches named by the findings' hints (or implied: compiled autograd for a step's backward)."""
    out: dict[str, list[str]] = {}
    for f in findings:
        texts = [*(f.hints or []), f.full_reason or ""]
        names = {m.group(1) or m.group(2) for t in texts for m in CONFIG_HINT.finditer(t)}
        if f.origin == "step" and "backward" in (f.reason or "").lower():
            names.add("compiled_autograd")
        for name in sorted(names):
            out.setdefault(name, [])
            if f.id and f.id not in out[name]:
                out[name].append(f.id)
    return out


def set_fixes(findings: list[GraphBreak]) -> dict[tuple[str, str], list[str]]:
    """(set-valued switch, member) named by the findings' hints, with the findings each addresses:
    `print` for reorderable_logging_functions, `logging.Logger.<method>` for ignore_logging_functions."""
    out: dict[tuple[str, str], list[str]] = {}
    for f in findings:
        if f.origin != "user":  # the logging module's own frames (Logger._log, findCaller)
            continue
        text = "\n".join([*(f.hints or []), f.full_reason or ""])
        for m in SET_HINT.finditer(text):
            if m.group(1) == "reorderable_logging_functions":
                found = PRINTED.search(text)
                member = found.group(1) if found else None
            else:
                found = LOGGER_METHOD.search(text)
                public = found and not found.group(1).startswith("_")
                member = f"logging.Logger.{found.group(1)}" if public else None
            if member:
                ids = out.setdefault((m.group(1), member), [])
                if f.id and f.id not in ids:
                    ids.append(f.id)
    return out


def plan(
    results: MainResults, options: Any, min_speedup: float, patch_specs: list[Spec] | None = None
) -> list[Spec]:
    """Fix and ablation children to run after the main analysis (in the cold child, from its results).
    Config switches come first (one line, though process-wide), then the source patches planned for
    the breaks in the user's own code (`patch_specs`, experiments/proving/)."""
    if not getattr(options, "fixes", True):
        return []
    before, findings = results.before, results.graph_breaks.unique or []
    out: list[Spec] = [
        ConfigFix(name, addresses=ids, before=before)
        for name, ids in config_fixes(findings).items()
    ]
    out += [
        ConfigSetFix(name, member=member, addresses=ids, before=before)
        for (name, member), ids in set_fixes(findings).items()
    ]
    out += list(patch_specs or [])
    out += numerics_fixes(results, options, before)
    ci = before["speedup_ci"] or [None, None]
    not_faster = ci[0] is not None and ci[0] <= min_speedup
    if (
        not_faster or before["numerics_passed"] is False
    ) and options.backend not in ABLATION_BACKENDS:
        out += [AblationSpec(b) for b in ABLATION_BACKENDS]
    return out + allocator_fixes(before)  # last: the fix budget goes to the ablation first


# The accuracy harness's rounding setting (benchmarks/dynamo/common.py), for reduced precision. Its other
# setting, fallback_random, is how a random model's numerics are compared at all (--fallback-random,
# probes/numerics.py), so it is never a fix to try: a random model that fails was compared with it.
NUMERICS_SETTINGS = ("emulate_precision_casts",)


def numerics_fixes(results: MainResults, options: Any, before: dict) -> list[FixSpec]:
    """When compiled outputs drift with Inductor, the harness's numerics settings, each tried alone."""
    if results.numerics.passed is not False:
        return []
    out: list[FixSpec] = []
    if options.backend not in ABLATION_BACKENDS:
        out += [
            InductorConfigFix(n, addresses=["numerics"], before=before) for n in NUMERICS_SETTINGS
        ]
    origin = results.drift.origin  # compile around the module that drifts
    if origin and origin.name:
        out.append(
            DisableModuleFix(
                origin.name,
                class_name=origin.class_ or "",
                addresses=["numerics"],
                before=before,
            )
        )
    return out


def allocator_fixes(before: dict) -> list[FixSpec]:
    """Pinned malloc thresholds, when compiled calls page-fault heavily under glibc (and they are not
    pinned already): the fix child starts with them in its environment."""
    faults = before.get("faults_per_call")
    # the faults that put a process in the page-faulting regime (1 MiB of fresh pages per call)
    if faults is None or faults < HEAVY_FAULTS_PER_CALL or platform.libc_ver()[0] != "glibc":
        return []
    if all(os.environ.get(k) == v for k, v in MALLOC_PINNED.items()):
        return []
    return [
        EnvFix("malloc_thresholds", env=dict(MALLOC_PINNED), addresses=["runtime"], before=before)
    ]


def plan_stance(guard_fraction: float | None, limit: float, before: dict) -> list[FixSpec]:
    """The guard-skipping stance, planned by the parent once the warm child measured guard cost."""
    if guard_fraction is None or guard_fraction <= limit:
        return []
    return [StanceFix(addresses=["guards"], before=before)]


# -- in the child -------------------------------------------------------------------------------


def _cheap_breaks(workload: Any) -> dict:
    """Graph breaks of one call with the cheap `eager` backend, as the main analysis counts them."""
    from ..probes import calls, graph_breaks
    from ..target.pristine import reset_rng_state
    from .pair import fresh_copies
    from .training import Subject

    device = calls.detect(workload.model, workload.call_args)
    subject = Subject(fresh_copies(workload, device)())
    reset_rng_state()
    with workload.context(device.type):
        gb = graph_breaks.probe(subject.fn, workload.call_args)["graph_breaks"]
    return {
        "backend": "eager",
        "graph_breaks": gb["count"],
        "remaining": [
            {"reason": f["reason"], "file": f["file"], "line": f["line"]} for f in gb["unique"]
        ],
    }


def _breaks_change(before: FixSide, after: FixSide, cheap: dict | None) -> tuple[int, int] | None:
    """(graph breaks before, after) when both are known: after from the real backend, else the
    cheap eager-backend count."""
    b, a = before.graph_breaks, after.graph_breaks
    if a is None and cheap is not None:
        a = cheap.get("graph_breaks")
    return (b, a) if b is not None and a is not None else None


def _count_word(before: int, after: int) -> FixOutcome:
    """A fix that removes no break: 'multiplies graph breaks' (at least twice as many), 'adds graph
    breaks', or 'no effect'."""
    if after >= 2 * max(before, 1):
        return FixOutcome.MULTIPLIES_BREAKS
    return FixOutcome.ADDS_BREAKS if after > before else FixOutcome.NO_EFFECT


def _removes_word(before: int, after: int, slower: bool) -> FixOutcome:
    """A fix that removes breaks without a speed gain: the break (one of one) or breaks, and
    whether it is slower."""
    if after == 0 and before == 1:
        return FixOutcome.REMOVES_BREAK_SLOWER if slower else FixOutcome.REMOVES_BREAK_NO_GAIN
    return FixOutcome.REMOVES_BREAKS_SLOWER if slower else FixOutcome.REMOVES_BREAKS_NO_GAIN


class Speed(NamedTuple):
    """A fix row's speed with the fix against without (`speed_change`): the claim (FASTER, SLOWER
    or UNDECIDED of the one enum, report/processes/claims.py), its words, and `noise`, what the
    enum cannot say: the row's own process put the sides apart while its decision interval (the
    spread between processes counted) does not, "within the noise", not "no effect"."""

    claim: Claim
    words: str
    noise: bool = False


class Outcome(NamedTuple):
    """A fix row's outcome (`outcome`): its word (FixOutcome.HELPS, NO_EFFECT, ...), why, and its
    speed claim (None where it was not judged on speed: a numerics fix, broken numerics)."""

    word: FixOutcome
    why: str
    speed: Claim | None = None


def speed_change(before: FixSide, after: FixSide, decision_ci: Sequence[float] | None) -> Speed:
    """The speed with the fix against without.

    With the row's decision interval (the parent's, rules.row_decision_interval: the spread
    between processes in it, the candidate rows counted) the claim rests on that interval, and a
    row whose own process's interval clears the one before while its decision interval does not is
    'noise', said so. Without one (in the child, which has not seen the other processes yet, or a
    row saved before the rule), on the row's own interval, as the progress line shows it."""
    b_ci, a_ci = before.speedup_ci, after.speedup_ci
    own = apart(a_ci, b_ci)
    if decision_ci is None:
        if own is None:
            return Speed(Claim.UNDECIDED, "speed not significantly different")
        if own is Claim.FASTER:
            return Speed(own, "significantly faster than without it (the 95% CIs do not overlap)")
        return Speed(own, "significantly slower than without it")
    across = f"{units.span(decision_ci)} {ACROSS_WORDS}"
    before_text = f"{units.span(b_ci)} before" if units.span(b_ci) else "no interval before"
    side = apart(decision_ci, b_ci)
    if side:
        wholly = "above" if side is Claim.FASTER else "below"
        return Speed(
            side, f"significantly {side} than without it ({across}, {wholly} the {before_text})"
        )
    if own:
        return Speed(
            Claim.UNDECIDED,
            f"{own} in its own process ({units.ci(a_ci)} against the {before_text}), but within "
            f"the noise between processes ({across})",
            noise=True,
        )
    return Speed(
        Claim.UNDECIDED,
        f"speed within the noise between processes ({across}, against the {before_text})",
    )


def outcome(
    before: FixSide, after: FixSide, cheap: dict | None, decision_ci: Sequence[float] | None = None
) -> Outcome:
    """The outcome word, why, and the speed change. "helps" only for a significant speed gain (or, for a numerics
    fix, a check that passes with it); a fix that only changes a count says what it changed.
    `decision_ci`: the row's decision interval, once the parent has made it (`reword`); a speed
    difference its own process shows but that interval does not is "within the noise"."""
    if before.numerics_passed is False:  # a numerics fix: judged on numerics first
        if after.numerics_passed is True:
            speed = units.ratio(after.speedup, after.speedup_ci)
            return Outcome(
                FixOutcome.HELPS, f"the numerics check passes with it (compiled {speed} vs eager)"
            )
        if after.numerics_passed is False:
            return Outcome(
                FixOutcome.NO_EFFECT,
                f"compiled outputs still drift (max abs error {after.max_abs_err})",
            )
    if after.numerics_passed is False:
        return Outcome(
            FixOutcome.BREAKS_NUMERICS,
            f"compiled outputs drift (max abs error {after.max_abs_err})",
        )
    claim, speed, noise = speed_change(before, after, decision_ci)
    faster, slower = claim is Claim.FASTER, claim is Claim.SLOWER
    change = _breaks_change(before, after, cheap)
    counts = f"graph breaks {change[0]} → {change[1]}" if change else ""
    if change and change[1] > change[0]:
        word = FixOutcome.HELPS if faster else _count_word(*change)
        return Outcome(word, f"{counts}; {speed}", claim)
    if faster:
        return Outcome(
            FixOutcome.HELPS,
            speed + (f" ({counts})" if counts and change[1] < change[0] else ""),
            claim,
        )
    if change and change[1] < change[0]:
        return Outcome(_removes_word(*change, slower), f"{counts}; {speed}", claim)
    if slower:
        return Outcome(FixOutcome.SLOWER, speed, claim)
    if noise:
        return Outcome(FixOutcome.WITHIN_THE_NOISE, f"{speed}; no break removed", claim)
    return Outcome(FixOutcome.NO_EFFECT, f"{speed} and no break removed", claim)


def reword(row: FixRow) -> None:
    """In the parent, once the row has its decision interval (verdict/tried.py): its outcome word
    and why judged on that interval. The child worded them from its own process's interval (the
    only one it had); what `run` added after those words (the spec's note) is kept. A row whose
    outcome is not those words (a source patch that failed its verification) is left as it is."""
    if not row.measured or row.decision_method is None:
        return
    if row.patch is not None:
        return _reword_patch(row)
    before, after = row.before, row.after_side
    old = outcome(before, after, row.cheap)
    text = row.why or ""
    if row.outcome != old.word or old.why not in text:
        return
    new = outcome(before, after, row.cheap, row.decision_ci)
    row.outcome, row.why = new.word, text.replace(old.why, new.why, 1)


def judge_patch(checks: dict[str, Check], judged: Outcome) -> tuple[list[str], FixOutcome, str]:
    """A source patch's "not slower" check (set in `checks`) from its outcome's speed change
    (`outcome`: Claim.SLOWER fails it, whatever the words), then (the checks that failed,
    the outcome, why): 'fails verification' naming them, else the outcome words themselves;
    verified means none failed. Used in the child (its own process's interval) and again in the
    parent (`reword`, the decision interval)."""
    word, why, speed = judged
    slower = speed is Claim.SLOWER
    checks["not slower"] = Check(
        passed=not slower, detail=f"compiled with the patch vs without: {why}"
    )
    failed = [name for name, c in checks.items() if not c.passed]
    if failed:
        return failed, FixOutcome.FAILS_VERIFICATION, "failed: " + ", ".join(failed) + f"; {why}"
    return failed, word, why


def _reword_patch(row: FixRow) -> None:
    """A source patch re-judged on its decision interval: "not slower", verified, the words."""
    p = row.patch
    assert p is not None
    judged = outcome(row.before, row.after_side, row.cheap, row.decision_ci)
    p.failed, row.outcome, row.why = judge_patch(p.checks, judged)
    p.verified = not p.failed


AFTER_FIGURES = (
    "median_s",
    "eager_median_s",
    "max_abs_err",
    "faults_per_call",
    "samples",
    "calls_per_sample",
    "cache",  # its child starts from a copy of the main cache: which of its graphs were hits
)


def after_figures(real: dict) -> FixSide:
    """A fix row's figures with the fix applied, from its `pair.main_pair` row."""
    return FixSide.of(
        graph_breaks=real["graph_breaks"],
        recompiles=None,
        speedup=real["speedup"],
        speedup_ci=real["speedup_ci"],
        numerics_passed=real.get("numerics_passed"),
        first_call_s=real["first_call_s"],
        **{k: real.get(k) for k in AFTER_FIGURES},
    )


def run_ablation(spec: AblationSpec, workload: Any, options: Any) -> dict:
    """The main subject with a lower layer's backend: the ablation table's row."""
    from .pair import main_pair

    row = main_pair(workload, options, spec.backend, options.mode)
    row.update(name=spec.backend, backend=spec.backend)
    return row


def run(spec: FixSpec, workload: Any, options: Any) -> dict:
    """The fix applied in this fresh child and measured against the figures before it: its row."""
    from .pair import main_pair

    t0 = time.perf_counter()
    before = FixSide.of(**spec.before)
    row: dict = {
        "fix": spec.line,
        "kind": spec.fix_kind,
        "name": spec.name,
        "addresses": spec.addresses,
        "before": before,
    }
    try:
        with spec.applied_on(workload):
            cheap = None
            if spec.cheap_first:
                cheap = _cheap_breaks(workload)
                row["cheap"] = cheap
                if before.graph_breaks is not None and cheap["graph_breaks"] >= before.graph_breaks:
                    now = sorted({r["reason"].splitlines()[0] for r in cheap["remaining"]})
                    row.update(
                        outcome=_count_word(before.graph_breaks, cheap["graph_breaks"]),
                        after=FixSide.of(graph_breaks=cheap["graph_breaks"]),
                        why=f"with backend='eager' the breaks stay ({before.graph_breaks} → "
                        f"{cheap['graph_breaks']}: {'; '.join(now)[:300]}), so the real backend was not tried",
                    )
                    row["seconds"] = time.perf_counter() - t0
                    return as_sent(row)
            real = main_pair(
                workload,
                options,
                options.backend,
                options.mode,
                after_first_call=spec.after_first_call,
                against=before.speedup,
            )
    except Exception as exc:  # noqa: BLE001 - a fix that fails is a finding
        row.update(
            outcome=FixOutcome.FAILS,
            why=f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"[:500],
        )
        row["seconds"] = time.perf_counter() - t0
        return as_sent(row)
    after = after_figures(real)
    row["after"] = after
    row["outcome"], row["why"], _ = outcome(before, after, cheap)
    if spec.note:
        row["why"] += "; " + spec.note
    row["seconds"] = time.perf_counter() - t0
    return as_sent(row)  # its figures typed up to here, as the parent reads them
