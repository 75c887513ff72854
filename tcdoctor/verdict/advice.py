"""Advice wording and the `advise_*` rules: one rule per topic, each returning its advice items.

Advice fits who can act on it: a break in code the user did not write gets what they can do from
their side (a call-site argument, compiling around it, the training ways), never an edit of it.
A break inside a library outside torch that the user's own line calls with tensor data (scipy,
NumPy) is the user's to wrap: where a source patch addresses those breaks (the custom op around
the call, experiments/proving/), they are said together, at the user's line: "4 breaks inside
scipy, called from your line 15: wrap the call (patch below)" (`library_calls`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from .. import units
from ..outcomes import Decision, FixOutcome
from ..report.attribution import ModuleDrift
from ..report.sections import (
    Advice,
    FixRow,
    GraphBreak,
    Recompile,
)
from ..report.sections.breaks import BreakSite
from ..report.sections.strategies import CudaGraphs
from ..thresholds import Rules
from .break_fix import BreakFix, NoFix, break_fix
from .figures import Figures

# Breaks inside code the user does not own, with what they can change at their call site instead.
# Keyed by the library function the break happens in; each entry was checked on torch 2.13.
CALL_SITE_FIXES = {
    "_detect_is_causal_mask": (
        "pass `is_causal=True` (or False) together with the mask where you call the Transformer module: "
        "it then skips the data-dependent check of the mask's values"
    ),
}


def _own_code_fix(own: BreakFix | NoFix) -> str:
    """'Fix: …' with the fix tcdoctor names (verdict/break_fix.py), or 'No fix tcdoctor can
    name: …' with why, and any PyTorch hint left out because it cannot apply: never given as the
    fix."""
    if isinstance(own, BreakFix):
        return f"Fix: {own.text}."
    refused = f" ({own.refused})" if own.refused else ""
    return f"No fix tcdoctor can name: {own.why}{refused}."


def _foreign_code_fix(
    f: GraphBreak, ways_measured: bool = True, regions_measured: bool = False
) -> str:
    """What the user can do from their side about a break in code they did not write."""
    site = f.site or BreakSite()
    known = CALL_SITE_FIXES.get(site.function or "")
    called_api = site.called or {}
    called = called_api.get("function") or ""
    if f.origin == "step" or called.startswith(("Tensor.backward", "Optimizer.")):
        compare = (
            "compare the training ways tcdoctor measured (model only, optimizer.step only) and use "
            "the fastest"
            if ways_measured
            else "compile the model alone, or optimizer.step alone, instead of the whole step "
            "(`tcdoctor analyze --training-ways` measures both)"
        )
        caller = "the standard training step's" if called_api.get("from") == "step" else "your"
        whose = (
            "the standard training step's own call (backward/optimizer), not your code"
            if f.origin == "step"
            else f"{caller} call of {called}, which Dynamo does not trace (PyTorch's limitation, "
            "not your code)"
        )
        return f"this is {whose}: " + compare
    options = [known] if known else []
    lib = f.library or "the library"
    if lib == "torch" and "optim" in (site.file or ""):
        options.append(
            "compile the model and `optimizer.step` separately (PyTorch's optimizer recipe) instead of one "
            "function around both"
        )
    regions = (
        "regional compilation: measured, see the regions recommendation"
        if regions_measured
        else "regional compilation, `--submodules`"
    )
    options.append(
        f"compile around it: `torch.compiler.disable` on the submodule that calls into {lib}, or compile "
        f"only the submodules that trace cleanly ({regions})"
    )
    return "; or ".join(options)


def graph_break_advice(
    f: GraphBreak,
    ways_measured: bool = True,
    regions_measured: bool = False,
    own: BreakFix | NoFix | None = None,
) -> str:
    """`ways_measured`: the training-way rows (model only, optimizer only) exist to point at;
    `regions_measured`: so do the regional-compilation rows; `own`: the fix of a break in the
    user's code (break_fix.break_fix, from the report's fix rows; from the break alone if None)."""
    where = f.where
    code = f" (`{f.code}`)" if f.code else ""
    extra = ""
    if f.frame_skipped:
        extra = " Because this break is inside a loop (or try/with block), Dynamo skipped the whole frame: all of it runs eagerly."
    n = f.occurrences or 1
    times = f" ({n}×)" if n > 1 else ""
    origin = f.origin or "user"
    if origin == "user":
        fix = _own_code_fix(own if own is not None else break_fix(f))
        return f"Graph break at {where}{code}{times}: {f.reason}. {fix}{extra}"
    site = f.site or BreakSite()
    at = f"{f.library or 'library'} {site.function or ''} ({site.file or '?'}:{site.line or '?'})".replace(
        "  ", " "
    )
    hint = f" PyTorch's hint, for that code's authors: {f.hints[0]}" if f.hints else ""
    return (
        f"Graph break inside {f.origin_text or 'code you did not write'}: {at}, reached from {where}{code}{times}: "
        f"{f.reason}. From your side: {_foreign_code_fix(f, ways_measured, regions_measured)}."
        f"{extra}{hint}"
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


def advice_item(topic: str, text: str, evidence: str) -> Advice:
    return Advice(topic=topic, text=text, evidence=evidence)


@dataclass(frozen=True)
class LibraryCall:
    """Breaks inside one library, reached from one line of the user's that a source patch wraps
    (the patch row whose addresses hold them)."""

    library: str
    file: str
    line: int
    code: str | None
    findings: tuple[GraphBreak, ...]
    patch: FixRow

    @property
    def breaks(self) -> int:
        return sum(f.occurrences or 1 for f in self.findings)

    @property
    def reason(self) -> str:
        """'4 breaks inside scipy, called from your line 15: wrap the call (patch below)'."""
        p = self.patch.patch
        word = "break" if self.breaks == 1 else "breaks"
        head = f"{self.breaks} {word} inside {self.library}, called from your line {self.line}"
        if p is not None and p.verified:
            return f"{head}: wrap the call (patch below)"
        failed = ", ".join(p.failed) if p is not None and p.failed else self.patch.outcome
        return f"{head}: wrap the call in a custom op (the patch below was not verified: {failed})"


def library_calls(fig: Figures) -> list[LibraryCall]:
    """The breaks inside a library outside torch that a source patch at the user's calling line
    addresses, grouped by that line."""
    rows = [r for r in fig.fix_rows if r.patch is not None]
    groups: dict[tuple, list[GraphBreak]] = {}
    found: dict[tuple, FixRow] = {}
    for f in fig.break_findings:
        if f.origin != "library" or not f.library or f.library == "torch" or not f.id:
            continue
        row = next((r for r in rows if f.id in r.addresses), None)
        if row is None:
            continue
        key = (f.library, f.file, f.line)
        groups.setdefault(key, []).append(f)
        found[key] = row
    return [
        LibraryCall(lib, str(file), int(line or 0), fs[0].code, tuple(fs), found[(lib, file, line)])
        for (lib, file, line), fs in groups.items()
    ]


def _library_call_advice(call: LibraryCall) -> str:
    where = units.file_line(call.file, call.line)
    code = f" (`{call.code}`)" if call.code else ""
    sites = "; ".join(
        f"{(f.site or BreakSite()).function or '?'} ({f.occurrences or 1}×: {f.reason})"
        for f in call.findings
    )
    return f"{call.reason}. At {where}{code}; inside {call.library}: {sites}."


def advise_graph_breaks(fig: Figures, rules: Rules) -> list[Advice]:
    calls = library_calls(fig)
    wrapped = {id(f) for c in calls for f in c.findings}
    out = [
        advice_item(
            "graph break",
            _library_call_advice(c),
            f"graph_breaks.unique: {', '.join(str(f.id) for f in c.findings)} at {c.file}:{c.line}",
        )
        for c in calls
    ]
    return out + [
        advice_item(
            "graph break",
            graph_break_advice(
                f,
                fig.training_ways_measured,
                fig.regions_measured,
                break_fix(f, fig.fix_rows, fig.fixes_not_tried) if f.users else None,
            ),
            f"graph_breaks.unique: {f.reason} at {f.file}:{f.line}",
        )
        for f in fig.break_findings
        if id(f) not in wrapped
    ]


def advise_recompiles(fig: Figures, rules: Rules) -> list[Advice]:
    """Each recompile's fix; where it is a dynamic-shape setting, what the measured dynamic-shape
    rows showed (they are tried fixes already, never advice to try)."""
    shapes = [r for r in fig.fix_rows if r.kind == "dynamic"]
    measured = "; ".join(f"`{r.fix}`: {r.outcome}" for r in shapes)
    out = []
    for ev in fig.recompile_events:
        text = recompile_advice(ev)
        if measured and "mark_dynamic" in text:
            text += f" Measured (the dynamic-shape rows): {measured}; see Tried."
        out.append(advice_item("recompile", text, f"recompiles.events: {ev.reason}"))
    return out


def advise_recompile_limit(fig: Figures, rules: Rules) -> list[Advice]:
    if not fig.limit_hit:
        return []
    text = (
        f"The recompile limit ({fig.recompile_limit}) was hit: from then on the function runs "
        "EAGERLY, silently. Fix the recompiles above or raise "
        "torch._dynamo.config.recompile_limit."
    )
    return [advice_item("recompile limit", text, "recompiles.limit_hit = true")]


def _tried_text(row: FixRow) -> str:
    """'tried in a fresh process: `line`: no effect (1.02× → 1.01×)'."""
    summary = row.summary
    return f"tried in a fresh process: `{row.fix}`: {row.outcome}" + (
        f" ({summary})" if summary else ""
    )


def _not_tried_why(fig: Figures, fix_kind: str) -> str | None:
    """Why a planned fix of this kind was left untried (the fix budget), or None."""
    for nt in fig.fixes_not_tried:
        if nt.fix.get("kind") == fix_kind:
            return str(nt.why or "not tried")
    return None


def advise_guards(fig: Figures, rules: Rules) -> list[Advice]:
    """Guard overhead: the stance that skips guard checks, cited from its tried row when the
    analysis tried it; on CUDA, CUDA graphs unless they are the analysed mode already."""
    if fig.guard_fraction is None or fig.guard_fraction <= rules.guard_overhead_fraction:
        return []
    stance = next((r for r in fig.fix_rows if r.kind == "stance"), None)
    untried = _not_tried_why(fig, "stance")
    if stance is not None:
        skip = f"skipping guard checks was {_tried_text(stance)}" + (
            ": apply it once all shapes are warmed up (unsafe if inputs change)"
            if stance.outcome == FixOutcome.HELPS
            else ""
        )
    else:
        skip = (
            "torch.compiler.set_stance('default', skip_guard_eval_unsafe=True) skips "
            "guard checks once all shapes are warmed up (unsafe if inputs change)"
            + (f"; not tried: {untried}" if untried else "")
        )
    ro = next((w for w in fig.ways if w.label == "compile with mode='reduce-overhead'"), None)
    if (fig.device or "cpu").startswith("cuda") and (fig.mode or "").startswith("reduce-overhead"):
        fix = f"CUDA graphs are this analysis's mode already; {skip}, or batch more work per call"
    elif (fig.device or "cpu").startswith("cuda") and ro is not None:
        fix = (
            f"mode='reduce-overhead' (CUDA graphs) was measured: "
            f"{units.ratio(ro.row.speedup, ro.row.speedup_ci)} vs eager (see the mode table); {skip}"
        )
    elif (fig.device or "cpu").startswith("cuda"):
        fix = 'use mode="reduce-overhead" (CUDA graphs) to skip per-call overhead'
    else:
        fix = f"on CPU, {skip}, or batch more work per call"
    text = (
        f"Guard evaluation costs {units.seconds(fig.guard_s)} per call, "
        f"{units.percent(fig.guard_fraction)} of a compiled call ({fig.guard_count} guards). "
        f"Fix: {fix}."
    )
    return [advice_item("guard overhead", text, "guards.overhead_fraction")]


# probes/numerics.TOL's tolerance for float16 / bfloat16 (and autocast to them): an output judged at
# it was computed in low precision (the drift origin records its tolerance, not its dtype)
LOW_PRECISION_TOL = 1e-2
CHECK_FP64 = "Check the failing outputs against the fp64 reference"
LOOK_LOW = "look for reductions in low precision"
RETRY = "retry with backend='aot_eager' to tell Dynamo/AOT problems from Inductor ones"
BELOW_INDUCTOR = ("eager", "aot_eager")  # the backends the ablation runs below the real one


def advise_numerics(fig: Figures, rules: Rules) -> list[Advice]:
    """Drifting outputs. With a localised drift: compile around its module (the tried fix's
    figures, or why it was not tried) and what the search found there (the precision, the op
    PyTorch's bisector blames). Which layer drifts, from the backends the analysis already ran
    (never a suggestion to run one of them again); without a localised module, where to look."""
    if fig.numerics_passed is not False:
        return []
    err = fig.numerics_max_abs_err
    err_txt = f" (max abs error {units.sci(err)})" if err is not None else ""
    head = f"Compiled outputs drift from eager beyond tolerance{err_txt}."
    bug = _miscompile_advice(fig, head)
    if bug is not None:
        return [advice_item("numerics", bug, "numerics.miscompile.kind")]
    layer = _drift_layer(fig)
    o = fig.drift_origin
    if o is None or not o.name:
        if layer is None:  # no backend below the real one ran: retrying with one tells them apart
            text = f"{head} {CHECK_FP64}, {LOOK_LOW}, and {RETRY}{_ablation_untried(fig)}."
        else:
            text = f"{head} {CHECK_FP64} and {LOOK_LOW}. {layer}"
        return [advice_item("numerics", text, "numerics.passed = false")]
    parts = [head, _around_origin(fig, o, rules), *_drift_found(fig, o)]
    parts.append(layer or f"{RETRY[0].upper()}{RETRY[1:]}{_ablation_untried(fig)}.")
    return [advice_item("numerics", " ".join(parts), "numerics.drift.origin")]


def _miscompile_advice(fig: Figures, head: str) -> str | None:
    """For a graph the search classified as a bug (issue 64): not precision, so no advice on
    precision; the reproducer to attach to an issue on PyTorch's tracker, and aot_eager, which
    computed that graph right in the reproducer's own run. None otherwise."""
    m = fig.miscompile
    if m is None or not m.is_bug or not m.found:
        return None
    from ..report.phases.miscompile import call_text, graph_name

    script = m.script_path or "tcdoctor-repro.py"
    issue = m.issue_path or "tcdoctor-repro-issue.md"
    where = (
        "Until it is fixed, backend='aot_eager' computes that graph as eager does (the "
        "reproducer's own run)."
        if m.kind == "compiler_bug"
        else "backend='eager' leaves AOTAutograd out."
    )
    return (
        f"{head} It is not precision: {graph_name(m)} diverges at {call_text(m)}, and "
        f"{m.verdict}. Attach {script} (with its recorded inputs) and the pre-filled text in "
        f"{issue} to an issue on PyTorch's tracker: run alone, the script shows the difference. "
        f"{where}"
    )


def _around_origin(fig: Figures, o: ModuleDrift, rules: Rules) -> str:
    """'Compile around `mixer` (`Mixer`, mixer.py:12), where the drift starts: …' with the tried
    DisableModuleFix row's outcome, or why it was not tried. The line is one the user writes in
    their own code, whoever wrote the module."""
    name, cls = o.name, o.class_ or "TheModule"
    rows = [r for r in fig.fix_rows if r.kind == "disable_module"]
    row = next((r for r in rows if r.name == name), rows[0] if rows else None)
    # the line experiments/specs.DisableModuleFix writes (the row's own line when it was tried)
    line = (row.fix if row is not None and row.fix else None) or (
        f"{cls}.forward = torch.compiler.disable({cls}.forward)  # {name} runs eagerly"
    )
    where = units.file_line(o.class_file, o.class_line)
    text = (
        f"Compile around `{name}` (`{cls}`, {where}), where the drift starts: one line in your own "
        f"code before compiling, `{line}` (every {cls} then runs eagerly inside the compiled model)."
    )
    if row is not None:
        return f"{text} {_around_outcome(row, rules)}"
    why = _not_tried_why(fig, "disable_module")
    if why is not None:
        return f"{text} Not tried: {why}."
    if not fig.fixes_enabled:
        return f"{text} Not tried: the analysis ran with --no-fixes."
    return f"{text} Not tried in this analysis."


def _around_outcome(row: FixRow, rules: Rules) -> str:
    """What compiling around the module did, from its fix row (before and after, each paired
    against eager in its own process)."""
    a, b = row.after, row.before
    if a is None:
        return f"Tried in a fresh process: it {row.outcome or 'did not finish'}" + (
            f" ({row.why})." if row.why else "."
        )
    speed = units.ratio(a.speedup, a.speedup_ci)
    without = f" ({units.ratio(b.speedup)} without it)" if b.speedup else ""
    passed = a.numerics_passed
    if passed is False:
        err = a.max_abs_err
        return (
            "Tried in a fresh process: numerics still fail with it"
            + (f" (max abs error {units.sci(err)})" if err is not None else "")
            + f", {speed} vs eager: the drift does not come from this module alone."
        )
    checked = "numerics pass with it" if passed else "numerics not compared with it"
    judged = (
        "significantly faster than eager: apply it"
        if row.significantly_faster(rules)
        else "not measurably faster than eager"
    )
    return f"Tried in a fresh process: {checked}, {speed} vs eager{without}: {judged}."


def _drift_found(fig: Figures, o: ModuleDrift) -> list[str]:
    """What the drift search recorded at the origin beyond its name: the precision it computes in
    (a recorded dtype, or the low-precision tolerance it was judged at) and the op or pass PyTorch's
    CompilerBisector blames on it alone."""
    out = []
    if o.dtype:
        out.append(f"Its output is {o.dtype}.")
    elif o.tol == LOW_PRECISION_TOL:
        out.append(
            f"Its output is low precision (judged at the float16/bfloat16 tolerance, "
            f"{LOW_PRECISION_TOL:g})."
        )
    b = fig.drift_bisector
    if b is not None and b.backend:
        out.append(f"PyTorch's CompilerBisector, on it alone, blames {b.verdict}.")
    elif b is not None and b.verdict:
        out.append(f"PyTorch's CompilerBisector, on it alone: {b.verdict}.")
    return out


def _drift_layer(fig: Figures) -> str | None:
    """Which layer drifts, from the backends this analysis ran: its own backend when that is
    eager / aot_eager, else the ablation's rows. None when neither ran aot_eager or eager."""
    if fig.backend in BELOW_INDUCTOR:
        where = "Dynamo" if fig.backend == "eager" else "Dynamo or AOTAutograd"
        return (
            f"This analysis compiled with backend={fig.backend!r} itself: the drift is in {where}, "
            "not Inductor."
        )
    rows = {r.backend: r for r in fig.ablation_rows if r.backend in BELOW_INDUCTOR}
    if not rows:
        return None
    eager, aot = rows.get("eager"), rows.get("aot_eager")
    real = fig.backend or "inductor"  # the ablation runs only below another backend
    if eager is not None and eager.numerics_passed is False:
        return (
            "The backend ablation already ran backend='eager': it drifts too, so the loss is in "
            "Dynamo, not Inductor."
        )
    if aot is not None and aot.numerics_passed is False:
        return (
            "The backend ablation already ran backend='aot_eager': it drifts too"
            + (" (backend='eager' does not)" if eager is not None and eager.numerics_passed else "")
            + ", so the loss is in AOTAutograd"
            + ("" if eager is not None and eager.numerics_passed else " or Dynamo")
            + ", not Inductor."
        )
    if aot is not None and aot.numerics_passed:
        return (
            "The backend ablation already ran backend='aot_eager': it does not drift, so the loss "
            f"is in {'Inductor' if real == 'inductor' else f'the {real} backend'}."
        )
    ran = " and ".join(f"backend={b!r}" for b in rows)
    return f"The backend ablation already ran {ran}, but compared no numerics with it."


def _ablation_untried(fig: Figures) -> str:
    """' (the backend ablation did not run: …)' when the analysis planned it and left it, or ran
    with --no-fixes ('' otherwise)."""
    for nt in fig.fixes_not_tried:
        spec = nt.spec or {}
        if spec.get("kind") == "ablation" and spec.get("backend") == "aot_eager":
            return f" (the backend ablation was planned, not run: {nt.why})"
    if not fig.fixes_enabled:
        return " (the analysis ran with --no-fixes: no backend ablation)"
    return ""


def _remedy_text(fig: Figures, name: str) -> str | None:
    """'regional compilation (12 × Block), measured in a fresh process: first result after 1.20 s,
    repaid after 310 calls, same speed within the CI (…): `line`' (None when not measured)."""
    r = next((r for r in fig.remedies if r.name == name), None)
    if r is None:
        return None
    repaid = (
        f"repaid after {r.steps_to_repay:,} calls"
        if r.steps_to_repay is not None
        else "never repaid (not faster than eager)"
    )
    fails = ", its numerics fail" if r.numerics_passed is False else ""
    first = f"first result after {units.seconds(r.startup_s)}"
    if r.isa_probe_s is not None:  # its process started from the machine's probed folder
        first += (
            f" in a fresh container ({units.seconds(r.probed_startup_s)} measured on a machine "
            "that has compiled before, plus the ISA probe's builds, the cold figure's footing)"
        )
    return (
        f"{r.title}, measured in a fresh process: {first}, "
        f"{repaid}, {fig.remedy_speed_cost(r)}{fails}: `{r.line}`"
    )


def _probe_text(fig: Figures) -> str:
    """The part of the cold first call that is Inductor's one-off CPU probe, when it was read:
    compiling less does not cut it, a cache folder that persists does. Says which cold the advice
    judged (a fresh container's: what a CI job or a new server pays) and, where the builds were
    read, the cold on a machine that has compiled before."""
    if not fig.isa_probe_s or not fig.cold_s:
        return ""
    probed = (
        f" (on a machine that has compiled before, the cold first call is "
        f"{units.seconds(fig.probed_cold_s)})"
        if fig.probed_cold_s is not None
        else ""
    )
    return (
        f" {units.seconds(fig.isa_probe_s)} of the cold first call is Inductor's one-off CPU "
        "ISA probe (compile.isa_probe), its builds paid once per empty cache folder: compiling less does "
        f"not cut it; a cache folder that persists does{probed}. The cold figure this advice "
        "judges is a fresh container's: what a CI job, a new container or server pays first."
    )


def advise_compile_time(fig: Figures, rules: Rules) -> list[Advice]:
    """A long or cache-sensitive compile: keep the cache, compile less; a remedy the analysis
    measured is cited with its figures instead of suggested."""
    ratio = fig.cold_warm_ratio
    if ratio is not None and ratio >= rules.cold_warm_ratio:
        text = (
            f"A cold compile takes {units.seconds(fig.cold_s)}, a warm-cache one "
            f"{units.seconds(fig.warm_s)}: keep TORCHINDUCTOR_CACHE_DIR on persistent storage "
            "(or ship the cache with torch.compiler.save_cache_artifacts / "
            "load_cache_artifacts) so restarts pay the warm cost."
        )
        shipped = _remedy_text(fig, "portable_cache")
        text += f" {shipped[0].upper()}{shipped[1:]}." if shipped else ""
        text += _probe_text(fig)
        return [advice_item("compile time", text, "compile.cold_s / compile.warm_s")]
    if fig.cold_s and fig.cold_s > rules.compile_seconds_warn:
        regional = _remedy_text(fig, "regional")
        text = (
            f"The first call compiles for {units.seconds(fig.cold_s)}. "
            + (
                f"{regional[0].upper()}{regional[1:]}; keep the inductor cache too."
                if regional
                else "Consider compiling only the hot submodules (regional compilation) and keeping "
                "the inductor cache."
            )
            + _probe_text(fig)
        )
        return [advice_item("compile time", text, "compile.cold_s")]
    return []


def advise_mode(fig: Figures, rules: Rules) -> list[Advice]:
    """A mode that asks for CUDA graphs whose graphs PyTorch skipped (the main analysis's, and each
    mode row's of its own child): how many of how many, its reasons in its own words
    (probes/cudagraphs.py) and the fix each reason calls for. A report from before the reasons
    were read says only the count."""
    mode = fig.mode or ""
    out = []
    if fig.cudagraphs is None and mode.startswith("reduce-overhead") and fig.cudagraph_skips:
        text = (
            f"mode={mode!r}: PyTorch skipped CUDA graphs ({fig.cudagraph_skips} skip(s) recorded); "
            "this report does not hold its reason (analysed before tcdoctor read it): analyse "
            "again to see it."
        )
        out.append(advice_item("mode", text, "compile.cold_cache.cudagraph_skips"))
    elif fig.cudagraphs:
        out += _cudagraph_advice(mode, fig.cudagraphs, "compile.cudagraphs")
    for row in fig.mode_rows:
        if row.source != "main analysis" and row.cudagraphs:
            out += _cudagraph_advice(row.name or "", row.cudagraphs, "strategies.modes")
    return out


def _cudagraph_advice(mode: str, g: CudaGraphs, evidence: str) -> list[Advice]:
    if not g.skipped:
        return []
    reasons = "; ".join(
        f"«{r.reason}»"
        + (f" ×{r.count}" if (r.count or 1) > 1 else "")
        + (f" — fix: {r.fix}" if r.fix else "")
        for r in g.reasons or []
    )
    text = (
        f"mode={mode!r}: PyTorch skipped CUDA graphs for {g.skipped} of {g.graphs} compiled "
        f"graph(s) ({units.count(g.captured)} captured), in its words: {reasons}."
    )
    return [advice_item("mode", text, evidence)]


ADVICE_RULES: tuple[Callable[[Figures, Rules], list[Advice]], ...] = (
    advise_graph_breaks,
    advise_recompiles,
    advise_recompile_limit,
    advise_guards,
    advise_numerics,
    advise_compile_time,
    advise_mode,
)


def numerics_caveat(fig: Figures, verdict: Decision) -> list[str]:
    """A verdict to compile says so when it stands without a numerics check (a gate's
    `--require-numerics` fails then)."""
    if verdict in (Decision.DONT_COMPILE, Decision.CANT_TELL) or fig.numerics_passed is not None:
        return []
    why = fig.numerics_not_measured or "no output could be compared"
    return [f"Numerics were not checked: {why}."]
