"""The decision and the advice, from measured figures only. Every threshold lives in RULES.

compile              significantly faster (95% CI of the speedup above MIN_SPEEDUP), the compile
                     time pays back within the expected number of calls, numerics pass, and
                     nothing forces eager execution (skipped frames, recompile limit hit).
compile-after-fixes  graph breaks, skipped frames or recompiles stand between the model and a gain:
                     not significantly faster yet, or faster but with frames running eagerly.
dont-compile         the compiled model fails or drifts numerically; or it is not faster and there
                     is nothing to fix; or it is faster but never pays back its compile time.
"""
from __future__ import annotations

import math
import re
from typing import Any

from .units import seconds

RULES: dict[str, float] = {
    "min_speedup": 1.02,  # lower bound of the speedup's 95% CI must exceed this to count as faster
    "expected_calls": 100_000,  # default horizon for break-even (--expected-calls)
    "guard_overhead_fraction": 0.20,  # guard evaluation above this share of a compiled call is flagged
    "cold_warm_ratio": 3.0,  # cold compile this many times the warm one: advise keeping the cache
    "compile_seconds_warn": 60.0,  # first call slower than this gets compile-time advice
    "regional_auto_breaks": 3,  # this many graph breaks in the whole model: also try compiling its submodules
}

HORIZONS = {"one epoch of 1,000 steps": 1_000, "one epoch of 10,000 steps": 10_000, "a server handling 1M requests": 1_000_000}


def _g(d: dict, dotted: str) -> Any:
    cur: Any = d
    for p in dotted.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(p)
    return cur


def break_even(compile_s: float | None, eager_s: float | None, compiled_s: float | None) -> dict | None:
    """Calls after which (compile time − one eager call) is repaid by the per-call saving."""
    if compile_s is None or not eager_s or not compiled_s or compiled_s >= eager_s:
        return None
    saving = eager_s - compiled_s
    calls = max(1, math.ceil(max(0.0, compile_s - eager_s) / saving))
    return {"calls": calls, "wall_s": calls * compiled_s + compile_s, "saving_per_call_s": saving}


# Breaks inside code the user does not own, with what they can change at their call site instead.
# Keyed by the library function the break happens in; each entry was checked on torch 2.13.
CALL_SITE_FIXES = {
    "_detect_is_causal_mask": (
        "pass `is_causal=True` (or False) together with the mask where you call the Transformer module: "
        "it then skips the data-dependent check of the mask's values"
    ),
}


def _own_code_fix(f: dict) -> str:
    reason = (f.get("reason") or "").lower()
    if "data-dependent branching" in reason or "generic_jump" in reason:
        return "make the branch tensor-valued: `torch.where(cond, a, b)` for both outcomes, or `torch.cond` for real control flow"
    if "item()" in reason:
        return "keep the value a tensor instead of calling .item(), or set `torch._dynamo.config.capture_scalar_outputs = True`"
    if "builtin operator" in reason and "print" in (f.get("explanation") or "") + (f.get("code") or ""):
        return "remove the print from forward (or log outside the compiled region); `torch._dynamo.config.reorderable_logging_functions` can keep it"
    if f.get("hints"):
        return f["hints"][0]
    return "see the linked explanation"


def _foreign_code_fix(f: dict) -> str:
    """What the user can do from their side about a break in code they did not write."""
    site = f.get("site") or {}
    known = CALL_SITE_FIXES.get(site.get("function") or "")
    if f.get("origin") == "step":
        return ("this is the standard training step's own call (backward/optimizer), not your code: compare the "
                "training ways tcdoctor measured (model only, optimizer.step only) and use the fastest")
    options = [known] if known else []
    lib = f.get("library") or "the library"
    if lib == "torch" and "optim" in (site.get("file") or ""):
        options.append("compile the model and `optimizer.step` separately (PyTorch's optimizer recipe) instead of one "
                       "function around both")
    options.append(f"compile around it: `torch.compiler.disable` on the submodule that calls into {lib}, or compile "
                   "only the submodules that trace cleanly (regional compilation, `--submodules`)")
    return "; or ".join(options)


def graph_break_advice(f: dict) -> str:
    where = f"{f.get('file') or '?'}:{f.get('line') or '?'}"
    code = f" (`{f['code']}`)" if f.get("code") else ""
    extra = ""
    if f.get("frame_skipped"):
        extra = " Because this break is inside a loop (or try/with block), Dynamo skipped the whole frame: all of it runs eagerly."
    n = f.get("occurrences", 1)
    times = f" ({n}×)" if n > 1 else ""
    origin = f.get("origin") or "user"
    if origin == "user":
        return f"Graph break at {where}{code}{times}: {f.get('reason')}. Fix: {_own_code_fix(f)}.{extra}"
    site = f.get("site") or {}
    at = f"{f.get('library') or 'library'} {site.get('function') or ''} ({site.get('file') or '?'}:{site.get('line') or '?'})".replace("  ", " ")
    hint = f" PyTorch's hint, for that code's authors: {f['hints'][0]}" if f.get("hints") else ""
    return (f"Graph break inside {f.get('origin_text') or 'code you did not write'}: {at}, reached from {where}{code}{times}: "
            f"{f.get('reason')}. From your side: {_foreign_code_fix(f)}.{extra}{hint}")


def recompile_advice(ev: dict) -> str:
    r = ev.get("reason") or ""
    m = re.search(r"tensor '([^']+)' size mismatch at index (\d+)", r)
    if m:
        fix = (f"dimension {m.group(2)} of `{m.group(1)}` changes: mark it dynamic before the first call "
               f"(`torch._dynamo.mark_dynamic(x, {m.group(2)})`) or compile with `dynamic=True`")
    elif ".training ==" in r:
        fix = "switching train/eval mode recompiles: compile one model per mode, or stop toggling `training` between calls"
    elif "grad_mode" in r:
        fix = "grad mode differs between calls: call consistently under (or outside) torch.no_grad()"
    elif "num_threads" in r:
        fix = "the thread count changed after compiling: call torch.set_num_threads once, before the first compiled call"
    elif "dtype" in r:
        fix = "the input dtype changes: cast inputs to one dtype before calling the model"
    elif "param_groups" in r and "'lr'" in r:
        fix = ("the optimizer's learning rate is a Python float that changes between calls (a scheduler): create the "
               "optimizer with `lr=torch.tensor(...)` so the value is a tensor, not a constant baked into the graph")
    elif re.search(r"== [-\d.]+", r) or "type(" in r:
        fix = "a Python value (number, flag or type) is baked into the graph: pass it as a tensor, or keep it constant"
    else:
        fix = "make this input or attribute stable between calls"
    return f"Recompile of {ev.get('function')} on {ev.get('variant')}: guard failed: {r}. Fix: {fix}."


def decide(data: dict, expected_calls: int | None = None, min_speedup: float | None = None) -> dict:
    rules = dict(RULES)
    if expected_calls is not None:
        rules["expected_calls"] = expected_calls
    if min_speedup is not None:
        rules["min_speedup"] = min_speedup
    reasons: list[str] = []
    advice: list[dict] = []

    breaks = _g(data, "graph_breaks.count") or 0
    skipped = _g(data, "graph_breaks.skipped_frames") or 0
    recomp = _g(data, "recompiles.count") or 0
    limit_hit = bool(_g(data, "recompiles.limit_hit"))
    speedup, ci = _g(data, "runtime.speedup"), _g(data, "runtime.speedup_ci")
    eager_s, comp_s = _g(data, "runtime.eager.median_s"), _g(data, "runtime.compiled.median_s")
    cold, warm = _g(data, "compile.cold_s"), _g(data, "compile.warm_s")
    numerics_ok = _g(data, "numerics.passed")
    compile_failed = any(e.get("phase") in ("compile", "compile_warm") for e in data.get("errors", []))

    be_cold = break_even(cold, eager_s, comp_s)
    be_warm = break_even(warm, eager_s, comp_s)
    horizon = int(rules["expected_calls"])

    for f in _g(data, "graph_breaks.unique") or []:
        advice.append({"topic": "graph break", "text": graph_break_advice(f), "evidence": f"graph_breaks.unique: {f.get('reason')} at {f.get('file')}:{f.get('line')}"})
    for ev in _g(data, "recompiles.events") or []:
        advice.append({"topic": "recompile", "text": recompile_advice(ev), "evidence": f"recompiles.events: {ev.get('reason')}"})
    if limit_hit:
        advice.append({"topic": "recompile limit", "text": f"The recompile limit ({_g(data, 'recompiles.limit')}) was hit: from then on the function runs EAGERLY, silently. Fix the recompiles above or raise torch._dynamo.config.recompile_limit.", "evidence": "recompiles.limit_hit = true"})
    ovh_frac = _g(data, "guards.overhead_fraction")
    if ovh_frac is not None and ovh_frac > rules["guard_overhead_fraction"]:
        dev = (_g(data, "environment.device") or "cpu")
        fix = ("use mode=\"reduce-overhead\" (CUDA graphs) to skip per-call overhead" if dev.startswith("cuda")
               else "on CPU, torch.compiler.set_stance('default', skip_guard_eval_unsafe=True) skips guard checks once all shapes are warmed up (unsafe if inputs change), or batch more work per call")
        advice.append({"topic": "guard overhead", "text": f"Guard evaluation costs {seconds(_g(data, 'guards.overhead_s_per_call'))} per call, {ovh_frac:.0%} of a compiled call ({_g(data, 'guards.count')} guards). Fix: {fix}.", "evidence": "guards.overhead_fraction"})
    if numerics_ok is False:
        err = _g(data, "numerics.max_abs_err")
        err_txt = f" (max abs error {err:.3g})" if err is not None else ""
        advice.append({"topic": "numerics", "text": f"Compiled outputs drift from eager beyond tolerance{err_txt}. Check the failing outputs against the fp64 reference, look for reductions in low precision, and retry with backend='aot_eager' to tell Dynamo/AOT problems from Inductor ones.", "evidence": "numerics.passed = false"})
    if cold and warm and warm > 0 and cold / warm >= rules["cold_warm_ratio"]:
        advice.append({"topic": "compile time", "text": f"A cold compile takes {seconds(cold)}, a warm-cache one {seconds(warm)}: keep TORCHINDUCTOR_CACHE_DIR on persistent storage (or ship the cache with torch.compiler.save_cache_artifacts / load_cache_artifacts) so restarts pay the warm cost.", "evidence": "compile.cold_s / compile.warm_s"})
    elif cold and cold > rules["compile_seconds_warn"]:
        advice.append({"topic": "compile time", "text": f"The first call compiles for {seconds(cold)}. Consider compiling only the hot submodules (regional compilation) and keeping the inductor cache.", "evidence": "compile.cold_s"})

    skips = _g(data, "compile.cold_cache.cudagraph_skips") or 0
    if (_g(data, "options.mode") or "").startswith("reduce-overhead") and skips:
        advice.append({"topic": "mode", "text": f"mode='reduce-overhead' had no effect: PyTorch skipped CUDA graphs ({skips} skip(s) recorded) — on {_g(data, 'environment.device') or 'this device'} there is nothing for it to capture. The figures are those of the default mode.", "evidence": "compile.cold_cache.cudagraph_skips"})

    faster = ci is not None and ci[0] is not None and ci[0] > rules["min_speedup"]
    slower = ci is not None and ci[1] is not None and ci[1] < 1.0
    fixable = breaks > 0 or recomp > 0 or limit_hit

    if compile_failed:
        decision = "dont-compile"
        msg = next(e.get("message") for e in data["errors"] if e.get("phase") in ("compile", "compile_warm"))
        reasons.append(f"The compiled model failed: {msg}")
    elif numerics_ok is False:
        decision = "dont-compile"
        err = _g(data, "numerics.max_abs_err")
        failed = _g(data, "numerics.failed_outputs") or []
        speed = (f"Compiled is {speedup:.2f}× faster (95% CI {ci[0]:.2f}–{ci[1]:.2f}), but the n" if speedup and ci and ci[0]
                 and ci[0] > rules["min_speedup"] else "N")
        reasons.append(f"{speed}umerics check failed" + (f" (max abs error {err:.3g} vs eager)" if err is not None else "")
                       + (f" on {', '.join(failed[:3])}" if failed else "") + ".")
    elif speedup is None:
        decision = "dont-compile"
        reasons.append(f"Speed was not measured ({_g(data, 'runtime.not_measured') or 'no runtime figures'}), so no gain is shown.")
    elif not faster:
        ci_txt = f"{speedup:.2f}× (95% CI {ci[0]:.2f}–{ci[1]:.2f})"
        what = "slower than eager" if slower else "not measurably faster than eager"
        if fixable:
            decision = "compile-after-fixes"
            reasons.append(f"Compiled is {what}: {ci_txt}; {breaks} graph break(s) and {recomp} recompile(s) to fix first.")
        else:
            decision = "dont-compile"
            reasons.append(f"Compiled is {what}: {ci_txt}, and there are no graph breaks or recompiles to fix.")
            if slower and ovh_frac is not None:
                reasons.append(
                    f"The compiled path has a fixed per-call cost (guard evaluation alone: {seconds(_g(data, 'guards.overhead_s_per_call'))} "
                    f"for {_g(data, 'guards.count')} guards, {ovh_frac:.0%} of a compiled call) that this call's work does not repay: "
                    f"eager takes {seconds(eager_s)}, compiled {seconds(comp_s)}.")
    else:
        ci_txt = f"{speedup:.2f}× faster (95% CI {ci[0]:.2f}–{ci[1]:.2f})"
        if be_cold and be_cold["calls"] > horizon and not (be_warm and be_warm["calls"] <= horizon):
            decision = "dont-compile"
            reasons.append(f"Compiled is {ci_txt}, but the compile time is repaid only after {be_cold['calls']:,} calls, beyond the expected {horizon:,}.")
        elif skipped > 0 or limit_hit:
            decision = "compile-after-fixes"
            reasons.append(f"Compiled is {ci_txt}, but parts of the model run eagerly ({skipped} skipped frame(s){', recompile limit hit' if limit_hit else ''}).")
        else:
            decision = "compile"
            reasons.append(f"Compiled is {ci_txt}.")
            if be_cold:
                reasons.append(f"Compile time is repaid after {be_cold['calls']:,} calls (cold cache), within the expected {horizon:,}.")
            if fixable:
                reasons.append(f"{breaks} graph break(s) and {recomp} recompile(s) remain; fixing them may gain more.")
    recs = recommend(data, rules)
    for topic, r in recs.items():
        advice.append({"topic": f"strategy: {topic}", "text": r["text"], "evidence": f"strategies.{'modes' if topic == 'mode' else topic}"})
    return {
        "decision": decision,
        "reasons": reasons,
        "advice": advice,
        "recommendations": recs,
        "break_even_calls": be_cold["calls"] if be_cold else None,
        "break_even": {"cold": be_cold, "warm": be_warm, "expected_calls": horizon,
                       "horizons": {k: v for k, v in HORIZONS.items()}},
        "rules": rules,
    }


def _faster(row: dict, rules: dict) -> bool:
    ci = row.get("speedup_ci")
    return bool(ci and ci[0] is not None and ci[0] > rules["min_speedup"])


def _steps_to_repay(row: dict) -> int | None:
    be = break_even(row.get("first_call_s"), row.get("eager_median_s"), row.get("median_s"))
    return be["calls"] if be else None


def changing_dims(data: dict) -> list[str]:
    """Dimensions named by the size-mismatch guards that recompiled (e.g. "args[0] dim 1")."""
    dims = []
    for ev in _g(data, "recompiles.events") or []:
        m = re.search(r"tensor '([^']+)' size mismatch at index (\d+)", ev.get("reason") or "")
        if m and f"{m.group(1)} dim {m.group(2)}" not in dims:
            dims.append(f"{m.group(1)} dim {m.group(2)}")
    return dims


def recommend(data: dict, rules: dict) -> dict:
    """One recommendation per strategy family that was measured, each with the figures behind it."""
    st = data.get("strategies") or {}
    rec: dict = {}
    modes = [r for r in st.get("modes") or [] if r.get("speedup") is not None]
    if modes:
        good = [r for r in modes if _faster(r, rules) and r.get("numerics_passed") is not False and not r.get("note")]
        best = max(good, key=lambda r: r["speedup"]) if good else None
        rec["mode"] = {"choice": best["name"] if best else None,
                       "text": (f"mode={best['name']!r}: {best['speedup']:.2f}× vs eager, first call {seconds(best['first_call_s'])}" if best
                                else "no mode is measurably faster than eager here")}
    train = [r for r in st.get("training") or [] if r.get("median_s") is not None]
    if train:
        good = [r for r in train if r["name"] != "eager" and _faster(r, rules) and r.get("numerics_passed") is not False]
        best = max(good, key=lambda r: r["speedup"]) if good else None
        steps = {r["name"]: _steps_to_repay(r) for r in train if r["name"] != "eager"}
        names = {"model": "compile the model only", "step": "compile the whole training step", "optimizer": "compile only optimizer.step"}
        drifting = [r for r in train if r["name"] != "eager" and _faster(r, rules) and r.get("numerics_passed") is False]
        if best and steps.get(best["name"]):
            text = (f"{names[best['name']]}: {seconds(best['median_s'])}/step vs {seconds(best['eager_median_s'])} eager "
                    f"({best['speedup']:.2f}×), repaid after {steps[best['name']]:,} steps")
        elif best:
            text = f"{names[best['name']]}: {best['speedup']:.2f}× faster, but it never repays its compile time"
        elif drifting:
            text = "keep the step eager until the numerics are resolved: " + "; ".join(
                f"{names[r['name']]} is {r['speedup']:.2f}× faster but fails the numerics check"
                + (f" (max abs error {r['max_abs_err']:.3g})" if r.get("max_abs_err") is not None else "") for r in drifting)
        else:
            text = "keep the step eager: no way of compiling it is measurably faster"
        rec["training"] = {"choice": best["name"] if best else "eager", "break_even_steps": steps, "text": text}
    dyn = [r for r in st.get("dynamic") or [] if r.get("shapes")]
    if dyn:
        horizon = rules["expected_calls"]
        usable = [r for r in dyn if not r.get("limit_hit")] or dyn
        cost = {r["name"]: r["compile_s"] + horizon * sum(s["median_s"] for s in r["shapes"]) / len(r["shapes"]) for r in usable}
        best = min(usable, key=lambda r: cost[r["name"]])
        dims = changing_dims(data) or [d for r in dyn for d in r.get("changing_dims", [])][:1]
        dim_txt = f"; the dimension that changes: {', '.join(dims)} (torch._dynamo.mark_dynamic on it before the first call)" if dims else ""
        static = next((r for r in dyn if r["name"] == "static"), None)
        rec["dynamic"] = {"choice": best["name"], "dims": dims, "costs_s": cost,
                          "text": f"{best['name']} shapes: {best['compiles']} compile(s), {seconds(best['compile_s'])} compiling"
                                  + (f" (static: {static['compiles']} compiles, {seconds(static['compile_s'])})" if static and static is not best else "")
                                  + f", lowest compile + run time over {horizon:,} calls{dim_txt}"}
    reg = st.get("regions")
    if reg and reg.get("regions"):
        pick = [r for r in reg["regions"] if r.get("fullgraph") and _faster(r, rules)]
        gain = sum((r["eager_median_s"] - r["median_s"]) * r["calls_per_forward"] for r in pick)
        eager_fwd = _g(data, "runtime.eager.median_s")
        frac = f" ({gain / eager_fwd:.0%} of an eager forward)" if eager_fwd and pick else ""
        broken = [r["name"] for r in reg["regions"] if r.get("fullgraph") is False]
        rec["regions"] = {"choice": [r["name"] for r in pick], "expected_gain_s_per_forward": gain,
                          "text": (f"compile {', '.join(pick_n['name'] for pick_n in pick)}: expected saving {seconds(gain)} per forward{frac}" if pick
                                   else "no submodule is both fullgraph-clean and measurably faster compiled")
                                  + (f"; leave {', '.join(broken)} eager (graph breaks)" if broken else "")}
    return rec
