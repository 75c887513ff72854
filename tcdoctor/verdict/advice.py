"""Advice wording and the `advise_*` rules: one rule per topic, each returning its advice items.

Advice fits who can act on it: a break in code the user did not write gets what they can do from
their side (a call-site argument, compiling around it, the training ways), never an edit of it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable

from .. import units
from ..report.sections import (
    Advice,
    GraphBreak,
    Recompile,
)
from .figures import Figures

if TYPE_CHECKING:
    pass


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
    called_api = site.get("called") or {}
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


def advice_item(topic: str, text: str, evidence: str) -> Advice:
    return Advice(topic=topic, text=text, evidence=evidence)


def advise_graph_breaks(fig: Figures, rules: dict) -> list[Advice]:
    return [
        advice_item(
            "graph break",
            graph_break_advice(f, fig.training_ways_measured),
            f"graph_breaks.unique: {f.reason} at {f.file}:{f.line}",
        )
        for f in fig.break_findings
    ]


def advise_recompiles(fig: Figures, rules: dict) -> list[Advice]:
    return [
        advice_item("recompile", recompile_advice(ev), f"recompiles.events: {ev.reason}")
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
    return [advice_item("recompile limit", text, "recompiles.limit_hit = true")]


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
    return [advice_item("guard overhead", text, "guards.overhead_fraction")]


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
    return [advice_item("numerics", text, "numerics.passed = false")]


def advise_compile_time(fig: Figures, rules: dict) -> list[Advice]:
    ratio = fig.cold_warm_ratio
    if ratio is not None and ratio >= rules["cold_warm_ratio"]:
        text = (
            f"A cold compile takes {units.seconds(fig.cold_s)}, a warm-cache one "
            f"{units.seconds(fig.warm_s)}: keep TORCHINDUCTOR_CACHE_DIR on persistent storage "
            "(or ship the cache with torch.compiler.save_cache_artifacts / "
            "load_cache_artifacts) so restarts pay the warm cost."
        )
        return [advice_item("compile time", text, "compile.cold_s / compile.warm_s")]
    if fig.cold_s and fig.cold_s > rules["compile_seconds_warn"]:
        text = (
            f"The first call compiles for {units.seconds(fig.cold_s)}. Consider compiling only "
            "the hot submodules (regional compilation) and keeping the inductor cache."
        )
        return [advice_item("compile time", text, "compile.cold_s")]
    return []


def advise_mode(fig: Figures, rules: dict) -> list[Advice]:
    if not ((fig.mode or "").startswith("reduce-overhead") and fig.cudagraph_skips):
        return []
    text = (
        f"mode='reduce-overhead' had no effect: PyTorch skipped CUDA graphs "
        f"({fig.cudagraph_skips} skip(s) recorded) — on {fig.device or 'this device'} there "
        "is nothing for it to capture. The figures are those of the default mode."
    )
    return [advice_item("mode", text, "compile.cold_cache.cudagraph_skips")]


ADVICE_RULES: tuple[Callable[[Figures, dict], list[Advice]], ...] = (
    advise_graph_breaks,
    advise_recompiles,
    advise_recompile_limit,
    advise_guards,
    advise_numerics,
    advise_compile_time,
    advise_mode,
)


def numerics_caveat(fig: Figures, verdict: str) -> list[str]:
    """A verdict to compile says so when it stands without a numerics check (a gate's
    `--require-numerics` fails then)."""
    if verdict == "dont-compile" or fig.numerics_passed is not None:
        return []
    why = fig.numerics_not_measured or "no output could be compared"
    return [f"Numerics were not checked: {why}."]
