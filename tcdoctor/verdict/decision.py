"""The decision, from measured figures only: one decision over every measured way.

compile              significantly faster (95% CI of the speedup above rules.min_speedup), the
                     compile time pays back within the expected number of calls, numerics do not fail
                     (a verdict without a numerics check says so), and no frame of the user's runs
                     eagerly; or the analysed way is not faster but another measured way (a mode, a
                     training way) is, and the reason names it.
compile-after-fixes  a fix the user can make pays, by the evidence: one tried in a fresh process made
                     compiled significantly faster than eager by its decision interval (its own
                     noise, the spread between the headline's processes, Bonferroni over the rows
                     that could earn it: report/rules.row_decision_interval; the line is named),
                     or the bounded gain of the breaks in their own code that have a fix tcdoctor
                     can name (break_fix.py: a verified patch, a switch, a named rewrite, a
                     PyTorch hint that can apply) exceeds what compiled must gain; or compiled is
                     faster but frames of theirs that such a fix addresses run eagerly. Never for
                     a break whose only way out is a rewrite by hand.
dont-compile         the compiled model fails or drifts numerically; or nothing measured or bounded
                     pays (the reasons name each tried fix and what it did, who owns each break
                     that remains, and what a rewrite by hand of a break with no fix could gain:
                     its bound); or nothing was compiled (no graph: it cannot be faster as
                     written, whatever the interval); or it never pays back its compile time.
cant-tell            "Can't tell yet": nothing else decides and the speed interval is undecided (it
                     straddles a threshold: "can't tell at this precision"), or the allocator
                     regimes the processes fell in point different ways (regimes that all read one
                     side decide it); never "don't compile" on no evidence.

`decision(figures, rules)` is pure (tests drive it with literal Figures); `verdict.decide` puts it
together with the advice rules and the recommendations.
"""

from __future__ import annotations

from .. import units
from ..outcomes import Decision, FixOutcome
from ..report.processes.claims import Claim
from ..report.processes.regimes import LOAD_CORES, ROOM_CORES
from ..report.sections import (
    FixRow,
    GraphBreak,
    RemedyRow,
)
from ..report.sections.breaks import SkippedFrame
from ..thresholds import Rules
from .advice import library_calls
from .break_fix import BreakFix, break_fix
from .break_pays import Gain, Span, needed, pays
from .figures import Figures, Way


def decision(fig: Figures, rules: Rules) -> tuple[Decision, list[str]]:
    """compile / compile-after-fixes / dont-compile / cant-tell, and the reasons, from the figures
    alone (`_decision`), then what the threads did on a loaded machine (`thread_reason`)."""
    verdict, reasons = _decision(fig, rules)
    extra = thread_reason(fig)
    return verdict, reasons + ([extra] if extra else [])


def thread_reason(fig: Figures) -> str | None:
    """When the threads asked for exceed the cores other programs left free (their median load
    over the counted processes, rounded) and the step needed them (the machine had less than
    ROOM_CORES idle: the step's own CPU use and the others' filled it), what that does and what to
    do; None otherwise. A step waiting on its GPU keeps about one core busy: on 16 cores, one core
    of others leaves 14 idle and its threads wait on nothing (a report without idle cores read:
    the others' load alone)."""
    if not fig.threads or not fig.cpu_count or fig.others_cores is None:
        return None
    free = max(1, fig.cpu_count - round(fig.others_cores))
    if fig.others_cores < LOAD_CORES or fig.threads <= free:  # a loaded round's load
        return None
    if fig.idle_cores is not None and fig.idle_cores >= ROOM_CORES:  # room left: not CPU-bound
        return None
    return (
        f"Timed with {fig.threads} thread(s) while other programs used {fig.others_cores:.1f} of "
        f"{fig.cpu_count} core(s) (median round): only {free} core(s) were free, so OpenMP threads "
        f"waited on each other and every figure above is slower and noisier than on a quiet "
        f"machine; analyse again with --threads {free}, or on a quiet machine."
    )


def _decision(fig: Figures, rules: Rules) -> tuple[Decision, list[str]]:
    """The decision and its reasons from the figures alone.

    One decision over every measured way: the main analysis, the fixes tried in fresh processes,
    the other ways of compiling (modes, training ways, regions), and the breaks' owners. "After
    fixes" only names a fix the user can make whose gain was measured, or bounded above the loss.
    """
    horizon = int(rules.expected_calls)
    faster = fig.significantly_faster(rules)
    if fig.compile_failed_message is not None:
        return Decision.DONT_COMPILE, [f"The compiled model failed: {fig.compile_failed_message}"]
    if fig.numerics_passed is False:
        err, failed = fig.numerics_max_abs_err, fig.numerics_failed_outputs
        speed = (
            f"Compiled is {fig.faster_text}, but the n"
            if fig.speedup is not None and faster
            else "N"
        )
        return Decision.DONT_COMPILE, [
            f"{speed}umerics check failed"
            + (f" (max abs error {units.sci(err)} vs eager)" if err is not None else "")
            + (f" on {', '.join(failed[:3])}" if failed else "")
            + "."
            + _drift_origin(fig)
            + _miscompile(fig)
        ]
    if fig.speedup is None:
        why = fig.speed_not_measured or "no runtime figures"
        return Decision.DONT_COMPILE, [f"Speed was not measured ({why}), so no gain is shown."]
    if not faster or fig.graphs == 0:  # no graph: a faster reading is noise (_nothing_compiled)
        return _not_faster(fig, rules)
    be_cold = fig.break_even_cold
    remedy = fig.best_remedy(rules)
    if fig.never_repaid(horizon):
        late = (
            f"Compiled is {fig.faster_text}, but the compile time is repaid only after "
            f"{be_cold['calls']:,} calls, beyond the expected {horizon:,}"
        )
        if remedy is not None and remedy.steps_to_repay <= horizon:
            return Decision.COMPILE, [
                f"{late}; with {remedy.title} it is repaid after {remedy.steps_to_repay:,} calls "
                f"({fig.remedy_speed_cost(remedy)}): `{remedy.line}`."
            ]
        return Decision.DONT_COMPILE, [late + "."]
    eager_parts = _eager_parts(fig, fixable=True)
    if eager_parts:
        return Decision.COMPILE_AFTER_FIXES, [
            f"Compiled is {fig.faster_text}, but parts of the model run eagerly ({eager_parts})."
        ]
    reasons = [f"Compiled is {fig.faster_text}."]
    be_warm = fig.break_even_warm
    if be_cold and be_cold["calls"] <= horizon:
        reasons.append(
            f"Compile time is repaid after {be_cold['calls']:,} calls (cold cache), "
            f"within the expected {horizon:,}."
        )
    elif be_cold and be_warm:
        reasons.append(
            f"With a warm inductor cache the compile time is repaid after {be_warm['calls']:,} calls, "
            f"within the expected {horizon:,}; a cold compile needs {be_cold['calls']:,}: keep the "
            "cache (TORCHINDUCTOR_CACHE_DIR on persistent storage)."
        )
    if remedy is not None and be_cold:
        reasons.append(_remedy_reason(fig, remedy, be_cold["calls"]))
    best = best_way(fig, rules)
    if best and best.row.speedup and best.row.speedup > (fig.speedup or 0):
        reasons.append(
            f"Fastest measured way: {best.label}, {best.row.vs_eager()} vs eager (see the strategy "
            "table)."
        )
    reasons += _remaining(fig, rules)
    return Decision.COMPILE, reasons


def _remedy_reason(fig: Figures, remedy: RemedyRow, cold_calls: int) -> str:
    """'Pays back after 12,866 calls cold; after 1,530 with regional compilation, same speed
    within the CI: `line`.'"""
    return (
        f"Pays back after {cold_calls:,} calls cold; after {remedy.steps_to_repay:,} with "
        f"{remedy.title}, {fig.remedy_speed_cost(remedy)}: `{remedy.line}`."
    )


def _drift_origin(fig: Figures) -> str:
    """' The drift starts in `block.total` (Total, drift_sum.py:22): 1 off fp64 compiled, 0.0494
    eager; compiled around it (tried): numerics pass, 0.36× (95% CI …) vs eager.' ('' when no
    module was named); the fix's own figures, so the headline and the fixes table agree."""
    o = fig.drift_origin
    if not o:
        return ""
    # the root module's name is '': it is the whole model, never an empty name (issue 64)
    name = f"`{o.name}`" if o.name else "the whole model"
    text = (
        f" The drift starts in {name} ({o.class_}, "
        f"{units.file_line(o.class_file, o.class_line)}): "
        f"{units.sci(o.err_vs_fp64)} off fp64 compiled, "
        f"{units.sci(o.eager_err_vs_fp64)} eager"
    )
    around = next(
        (r for r in fig.tried_fixes if r.kind == "disable_module" and r.after is not None), None
    )
    if around is not None:
        passes = {True: "numerics pass", False: "numerics still fail"}.get(
            around.after_side.numerics_passed, "numerics not compared"
        )
        text += f"; compiled around it (tried): {passes}, {around.vs_eager()} vs eager"
    return text + "."


def _miscompile(fig: Figures) -> str:
    """' The first compiled graph that diverges is graph 1/3 of `step` (ode.py:50), specialised on
    …, at call 1 …: a compiler bug, most likely (Inductor): …; reproducer: tcdoctor-repro.py.'
    ('' when the search did not run or found no graph)."""
    from ..report.phases.miscompile import call_text, graph_name, specialised

    m = fig.miscompile
    if m is None or not m.found:
        return ""
    text = (
        f" The first compiled graph that diverges is {graph_name(m)} ({specialised(m)}), at "
        f"{call_text(m)}: {m.verdict or 'not classified'}"
    )
    if m.is_bug:
        text += f"; reproducer: {m.script_path or 'tcdoctor-repro.py'} (beside the reports)"
    return text + "."


def _eager_parts(fig: Figures, fixable: bool | None = None) -> str:
    """What forces part of the model to run eagerly that the user can change: frames skipped in
    their code, the recompile limit (their calls recompile); '' when nothing. `fixable` True: only
    the skipped frames whose break has a fix (`can_fix`) and the limit (a switch); False: only
    those whose break has none; None: all."""
    skipped = [f for f in fig.break_findings if f.frame_skipped and f.users]
    if fixable is not None:
        skipped = [f for f in skipped if can_fix(fig, f) is fixable]
    if not fig.break_findings and fig.skipped:  # findings not recorded: count as before
        skipped_n = fig.skipped if fixable is not False else 0
    else:
        skipped_n = len(skipped)
    limit_hit = fig.limit_hit and fixable is not False
    if not skipped_n and not limit_hit:
        return ""
    limit = ", recompile limit hit" if limit_hit else ""

    def named(f: GraphBreak) -> str:
        """'the model's entry `Detector.forward` at nms_loop.py:34 runs eagerly: a graph break
        inside a loop (nms_loop.py:43) skips the whole frame'."""
        sf = f.skipped_frame or SkippedFrame()
        who = "the model's entry " if sf.entry else ""
        why = "a graph break inside a loop" if f.in_loop else f"a graph break ({f.reason})"
        return (
            f"{who}`{sf.function}` at {units.file_line(sf.file, sf.line)} runs eagerly: "
            f"{why} ({units.file_line(f.file, f.line)}) skips the whole frame"
        )

    known = [f for f in skipped if f.skipped_frame and f.skipped_frame.function]
    if known and len(known) == skipped_n:  # each skipped frame named (older reports: counted)
        shown = [named(f) for f in sorted(known, key=lambda f: not f.skipped_frame.entry)]
        more = f"; {len(shown) - 2} more skipped frame(s)" if len(shown) > 2 else ""
        return "; ".join(shown[:2]) + more + limit
    return f"{skipped_n} skipped frame(s){limit}"


def _theirs(fig: Figures) -> tuple[GraphBreak, ...]:
    """Breaks in code the user did not write, less those inside a library that a source patch
    wraps at the user's calling line (advice.library_calls: theirs to wrap, said apart)."""
    wrapped = {id(f) for c in library_calls(fig) for f in c.findings}
    return tuple(f for f in fig.break_findings if not f.users and id(f) not in wrapped)


def _owners(findings: tuple[GraphBreak, ...]) -> str:
    """'2 in transformers, 1 in PyTorch itself, 2 in tcdoctor's standard training step'."""
    counts: dict[str, int] = {}
    for f in findings:
        who = f.library if f.origin == "library" and f.library else f.origin_text or f.origin
        who = who or "code you did not write"
        counts[who] = counts.get(who, 0) + (f.occurrences or 1)
    return ", ".join(f"{n} in {who}" for who, n in counts.items())


def _remaining(fig: Figures, rules: Rules) -> list[str]:
    """A compile verdict's further gains: breaks in the user's code with a fix (with what fixing
    them gains), those with none (what a rewrite by hand could gain), and breaks in code they did
    not write said to be none of theirs."""
    out = []
    users = [f for f in fig.break_findings if f.users]
    rewrite = [f for f in users if f.gain_source != "tried" and not can_fix(fig, f)]
    mine = [f for f in users if all(f is not g for g in rewrite)]
    theirs = _theirs(fig)
    out += [f"{c.reason}." for c in library_calls(fig)]
    eager = _eager_parts(fig, fixable=False)
    if eager:
        out.append(f"Parts of the model run eagerly with no fix tcdoctor can name: {eager}.")
    out += _rewrite_reasons(fig, rewrite, None, rules)
    if mine:
        out.append(
            f"{len(mine)} graph break(s) in your code remain; fixing them "
            + (
                f"could gain up to {units.seconds(_gain(mine))} per call ({_gain_kind(mine)})."
                if _gain(mine) is not None
                else "may gain more (not measured)."
            )
        )
    if theirs:
        out.append(
            f"{sum(f.occurrences or 1 for f in theirs)} graph break(s) in code you did not write "
            f"remain ({_owners(theirs)}): nothing to change in your code for them."
        )
    if not fig.break_findings and (fig.breaks or fig.recompiles):
        out.append(
            f"{fig.breaks} graph break(s) and {fig.recompiles} recompile(s) remain; "
            "fixing them may gain more."
        )
    elif fig.recompiles:
        out.append(f"{fig.recompiles} recompile(s) remain (see the advice).")
    return out


def _gain(findings: list[GraphBreak]) -> float | None:
    """What fixing all of them gains per call (measured or bounded); None when any is unknown."""
    gains = [f.gain_s_per_call for f in findings]
    return None if not gains or any(g is None for g in gains) else sum(gains)  # type: ignore[misc]


def _gain_kind(findings: list[GraphBreak]) -> str:
    kinds = {f.gain_source for f in findings}
    if kinds == {"tried"}:
        return "measured by trying " + ", ".join(sorted({f"`{f.gain_fix}`" for f in findings}))
    return "a bound: the time outside graphs minus the eager work that would still run"


def best_way(fig: Figures, rules: Rules) -> Way | None:
    """The fastest other way of compiling that is faster than eager by its decision interval
    (`Way.usable`), numerics not failing, repaid within the horizon."""
    usable = [w for w in fig.ways if w.usable(rules)]
    return max(usable, key=lambda w: w.row.speedup or 0.0) if usable else None


def _best_fix(fig: Figures, rules: Rules) -> FixRow | None:
    """The fastest tried fix that makes compiled faster than eager by its decision interval
    (`FixRow.significantly_faster`: the spread between processes in it, the candidates counted),
    numerics not failing."""
    good = [
        r
        for r in fig.tried_fixes
        if r.significantly_faster(rules) and r.after_side.numerics_passed is not False
    ]
    return max(good, key=lambda r: r.after_side.speedup or 0.0) if good else None


def _not_faster(fig: Figures, rules: Rules) -> tuple[Decision, list[str]]:
    """Compiled as analysed is not significantly faster: is there a measured way, a tried fix, or
    a fix of the user's own whose bounded gain covers the loss? Otherwise: not yet, and who owns
    each blocker."""
    head = f"Compiled is {fig.claim_text(rules)}: {fig.speed_text}"
    if fig.claim(rules) == Claim.UNDECIDED and fig.sequence:
        head += fig.sequence_text
    head += f"; {fig.undecided_why}" if fig.undecided_why else ""  # processes.claims.combine
    fix = _best_fix(fig, rules)
    if fix is not None:
        return Decision.COMPILE_AFTER_FIXES, [
            f"{head}; with `{fix.fix}` (tried in a separate process) it is "
            f"{fix.vs_eager('faster')}: apply it."
        ]
    way = best_way(fig, rules)
    if way is not None:
        r = way.row
        return Decision.COMPILE, [
            f"{head}, but {way.label} is {r.vs_eager('faster')}, "
            f"repaid after {r.steps_to_repay:,} calls: {way.label}."
        ]
    untried = [f for f in fig.break_findings if f.users and f.gain_source != "tried"]
    rewrite = [f for f in untried if not can_fix(fig, f)]  # a rewrite by hand is no fix: apart
    fixable = [f for f in untried if all(f is not g for g in rewrite)]
    need = needed(fig, rules)
    bound = Gain.of(fixable)
    paid = pays(bound, need, rules)
    if fixable and bound is not None and need is not None and paid is True:
        return Decision.COMPILE_AFTER_FIXES, [
            f"{head}; fixing the {len(fixable)} graph break(s) in your code "
            f"({', '.join(f'{f.where}: {_fix_kind(fig, f)}' for f in fixable[:3])}) could gain up "
            f"to {bound.text()} (a bound: the time outside graphs minus the eager work that would "
            f"still run; {bound.span_text(rules)} within the bound's spread), more than the "
            f"{units.percent_span(need)} it must lose to be faster."
        ]
    reasons = [head + "."] + _nothing_compiled(fig)
    reasons += _tried_reasons(fig)
    reasons += _blockers(fig, fixable, bound, need, paid, rules)
    reasons += _rewrite_reasons(fig, rewrite, need, rules)
    if fig.ablation_layer:
        reasons.append(f"Which layer: {fig.ablation_layer}.")
    if fig.significantly_slower and fig.guard_fraction is not None and fig.graphs != 0:
        reasons.append(guard_reason(fig))  # no graph: no guard of a graph to evaluate
    if fig.graphs == 0 or not _cant_tell(fig, rules):
        return Decision.DONT_COMPILE, reasons
    horizon = int(rules.expected_calls)
    if not fig.unrepayable(horizon):
        return Decision.CANT_TELL, reasons
    first = min(x for x in (fig.cold_s, fig.warm_s) if x is not None)
    return Decision.DONT_COMPILE, reasons + [
        f"Whatever the speed: the first call's {units.seconds(first)} is more than "
        f"{horizon:,} eager calls take ({units.seconds(horizon * (fig.eager_s or 0.0))}), so not "
        "even an infinitely fast compiled call repays it within the expected calls."
    ]


def can_fix(fig: Figures, f: GraphBreak) -> bool:
    """Whether a break of the user's has a fix tcdoctor can name or tried: a fix tried in a fresh
    process that addresses it counts only if it helped and may be applied (the headline never
    promises a fix the analysis showed does not, nor a patch that failed its proof); else
    break_fix.py's rules (a verified patch, a switch, a named rewrite, a PyTorch hint that can
    apply)."""
    tried = [r for r in fig.tried_fixes if f.id is not None and f.id in r.addresses]
    if tried:
        return any(r.outcome == FixOutcome.HELPS and r.applicable for r in tried)
    return isinstance(break_fix(f, fig.fix_rows, fig.fixes_not_tried), BreakFix)


def _fix_kind(fig: Figures, f: GraphBreak) -> str:
    """'a switch', 'a named rewrite', ...: what kind of fix the reason names (see the advice)."""
    own = break_fix(f, fig.fix_rows, fig.fixes_not_tried)
    return str(own.kind) if isinstance(own, BreakFix) else "a tried fix"


def _nothing_compiled(fig: Figures) -> list[str]:
    """Why a compiled model with no graph is not faster whatever its interval says."""
    if fig.graphs != 0:
        return []
    return [
        "Nothing was compiled: Dynamo made no graph on a call (the frames it skipped ran "
        "eagerly), so a compiled call runs the same eager code plus Dynamo's per-call checks: it "
        "cannot be faster as written, whatever the interval says."
    ]


def _rewrite_reasons(
    fig: Figures, findings: list[GraphBreak], need: Span | None, rules: Rules
) -> list[str]:
    """Breaks in the user's code with no fix tcdoctor can name (break_fix.NoFix): why, and what a
    rewrite by hand could gain, their bound (report/break_gain.py), against what compiled needs
    to be faster (`need`; None on a compiled model that is faster already)."""
    if not findings:
        return []
    whys = "; ".join(
        f"{units.file_line(f.file, f.line)}: {_no_fix_why(fig, f)}" for f in findings[:3]
    )
    head = f"No fix tcdoctor can name for {len(findings)} graph break(s) in your code ({whys})"
    bound = Gain.of(findings)
    if bound is None:
        why = next((f.cost_not_measured for f in findings if f.cost_not_measured), None)
        return [
            f"{head}: what a rewrite by hand could gain was not measured"
            + (f" ({why})" if why else "")
            + "."
        ]
    text = (
        f"{head}: a rewrite by hand could gain up to {bound.text()} (a bound: "
        f"the time outside graphs minus the eager work that would still run; "
        f"{bound.span_text(rules)} within the bound's spread)"
    )
    if need is not None:
        against = {
            True: "more than the {}: worth the rewrite, then analyse again",
            False: "less than the {}: a rewrite alone would not make it faster",
            None: "against the {}: cannot tell whether it pays",
        }[pays(bound, need, rules)]
        text += ", " + against.format(f"{units.percent_span(need)} compiled must lose to be faster")
    return [text + "."]


def _no_fix_why(fig: Figures, f: GraphBreak) -> str:
    """The break's NoFix words: the planner's reason, and any PyTorch hint left out and why."""
    own = break_fix(f, fig.fix_rows, fig.fixes_not_tried)
    if isinstance(own, BreakFix):  # a fix tried in a fresh process that did not help
        return f"{own.text}: tried, it did not help"
    return own.why + (f"; {own.refused}" if own.refused else "")


def _cant_tell(fig: Figures, rules: Rules) -> bool:
    """The speed is undecided at this precision: the interval straddles a threshold, or, when the
    processes fell in allocator regimes, the regimes point different ways (or none decides on its
    own processes), so no side is shown. Regimes that all read one side decide it
    (processes.claims.overall_claim)."""
    return fig.claim(rules) == Claim.UNDECIDED


def _tried_reasons(fig: Figures) -> list[str]:
    return [
        f"Tried `{r.fix}`: {r.outcome} "
        f"({r.summary or units.ratio(r.after_side.speedup)}): "
        "still not measurably faster than eager."
        for r in fig.tried_fixes
    ]


def _blockers(
    fig: Figures,
    untried: list[GraphBreak],
    bound: Gain | None,
    need: Span | None,
    paid: bool | None,
    rules: Rules,
) -> list[str]:
    """Who owns each break that stands in the way, and what fixing the user's own could gain."""
    out = []
    eager_parts = _eager_parts(fig)
    if eager_parts:
        out.append(f"Parts of the model run eagerly: {eager_parts}.")
    theirs = _theirs(fig)
    out += [f"{c.reason}." for c in library_calls(fig)]
    if theirs:
        out.append(
            f"{sum(f.occurrences or 1 for f in theirs)} graph break(s) are in code you did not write "
            f"({_owners(theirs)}): not yours to edit; the advice says what you can do from your side."
        )
    if untried and bound is not None and need is not None and paid is False:
        out.append(
            f"Fixing the {len(untried)} graph break(s) in your code could gain at most "
            f"{bound.text()} (a bound), less than the {units.percent_span(need)} it must lose to "
            "be faster, whatever the bound's spread."
        )
    elif untried and bound is not None and need is not None:
        out.append(
            f"Could not tell whether fixing the {len(untried)} graph break(s) in your code pays: "
            f"{bound.span_text(rules)} of a compiled call (a bound, within its run-to-run spread) "
            f"against the {units.percent_span(need)} it must lose to be faster: fix them and "
            "analyse again."
        )
    elif untried:
        why = next((f.cost_not_measured for f in untried if f.cost_not_measured), None)
        out.append(
            f"{len(untried)} graph break(s) in your code could be fixed "
            f"({', '.join(f.where for f in untried[:3])}); what that gains was not measured"
            + (f" ({why})" if why else "")
            + ": fix them and analyse again."
        )
    if not fig.break_findings and fig.breaks:
        out.append(f"{fig.breaks} graph break(s); what fixing them gains was not measured.")
    if fig.recompiles or fig.limit_hit:
        limit = " (recompile limit hit)" if fig.limit_hit else ""
        out.append(
            f"{fig.recompiles} recompile(s){limit}: they cost compile time, not the per-call "
            "speed measured here (see the advice)."
        )
    return out


def guard_reason(fig: Figures) -> str:
    """Why compiled is slower, as far as the figures say: guard evaluation is named the cause only
    when it is at least half of the time lost per call."""
    guards = f"{units.seconds(fig.guard_s)} for {fig.guard_count} guards"
    lost, eager = (fig.compiled_s or 0.0) - (fig.eager_s or 0.0), fig.eager_s or 0.0
    if fig.guard_s is not None and lost > 0 and fig.guard_s < 0.5 * lost:
        share = units.percent(fig.guard_s / lost)
        if lost >= eager:  # a tiny call: the compiled path's own per-call cost dominates
            return (
                f"The compiled path adds {units.seconds(lost)} per call, more than this call's whole "
                f"eager time ({units.seconds(eager)}): a fixed per-call cost its work does not repay "
                f"(guard evaluation is {guards} of it, {share})."
            )
        return (
            f"Guard evaluation ({guards}) accounts for only {share} of the {units.seconds(lost)} "
            f"lost per call (eager {units.seconds(eager)}, compiled {units.seconds(fig.compiled_s)}"
            f"{fig.medians_where})."
        )
    return (
        f"The compiled path has a fixed per-call cost (guard evaluation alone: {guards}, "
        f"{units.percent(fig.guard_fraction)} of a compiled call) that this call's work "
        f"does not repay: eager takes {units.seconds(fig.eager_s)}, compiled "
        f"{units.seconds(fig.compiled_s)}{fig.medians_where}."
    )
