"""The decision and the advice, from measured figures only. Every threshold lives in RULES.

compile              significantly faster (95% CI of the speedup above MIN_SPEEDUP), the compile
                     time pays back within the expected number of calls, numerics do not fail (a verdict
                     without a numerics check says so), and
                     nothing forces eager execution (skipped frames, recompile limit hit).
compile-after-fixes  graph breaks, skipped frames or recompiles stand between the model and a gain:
                     not significantly faster yet, or faster but with frames running eagerly.
dont-compile         the compiled model fails or drifts numerically; or it is not faster and there
                     is nothing to fix; or it is faster but never pays back its compile time.

Shape: `Figures.from_report` reads every figure the verdict uses from the typed report, once;
one `advise_*` rule per advice topic returns advice items (or none); `decision` is the pure
decision over the figures; `decide` (the entry point) puts them together with `recommend`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from . import units
from .results import (
    Advice,
    FixRow,
    GraphBreak,
    Recompile,
    RegionRow,
    StrategyRow,
    Verdict,
    break_even,
    cold_warm_ratio,
    faster_than_eager,
    slower_than_eager,
)

if TYPE_CHECKING:
    from .report import Report

RULES: dict[str, float] = {
    "min_speedup": 1.02,  # lower bound of the speedup's 95% CI must exceed this to count as faster
    "expected_calls": 100_000,  # default horizon for break-even (--expected-calls)
    "guard_overhead_fraction": 0.20,  # guard evaluation above this share of a compiled call is flagged
    "cold_warm_ratio": 3.0,  # cold compile this many times the warm one: advise keeping the cache
    "compile_seconds_warn": 60.0,  # first call slower than this gets compile-time advice
    "regional_auto_breaks": 3,  # this many graph breaks in the whole model: also try compiling its submodules
}

HORIZONS = {
    "one epoch of 1,000 steps": 1_000,
    "one epoch of 10,000 steps": 10_000,
    "a server handling 1M requests": 1_000_000,
}


@dataclass(frozen=True)
class Figures:
    """The figures the verdict is judged on, typed. Built from a report by `from_report` only."""

    speedup: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    speed_not_measured: str | None = None  # why, when speedup is None
    eager_s: float | None = None  # medians per call
    compiled_s: float | None = None
    cold_s: float | None = None  # first compiled call, cold and warm inductor cache
    warm_s: float | None = None
    breaks: int = 0
    skipped: int = 0  # frames Dynamo skipped: they run eagerly
    recompiles: int = 0
    limit_hit: bool = False
    recompile_limit: int | None = None
    numerics_passed: bool | None = None
    numerics_max_abs_err: float | None = None
    numerics_failed_outputs: tuple[str, ...] = ()
    numerics_not_measured: str | None = None  # why, when numerics_passed is None
    guard_fraction: float | None = None  # guard evaluation / compiled median
    guard_s: float | None = None  # guard evaluation per call
    guard_count: int | None = None
    device: str | None = None
    mode: str | None = None
    cudagraph_skips: int = 0
    compile_failed_message: str | None = None  # set when compiling raised
    break_findings: tuple[GraphBreak, ...] = ()  # graph_breaks.unique
    recompile_events: tuple[Recompile, ...] = ()
    training_ways_measured: bool = False  # rows for the model alone / optimizer alone exist
    tried_fixes: tuple[FixRow, ...] = ()  # fixes run with the real backend in a fresh process
    ways: tuple[Way, ...] = ()  # other measured ways of compiling (modes, training ways)
    ablation_layer: str | None = None  # where the loss comes from, when the ablation ran

    @classmethod
    def from_report(cls, report: Report) -> Figures:
        rt, c, g, gb, rc, n = (
            report.runtime,
            report.compile,
            report.guards,
            report.graph_breaks,
            report.recompiles,
            report.numerics,
        )
        failed = next(
            (
                str(e.get("message"))
                for e in report.errors or []
                if e.get("phase") in ("compile", "compile_warm")
            ),
            None,
        )
        return cls(
            speedup=rt.speedup,
            ci_low=rt.ci_low,
            ci_high=rt.ci_high,
            speed_not_measured=rt.not_measured,
            eager_s=rt.eager.median_s,
            compiled_s=rt.compiled.median_s,
            cold_s=c.cold_s,
            warm_s=c.warm_s,
            breaks=gb.count or 0,
            skipped=gb.skipped_frames or 0,
            recompiles=rc.count or 0,
            limit_hit=bool(rc.limit_hit),
            recompile_limit=rc.limit,
            numerics_passed=n.passed,
            numerics_max_abs_err=n.max_abs_err,
            numerics_failed_outputs=tuple(n.failed_outputs or ()),
            numerics_not_measured=n.not_measured,
            guard_fraction=g.overhead_fraction,
            guard_s=g.overhead_s_per_call,
            guard_count=g.count,
            device=(report.environment or {}).get("device"),
            mode=(report.options or {}).get("mode"),
            cudagraph_skips=c.cudagraph_skips,
            compile_failed_message=failed,
            break_findings=tuple(gb.unique or ()),
            recompile_events=tuple(rc.events or ()),
            training_ways_measured=any(
                r.name in ("model", "optimizer") and r.median_s is not None
                for r in report.strategies.training
            ),
            tried_fixes=tuple(r for r in report.fixes or [] if r.measured),
            ways=tuple(other_ways(report)),
            ablation_layer=report.ablation.layer if report.ablation else None,
        )

    def significantly_faster(self, rules: dict) -> bool:
        """The same rule as the report's `Runtime` and every strategy row (results.py)."""
        return faster_than_eager(self.ci_low, rules["min_speedup"])

    @property
    def significantly_slower(self) -> bool:
        return slower_than_eager(self.ci_high)

    @property
    def fixable(self) -> bool:
        """Something to fix stands between the model and a (larger) gain."""
        return self.breaks > 0 or self.recompiles > 0 or self.limit_hit

    @property
    def break_even_cold(self) -> dict | None:
        return break_even(self.cold_s, self.eager_s, self.compiled_s)

    @property
    def break_even_warm(self) -> dict | None:
        return break_even(self.warm_s, self.eager_s, self.compiled_s)

    def never_repaid(self, horizon: int) -> bool:
        """Faster per call, but neither the cold nor the warm compile is repaid within horizon."""
        cold, warm = self.break_even_cold, self.break_even_warm
        return bool(cold) and cold["calls"] > horizon and not (warm and warm["calls"] <= horizon)

    @property
    def cold_warm_ratio(self) -> float | None:
        return cold_warm_ratio(self.cold_s, self.warm_s)

    @property
    def speed_text(self) -> str:
        """'1.52× (95% CI 1.49–1.56)'."""
        return units.ratio(self.speedup, (self.ci_low, self.ci_high))

    @property
    def faster_text(self) -> str:
        """'1.52× faster (95% CI 1.49–1.56)'."""
        return units.ratio(self.speedup, (self.ci_low, self.ci_high), "faster")


@dataclass(frozen=True)
class Way:
    """Another measured way of compiling the same workload (a mode, a training way): a row the
    headline must agree with."""

    label: str  # "compile the model only", "mode='max-autotune'"
    row: StrategyRow

    def usable(self, rules: dict) -> bool:
        """Significantly faster than eager, numerics not failing, compile time repaid in the horizon."""
        r, horizon = self.row, rules["expected_calls"]
        repaid = r.steps_to_repay is not None and r.steps_to_repay <= horizon
        return r.significantly_faster(rules) and r.numerics_passed is not False and repaid


def other_ways(report: Report) -> list[Way]:
    """The measured rows that are not the main analysis: the headline is decided over them too."""
    st = report.strategies
    main = "main analysis"
    out = [
        Way(TRAINING_WAYS.get(r.name or "", r.name or "?"), r)
        for r in st.training or []
        if r.source != main and not r.baseline and r.median_s is not None
    ]
    out += [
        Way(f"compile with mode={r.name!r}", r)
        for r in st.modes or []
        if r.source != main and not r.note and r.speedup is not None
    ]
    return out


# Breaks inside code the user does not own, with what they can change at their call site instead.
# Keyed by the library function the break happens in; each entry was checked on torch 2.13.
CALL_SITE_FIXES = {
    "_detect_is_causal_mask": (
        "pass `is_causal=True` (or False) together with the mask where you call the Transformer module: "
        "it then skips the data-dependent check of the mask's values"
    ),
}


def _own_code_fix(f: GraphBreak) -> str:
    reason = (f.reason or "").lower()
    if "data-dependent branching" in reason or "generic_jump" in reason:
        return "make the branch tensor-valued: `torch.where(cond, a, b)` for both outcomes, or `torch.cond` for real control flow"
    if "item()" in reason:
        return "keep the value a tensor instead of calling .item(), or set `torch._dynamo.config.capture_scalar_outputs = True`"
    if "builtin operator" in reason and "print" in (f.explanation or "") + (f.code or ""):
        return "remove the print from forward (or log outside the compiled region); `torch._dynamo.config.reorderable_logging_functions` can keep it"
    if f.hints:
        return f.hints[0]
    return "see the linked explanation"


def _foreign_code_fix(f: GraphBreak, ways_measured: bool = True) -> str:
    """What the user can do from their side about a break in code they did not write."""
    site = f.site or {}
    known = CALL_SITE_FIXES.get(site.get("function") or "")
    called = (site.get("called") or {}).get("function") or ""
    if f.origin == "step" or called.startswith(("Tensor.backward", "Optimizer.")):
        compare = (
            "compare the training ways tcdoctor measured (model only, optimizer.step only) and use "
            "the fastest"
            if ways_measured
            else "compile the model alone, or optimizer.step alone, instead of the whole step "
            "(`tcdoctor analyze --training-ways` measures both)"
        )
        whose = (
            "the standard training step's own call (backward/optimizer), not your code"
            if f.origin == "step"
            else f"your call of {called}, which Dynamo does not trace (PyTorch's limitation, not your code)"
        )
        return f"this is {whose}: " + compare
    options = [known] if known else []
    lib = f.library or "the library"
    if lib == "torch" and "optim" in (site.get("file") or ""):
        options.append(
            "compile the model and `optimizer.step` separately (PyTorch's optimizer recipe) instead of one "
            "function around both"
        )
    options.append(
        f"compile around it: `torch.compiler.disable` on the submodule that calls into {lib}, or compile "
        "only the submodules that trace cleanly (regional compilation, `--submodules`)"
    )
    return "; or ".join(options)


def graph_break_advice(f: GraphBreak, ways_measured: bool = True) -> str:
    """`ways_measured`: the training-way rows (model only, optimizer only) exist to point at."""
    where = f.where
    code = f" (`{f.code}`)" if f.code else ""
    extra = ""
    if f.frame_skipped:
        extra = " Because this break is inside a loop (or try/with block), Dynamo skipped the whole frame: all of it runs eagerly."
    n = f.occurrences or 1
    times = f" ({n}×)" if n > 1 else ""
    origin = f.origin or "user"
    if origin == "user":
        return f"Graph break at {where}{code}{times}: {f.reason}. Fix: {_own_code_fix(f)}.{extra}"
    site = f.site or {}
    at = f"{f.library or 'library'} {site.get('function') or ''} ({site.get('file') or '?'}:{site.get('line') or '?'})".replace(
        "  ", " "
    )
    hint = f" PyTorch's hint, for that code's authors: {f.hints[0]}" if f.hints else ""
    return (
        f"Graph break inside {f.origin_text or 'code you did not write'}: {at}, reached from {where}{code}{times}: "
        f"{f.reason}. From your side: {_foreign_code_fix(f, ways_measured)}.{extra}{hint}"
    )


def recompile_advice(ev: Recompile) -> str:
    r = ev.reason or ""
    m = re.search(r"tensor '([^']+)' size mismatch at index (\d+)", r)
    if m:
        fix = (
            f"dimension {m.group(2)} of `{m.group(1)}` changes: mark it dynamic before the first call "
            f"(`torch._dynamo.mark_dynamic(x, {m.group(2)})`) or compile with `dynamic=True`"
        )
    elif ".training ==" in r:
        fix = "switching train/eval mode recompiles: compile one model per mode, or stop toggling `training` between calls"
    elif "grad_mode" in r:
        fix = (
            "grad mode differs between calls: call consistently under (or outside) torch.no_grad()"
        )
    elif "num_threads" in r:
        fix = "the thread count changed after compiling: call torch.set_num_threads once, before the first compiled call"
    elif "dtype" in r:
        fix = "the input dtype changes: cast inputs to one dtype before calling the model"
    elif "param_groups" in r and "'lr'" in r:
        fix = (
            "the optimizer's learning rate is a Python float that changes between calls (a scheduler): create the "
            "optimizer with `lr=torch.tensor(...)` so the value is a tensor, not a constant baked into the graph"
        )
    elif re.search(r"== [-\d.]+", r) or "type(" in r:
        fix = "a Python value (number, flag or type) is baked into the graph: pass it as a tensor, or keep it constant"
    else:
        fix = "make this input or attribute stable between calls"
    return f"Recompile of {ev.function} on {ev.variant}: guard failed: {r}. Fix: {fix}."


# One rule per advice topic: each returns its advice items, or none.


def _advice(topic: str, text: str, evidence: str) -> Advice:
    return Advice(topic=topic, text=text, evidence=evidence)


def advise_graph_breaks(fig: Figures, rules: dict) -> list[Advice]:
    return [
        _advice(
            "graph break",
            graph_break_advice(f, fig.training_ways_measured),
            f"graph_breaks.unique: {f.reason} at {f.file}:{f.line}",
        )
        for f in fig.break_findings
    ]


def advise_recompiles(fig: Figures, rules: dict) -> list[Advice]:
    return [
        _advice("recompile", recompile_advice(ev), f"recompiles.events: {ev.reason}")
        for ev in fig.recompile_events
    ]


def advise_recompile_limit(fig: Figures, rules: dict) -> list[Advice]:
    if not fig.limit_hit:
        return []
    text = (
        f"The recompile limit ({fig.recompile_limit}) was hit: from then on the function runs "
        "EAGERLY, silently. Fix the recompiles above or raise "
        "torch._dynamo.config.recompile_limit."
    )
    return [_advice("recompile limit", text, "recompiles.limit_hit = true")]


def advise_guards(fig: Figures, rules: dict) -> list[Advice]:
    if fig.guard_fraction is None or fig.guard_fraction <= rules["guard_overhead_fraction"]:
        return []
    if (fig.device or "cpu").startswith("cuda"):
        fix = 'use mode="reduce-overhead" (CUDA graphs) to skip per-call overhead'
    else:
        fix = (
            "on CPU, torch.compiler.set_stance('default', skip_guard_eval_unsafe=True) skips "
            "guard checks once all shapes are warmed up (unsafe if inputs change), or batch "
            "more work per call"
        )
    text = (
        f"Guard evaluation costs {units.seconds(fig.guard_s)} per call, "
        f"{units.percent(fig.guard_fraction)} of a compiled call ({fig.guard_count} guards). "
        f"Fix: {fix}."
    )
    return [_advice("guard overhead", text, "guards.overhead_fraction")]


def advise_numerics(fig: Figures, rules: dict) -> list[Advice]:
    if fig.numerics_passed is not False:
        return []
    err = fig.numerics_max_abs_err
    err_txt = f" (max abs error {units.sci(err)})" if err is not None else ""
    text = (
        f"Compiled outputs drift from eager beyond tolerance{err_txt}. Check the failing "
        "outputs against the fp64 reference, look for reductions in low precision, and retry "
        "with backend='aot_eager' to tell Dynamo/AOT problems from Inductor ones."
    )
    return [_advice("numerics", text, "numerics.passed = false")]


def advise_compile_time(fig: Figures, rules: dict) -> list[Advice]:
    ratio = fig.cold_warm_ratio
    if ratio is not None and ratio >= rules["cold_warm_ratio"]:
        text = (
            f"A cold compile takes {units.seconds(fig.cold_s)}, a warm-cache one "
            f"{units.seconds(fig.warm_s)}: keep TORCHINDUCTOR_CACHE_DIR on persistent storage "
            "(or ship the cache with torch.compiler.save_cache_artifacts / "
            "load_cache_artifacts) so restarts pay the warm cost."
        )
        return [_advice("compile time", text, "compile.cold_s / compile.warm_s")]
    if fig.cold_s and fig.cold_s > rules["compile_seconds_warn"]:
        text = (
            f"The first call compiles for {units.seconds(fig.cold_s)}. Consider compiling only "
            "the hot submodules (regional compilation) and keeping the inductor cache."
        )
        return [_advice("compile time", text, "compile.cold_s")]
    return []


def advise_mode(fig: Figures, rules: dict) -> list[Advice]:
    if not ((fig.mode or "").startswith("reduce-overhead") and fig.cudagraph_skips):
        return []
    text = (
        f"mode='reduce-overhead' had no effect: PyTorch skipped CUDA graphs "
        f"({fig.cudagraph_skips} skip(s) recorded) — on {fig.device or 'this device'} there "
        "is nothing for it to capture. The figures are those of the default mode."
    )
    return [_advice("mode", text, "compile.cold_cache.cudagraph_skips")]


ADVICE_RULES: tuple[Callable[[Figures, dict], list[Advice]], ...] = (
    advise_graph_breaks,
    advise_recompiles,
    advise_recompile_limit,
    advise_guards,
    advise_numerics,
    advise_compile_time,
    advise_mode,
)


def decision(fig: Figures, rules: dict) -> tuple[str, list[str]]:
    """compile / compile-after-fixes / dont-compile, and the reasons, from the figures alone.

    One decision over every measured way: the main analysis, the fixes tried in fresh processes,
    the other ways of compiling (modes, training ways, regions), and the breaks' owners. "After
    fixes" only names a fix the user can make whose gain was measured, or bounded above the loss.
    """
    horizon = int(rules["expected_calls"])
    faster = fig.significantly_faster(rules)
    if fig.compile_failed_message is not None:
        return "dont-compile", [f"The compiled model failed: {fig.compile_failed_message}"]
    if fig.numerics_passed is False:
        err, failed = fig.numerics_max_abs_err, fig.numerics_failed_outputs
        speed = (
            f"Compiled is {fig.faster_text}, but the n"
            if fig.speedup is not None and faster
            else "N"
        )
        return "dont-compile", [
            f"{speed}umerics check failed"
            + (f" (max abs error {units.sci(err)} vs eager)" if err is not None else "")
            + (f" on {', '.join(failed[:3])}" if failed else "")
            + "."
        ]
    if fig.speedup is None:
        why = fig.speed_not_measured or "no runtime figures"
        return "dont-compile", [f"Speed was not measured ({why}), so no gain is shown."]
    if not faster:
        return _not_faster(fig, rules)
    be_cold = fig.break_even_cold
    if fig.never_repaid(horizon):
        return "dont-compile", [
            f"Compiled is {fig.faster_text}, but the compile time is repaid only after "
            f"{be_cold['calls']:,} calls, beyond the expected {horizon:,}."
        ]
    eager_parts = _eager_parts(fig)
    if eager_parts:
        return "compile-after-fixes", [
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
    best = _best_way(fig, rules)
    if best and best.row.speedup and best.row.speedup > (fig.speedup or 0):
        reasons.append(
            f"Fastest measured way: {best.label}, {units.ratio(best.row.speedup, best.row.speedup_ci)} "
            "vs eager (see the strategy table)."
        )
    reasons += _remaining(fig)
    return "compile", reasons


def _eager_parts(fig: Figures) -> str:
    """What forces part of a faster model to run eagerly that the user can change: frames skipped
    in their code, the recompile limit (their calls recompile); '' when nothing."""
    skipped = [f for f in fig.break_findings if f.frame_skipped and f.users]
    if not fig.break_findings and fig.skipped:  # findings not recorded: count as before
        skipped_n = fig.skipped
    else:
        skipped_n = len(skipped)
    if not skipped_n and not fig.limit_hit:
        return ""
    limit = ", recompile limit hit" if fig.limit_hit else ""
    return f"{skipped_n} skipped frame(s){limit}"


def _owners(findings: tuple[GraphBreak, ...]) -> str:
    """'2 in transformers, 1 in PyTorch itself, 2 in tcdoctor's standard training step'."""
    counts: dict[str, int] = {}
    for f in findings:
        who = f.library if f.origin == "library" and f.library else f.origin_text or f.origin
        who = who or "code you did not write"
        counts[who] = counts.get(who, 0) + (f.occurrences or 1)
    return ", ".join(f"{n} in {who}" for who, n in counts.items())


def _remaining(fig: Figures) -> list[str]:
    """A compile verdict's further gains: breaks in the user's code (with what fixing them gains),
    and breaks in code they did not write said to be none of theirs."""
    out = []
    mine = [f for f in fig.break_findings if f.users]
    theirs = tuple(f for f in fig.break_findings if not f.users)
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


def _best_way(fig: Figures, rules: dict) -> Way | None:
    usable = [w for w in fig.ways if w.usable(rules)]
    return max(usable, key=lambda w: w.row.speedup or 0.0) if usable else None


def _best_fix(fig: Figures, rules: dict) -> FixRow | None:
    good = [
        r
        for r in fig.tried_fixes
        if r.significantly_faster(rules) and (r.after or {}).get("numerics_passed") is not False
    ]
    return max(good, key=lambda r: (r.after or {}).get("speedup") or 0.0) if good else None


def _not_faster(fig: Figures, rules: dict) -> tuple[str, list[str]]:
    """Compiled as analysed is not significantly faster: is there a measured way, a tried fix, or
    a fix of the user's own whose bounded gain covers the loss? Otherwise: not yet, and who owns
    each blocker."""
    what = "slower than eager" if fig.significantly_slower else "not measurably faster than eager"
    head = f"Compiled is {what}: {fig.speed_text}"
    fix = _best_fix(fig, rules)
    if fix is not None:
        after = fix.after or {}
        return "compile-after-fixes", [
            f"{head}; with `{fix.fix}` (tried in a fresh process) it is "
            f"{units.ratio(after.get('speedup'), after.get('speedup_ci'), 'faster')}: apply it."
        ]
    way = _best_way(fig, rules)
    if way is not None:
        r = way.row
        return "compile", [
            f"{head}, but {way.label} is {units.ratio(r.speedup, r.speedup_ci, 'faster')}, "
            f"repaid after {r.steps_to_repay:,} calls: {way.label}."
        ]
    mine = [f for f in fig.break_findings if f.users]
    untried = [f for f in mine if f.gain_source != "tried"]
    need = _needed_gain(fig, rules)
    bound = _gain(untried)
    if untried and bound is not None and need is not None and bound > need:
        return "compile-after-fixes", [
            f"{head}; fixing the {len(untried)} graph break(s) in your code "
            f"({', '.join(f.where for f in untried[:3])}) could gain up to {units.seconds(bound)} "
            f"per call (a bound: the time outside graphs minus the eager work that would still run), "
            f"more than the {units.seconds(need)} it needs to be faster."
        ]
    reasons = [head + "."]
    reasons += _tried_reasons(fig)
    reasons += _blockers(fig, untried, bound, need)
    if fig.ablation_layer:
        reasons.append(f"Which layer: {fig.ablation_layer}.")
    if fig.significantly_slower and fig.guard_fraction is not None:
        reasons.append(_guard_reason(fig))
    return "dont-compile", reasons


def _needed_gain(fig: Figures, rules: dict) -> float | None:
    """Seconds per call compiled must lose to be significantly faster (its point estimate)."""
    if fig.compiled_s is None or not fig.eager_s:
        return None
    return max(0.0, fig.compiled_s - fig.eager_s / rules["min_speedup"])


def _tried_reasons(fig: Figures) -> list[str]:
    return [
        f"Tried `{r.fix}`: {r.outcome} "
        f"({units.fix_summary(r) or units.ratio((r.after or {}).get('speedup'))}): "
        "still not measurably faster than eager."
        for r in fig.tried_fixes
    ]


def _blockers(
    fig: Figures, untried: list[GraphBreak], bound: float | None, need: float | None
) -> list[str]:
    """Who owns each break that stands in the way, and what fixing the user's own could gain."""
    out = []
    theirs = tuple(f for f in fig.break_findings if not f.users)
    if theirs:
        out.append(
            f"{sum(f.occurrences or 1 for f in theirs)} graph break(s) are in code you did not write "
            f"({_owners(theirs)}): not yours to edit; the advice says what you can do from your side."
        )
    if untried and bound is not None:
        out.append(
            f"Fixing the {len(untried)} graph break(s) in your code could gain at most "
            f"{units.seconds(bound)} per call (a bound), less than the "
            f"{units.seconds(need)} it needs to be faster."
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


def _guard_reason(fig: Figures) -> str:
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
            f"lost per call (eager {units.seconds(eager)}, compiled {units.seconds(fig.compiled_s)})."
        )
    return (
        f"The compiled path has a fixed per-call cost (guard evaluation alone: {guards}, "
        f"{units.percent(fig.guard_fraction)} of a compiled call) that this call's work "
        f"does not repay: eager takes {units.seconds(fig.eager_s)}, compiled "
        f"{units.seconds(fig.compiled_s)}."
    )


def numerics_caveat(fig: Figures, verdict: str) -> list[str]:
    """A verdict to compile says so when it stands without a numerics check (a gate's
    `--require-numerics` fails then)."""
    if verdict == "dont-compile" or fig.numerics_passed is not None:
        return []
    why = fig.numerics_not_measured or "no output could be compared"
    return [f"Numerics were not checked: {why}."]


def decide(
    report: Report, expected_calls: int | None = None, min_speedup: float | None = None
) -> Verdict:
    """The verdict of a report: decision, reasons, advice, strategy recommendations, break-even."""
    rules = dict(RULES)
    if expected_calls is not None:
        rules["expected_calls"] = expected_calls
    if min_speedup is not None:
        rules["min_speedup"] = min_speedup
    fig = Figures.from_report(report)
    advice = [item for rule in ADVICE_RULES for item in rule(fig, rules)]
    verdict, reasons = decision(fig, rules)
    reasons += numerics_caveat(fig, verdict)
    recs = recommend(report, rules)
    for topic, r in recs.items():
        source = "modes" if topic == "mode" else topic
        advice.append(_advice(f"strategy: {topic}", r["text"], f"strategies.{source}"))
    be_cold, be_warm = fig.break_even_cold, fig.break_even_warm
    horizon = int(rules["expected_calls"])
    return Verdict(
        decision=verdict,
        reasons=reasons,
        advice=advice,
        recommendations=recs,
        break_even_calls=be_cold["calls"] if be_cold else None,
        break_even={
            "cold": be_cold,
            "warm": be_warm,
            "expected_calls": horizon,
            "horizons": dict(HORIZONS),
        },
        rules=rules,
    )


def changing_dims(report: Report) -> list[str]:
    """Dimensions named by the size-mismatch guards that recompiled (e.g. "args[0] dim 1")."""
    dims = []
    for ev in report.recompiles.events or []:
        m = re.search(r"tensor '([^']+)' size mismatch at index (\d+)", ev.reason or "")
        if m and f"{m.group(1)} dim {m.group(2)}" not in dims:
            dims.append(f"{m.group(1)} dim {m.group(2)}")
    return dims


def _recommend_mode(rows: list[StrategyRow], rules: dict) -> dict:
    good = [
        r
        for r in rows
        if r.significantly_faster(rules) and r.numerics_passed is not False and not r.note
    ]
    best = max(good, key=lambda r: r.speedup) if good else None
    if not best:
        return {"choice": None, "text": "no mode is measurably faster than eager here"}
    return {
        "choice": best.name,
        "text": f"mode={best.name!r}: {units.ratio(best.speedup)} vs eager, "
        f"first call {units.seconds(best.first_call_s)}",
    }


TRAINING_WAYS = {
    "model": "compile the model only",
    "step": "compile the whole training step",
    "optimizer": "compile only optimizer.step",
}


def _recommend_training(rows: list[StrategyRow], rules: dict) -> dict:
    compiled = [r for r in rows if r.name != "eager"]
    good = [r for r in compiled if r.significantly_faster(rules) and r.numerics_passed is not False]
    best = max(good, key=lambda r: r.speedup) if good else None
    steps = {r.name: r.steps_to_repay for r in compiled}
    names = TRAINING_WAYS
    drifting = [r for r in compiled if r.significantly_faster(rules) and r.numerics_passed is False]
    if best and steps.get(best.name):
        text = (
            f"{names[best.name]}: {units.seconds(best.median_s)}/step vs "
            f"{units.seconds(best.eager_median_s)} eager ({units.ratio(best.speedup)}), "
            f"repaid after {steps[best.name]:,} steps"
        )
    elif best:
        text = (
            f"{names[best.name]}: {units.ratio(best.speedup, word='faster')}, "
            "but it never repays its compile time"
        )
    elif drifting:
        text = "keep the step eager until the numerics are resolved: " + "; ".join(
            f"{names[r.name]} is {units.ratio(r.speedup, word='faster')} but fails the "
            "numerics check"
            + (f" (max abs error {units.sci(r.max_abs_err)})" if r.max_abs_err is not None else "")
            for r in drifting
        )
    else:
        missing = [TRAINING_WAYS[w] for w in TRAINING_WAYS if w not in {r.name for r in compiled}]
        measured = ", ".join(TRAINING_WAYS[r.name] for r in compiled if r.name in TRAINING_WAYS)
        text = (
            "keep the step eager: no way of compiling it is measurably faster"
            if not missing
            else f"keep the step eager for now: no measured way ({measured}) is measurably faster; "
            f"not measured: {', '.join(missing)}"
        )
    return {"choice": best.name if best else "eager", "break_even_steps": steps, "text": text}


def _recommend_dynamic(rows: list[StrategyRow], rules: dict, report: Report) -> dict:
    horizon = rules["expected_calls"]
    usable = [r for r in rows if not r.limit_hit] or rows
    cost = {
        r.name: r.compile_s + horizon * sum(s["median_s"] for s in r.shapes) / len(r.shapes)
        for r in usable
    }
    best = min(usable, key=lambda r: cost[r.name])
    dims = changing_dims(report) or [d for r in rows for d in r.changing_dims or []][:1]
    dim_txt = (
        f"; the dimension that changes: {', '.join(dims)} "
        "(torch._dynamo.mark_dynamic on it before the first call)"
        if dims
        else ""
    )
    static = next((r for r in rows if r.name == "static"), None)
    static_txt = (
        f" (static: {static.compiles} compiles, {units.seconds(static.compile_s)})"
        if static and static is not best
        else ""
    )
    return {
        "choice": best.name,
        "dims": dims,
        "costs_s": cost,
        "text": f"{best.name} shapes: {best.compiles} compile(s), "
        f"{units.seconds(best.compile_s)} compiling{static_txt}, "
        f"lowest compile + run time over {horizon:,} calls{dim_txt}",
    }


def _recommend_regions(
    regions: list[RegionRow], rules: dict, eager_forward_s: float | None
) -> dict:
    pick = [r for r in regions if r.fullgraph and r.significantly_faster(rules)]
    gain = sum(r.gain_s_per_forward for r in pick)
    frac = (
        f" ({units.percent(gain / eager_forward_s)} of an eager forward)"
        if eager_forward_s and pick
        else ""
    )
    broken = [r.name for r in regions if r.fullgraph is False]
    text = (
        f"compile {', '.join(r.name for r in pick)}: expected saving "
        f"{units.seconds(gain)} per forward{frac}"
        if pick
        else "no submodule is both fullgraph-clean and measurably faster compiled"
    )
    text += f"; leave {', '.join(broken)} eager (graph breaks)" if broken else ""
    return {"choice": [r.name for r in pick], "expected_gain_s_per_forward": gain, "text": text}


def recommend(report: Report, rules: dict) -> dict:
    """One recommendation per strategy family that was measured, each with the figures behind it."""
    st = report.strategies
    rec: dict = {}
    modes = [r for r in st.modes or [] if r.speedup is not None]
    if modes:
        rec["mode"] = _recommend_mode(modes, rules)
    train = [r for r in st.training or [] if r.median_s is not None]
    if train:
        rec["training"] = _recommend_training(train, rules)
    dyn = [r for r in st.dynamic or [] if r.shapes]
    if dyn:
        rec["dynamic"] = _recommend_dynamic(dyn, rules, report)
    if st.regions and st.regions.regions:
        rec["regions"] = _recommend_regions(
            st.regions.regions, rules, report.runtime.eager.median_s
        )
    return rec
