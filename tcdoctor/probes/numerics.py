"""Compiled vs eager outputs, both judged against an fp64 reference where the model allows it.

The rule is the benchmark harness's (`torch._dynamo.utils.same` with fp64_ref): compiled
passes if its RMSE against fp64 is at most `multiplier × eager's RMSE + tol/10`, so rounding
that eager shares is not blamed on the compiler. Pitfalls handled here:

- Structure: outputs are flattened with `torch.utils._pytree` (HF `ModelOutput` is registered)
  and objects that hold tensors (HF `DynamicCache`) are walked attribute by attribute; every
  tensor leaf is compared. What cannot be compared (a dtype, a class, an opaque object) is listed
  as "not compared (type)" and never fails the check.
- State and RNG: each side is one call on its own pristine copy with every RNG reset first
  (`pristine.reset_rng_state`). Inductor draws random numbers with its own kernels, so for a
  model that draws torch random numbers inside the compiled region (dropout, `torch.rand`), the
  compiled side must be compiled once more with `torch._inductor.config.fallback_random = True`,
  as the harness's accuracy mode does (a run of its own there): Inductor then calls eager's RNG
  ops and still runs its own kernels for everything else. That compile costs about as much as the
  cold compile (16 s of a 74 s analysis on HF BERT's train step), so it runs only when asked
  (`--fallback-random`); otherwise numerics of a random model are "not measured (why)", never
  compared across two RNG streams. When it runs, its cost is reported.
"""

from __future__ import annotations

import copy
import math
import time
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree

TOL = {torch.float32: 1e-4, torch.float64: 1e-7, torch.float16: 1e-2, torch.bfloat16: 1e-2}
MULTIPLIER = {torch.float16: 3.0, torch.bfloat16: 3.0}
MAX_DEPTH = 12
SCALARS = (bool, int, float, str, type(None))
RNG_EXACT_BACKENDS = ("eager", "aot_eager")  # backends that call eager's RNG ops as they are

Leaves = list  # [(path, value)]


def _walk(obj: Any, path: str, out: Leaves, seen: set, depth: int) -> None:
    if isinstance(obj, torch.Tensor) or isinstance(obj, SCALARS) or depth > MAX_DEPTH:
        out.append((path, obj))
        return
    if id(obj) in seen:
        return
    pairs, _ = pytree.tree_flatten_with_path(obj)
    if not (
        len(pairs) == 1 and pairs[0][1] is obj
    ):  # a registered container: recurse into its leaves
        seen = seen | {id(obj)}
        for keys, leaf in pairs:
            _walk(leaf, path + pytree.keystr(keys), out, seen, depth + 1)
        return
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict) and not isinstance(obj, type) and not callable(obj):
        seen = seen | {id(obj)}
        for name, value in attrs.items():
            _walk(value, f"{path}.{name}", out, seen, depth + 1)
        return
    out.append((path, obj))


def flatten(obj: Any, path: str = "out") -> Leaves:
    """(path, leaf) pairs: tensors, Python scalars, and whatever could not be looked into."""
    out: Leaves = []
    _walk(obj, path, out, set(), 0)
    return out


def snapshot(obj: Any) -> Leaves:
    """Leaves with tensors detached and cloned: later calls may reuse buffers (CUDA graphs) or mutate caches."""
    return [(p, v.detach().clone() if isinstance(v, torch.Tensor) else v) for p, v in flatten(obj)]


def tensor_leaves(leaves: Leaves) -> int:
    return sum(1 for _, v in leaves if isinstance(v, torch.Tensor))


def to_fp64(obj: Any) -> Any:
    def cast(x: Any) -> Any:
        return x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x

    return pytree.tree_map(cast, obj)


def fp64_reference(
    model: Any, run: Callable[[Any, Callable[[Any], Any]], Any]
) -> tuple[Leaves | None, str | None]:
    """`run(model64, cast)` calls a float64 copy on inputs passed through `cast`; None and why if impossible."""
    if not isinstance(model, torch.nn.Module):
        return None, "model is not an nn.Module, so it cannot be cast to float64"
    try:
        m64 = copy.deepcopy(model).to(torch.float64)
        return snapshot(run(m64, to_fp64)), None
    except Exception as exc:  # noqa: BLE001 - some models cannot run in fp64; that is reported
        first = str(exc).splitlines()[0] if str(exc) else ""
        return None, f"fp64 copy of the model failed: {type(exc).__name__}: {first}"[:500]


def _rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    return math.sqrt(torch.mean((a.double() - b.double()) ** 2).item()) if a.numel() else 0.0


def _compare_other(path: str, eager: Any, compiled: Any) -> dict:
    if isinstance(eager, SCALARS) and isinstance(compiled, SCALARS) and not isinstance(eager, str):
        if isinstance(eager, float) or isinstance(compiled, float):
            ok = (
                eager is not None
                and compiled is not None
                and math.isclose(eager, compiled, rel_tol=1e-4, abs_tol=1e-6)
            )
            return {
                "path": path,
                "kind": "float",
                "passed": ok,
                "rule": "math.isclose(rel_tol=1e-4, abs_tol=1e-6)",
            }
        return {
            "path": path,
            "kind": type(eager).__name__,
            "passed": eager == compiled,
            "rule": "==",
        }
    if isinstance(eager, str) and isinstance(compiled, str):
        return {"path": path, "kind": "str", "passed": eager == compiled, "rule": "=="}
    kind = type(eager).__name__
    return {"path": path, "kind": kind, "passed": None, "note": f"not compared ({kind})"}


def compare_leaf(
    path: str, eager: Any, compiled: Any, ref: Any, tol_dtype: torch.dtype | None = None
) -> dict:
    if not isinstance(eager, torch.Tensor) or not isinstance(compiled, torch.Tensor):
        if isinstance(eager, torch.Tensor) != isinstance(compiled, torch.Tensor):
            return {
                "path": path,
                "kind": type(eager).__name__,
                "passed": False,
                "note": f"eager gave {type(eager).__name__}, compiled gave {type(compiled).__name__}",
            }
        return _compare_other(path, eager, compiled)
    info: dict = {
        "path": path,
        "kind": "tensor",
        "dtype": str(eager.dtype).replace("torch.", ""),
        "shape": list(eager.shape),
    }
    if eager.shape != compiled.shape or eager.dtype != compiled.dtype:
        info.update(
            passed=False,
            note=f"compiled output has shape {list(compiled.shape)} dtype {compiled.dtype}",
        )
        return info
    if not eager.is_floating_point() and not eager.is_complex():
        info.update(
            max_abs_err=float((eager != compiled).sum().item()),
            passed=bool(torch.equal(eager, compiled)),
            rule="exact equality (non-float)",
        )
        return info
    e, c = eager.detach().double().cpu(), compiled.detach().double().cpu()
    diff = (c - e).abs()
    scale = e.abs().max().item() if e.numel() else 0.0
    info["max_abs_err"] = diff.max().item() if e.numel() else 0.0
    info["max_rel_err"] = (
        info["max_abs_err"] / scale
        if scale > 0
        else (0.0 if info["max_abs_err"] == 0 else math.inf)
    )
    info["cosine"] = (
        torch.nn.functional.cosine_similarity(e.flatten(), c.flatten(), dim=0).item()
        if e.numel()
        else 1.0
    )
    judge_dtype = tol_dtype or eager.dtype
    tol = TOL.get(judge_dtype, 1e-4)
    info["tol"] = tol
    nonfinite_mismatch = not torch.equal(torch.isfinite(e), torch.isfinite(c))
    if isinstance(ref, torch.Tensor) and ref.shape == eager.shape:
        r = ref.detach().double().cpu()
        mult = MULTIPLIER.get(judge_dtype, 2.0)
        ref_err, res_err = _rmse(r, e), _rmse(r, c)
        info.update(eager_rmse_vs_fp64=ref_err, compiled_rmse_vs_fp64=res_err, multiplier=mult)
        info["passed"] = (not nonfinite_mismatch) and res_err <= mult * ref_err + tol / 10.0
        info["rule"] = f"rmse(compiled, fp64) <= {mult} * rmse(eager, fp64) + {tol}/10"
    else:
        info["passed"] = (not nonfinite_mismatch) and bool(
            torch.allclose(c, e, rtol=tol, atol=tol, equal_nan=True)
        )
        info["rule"] = f"allclose(compiled, eager, rtol={tol}, atol={tol}) (no fp64 reference)"
    return info


def compare(
    eager: Leaves,
    compiled: Leaves,
    ref: Leaves | None,
    ref_why: str | None,
    tol_dtype: torch.dtype | None = None,
) -> dict:
    """Compare snapshots leaf by leaf (same paths); `tol_dtype` is the autocast dtype when there is one."""
    if [p for p, _ in eager] != [p for p, _ in compiled]:
        only_e = sorted({p for p, _ in eager} - {p for p, _ in compiled})[:5]
        only_c = sorted({p for p, _ in compiled} - {p for p, _ in eager})[:5]
        return {
            "passed": False,
            "max_abs_err": None,
            "max_rel_err": None,
            "outputs": [],
            "note": f"compiled output has a different structure from eager output (only eager: {only_e}; only compiled: {only_c})",
        }
    refs = dict(ref) if ref is not None else {}
    outs = [
        compare_leaf(p, e, c, refs.get(p), tol_dtype) for (p, e), (_, c) in zip(eager, compiled)
    ]
    judged = [o for o in outs if o.get("passed") is not None]
    abs_errs = [
        o["max_abs_err"]
        for o in outs
        if o.get("kind") == "tensor" and "max_abs_err" in o and o.get("rule", "").find("exact") < 0
    ]
    rel_errs = [o["max_rel_err"] for o in outs if "max_rel_err" in o]
    cos = [o["cosine"] for o in outs if "cosine" in o]
    failed = [o for o in judged if not o["passed"]]
    return {
        "passed": not failed if judged else None,
        "max_abs_err": max(abs_errs) if abs_errs else None,
        "max_rel_err": max(rel_errs) if rel_errs else None,
        "min_cosine": min(cos) if cos else None,
        "fp64_reference": ref is not None,
        "fp64_unavailable_why": ref_why,
        "compared": len(judged),
        "tensors_compared": sum(1 for o in judged if o["kind"] == "tensor"),
        "failed_outputs": [o["path"] for o in failed][:20],
        "not_compared": [
            {"path": o["path"], "kind": o["kind"]} for o in outs if o.get("passed") is None
        ][:50],
        "outputs": outs[:200],
        "method": "one call each on its own pristine copy with every RNG reset first (torch, Python random, NumPy); "
        "every tensor leaf of the output compared; max_rel_err = max|compiled-eager| / max|eager| per output",
    }


def draws_random(call_with_seed: Callable[[int], Leaves]) -> bool:
    """True if two eager calls on pristine copies differ when only torch's seed differs."""
    a, b = call_with_seed(1), call_with_seed(2)
    for (_, x), (_, y) in zip(a, b):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape or not bool(((x == y) | (x != x) & (y != y)).all()):
                return True
    return len(a) != len(b)


def needs_fallback_random(backend: str) -> bool:
    return backend not in RNG_EXACT_BACKENDS


RANDOM_NOT_COMPARED = (
    "the model draws random numbers and Inductor draws them with its own kernels, so compiled and "
    "eager outputs differ by design; comparing them needs a second compile with Inductor's "
    "fallback_random=True, about as long as the cold compile: --fallback-random runs it"
)


def rng_check(
    backend: str, eager_on_fresh_copy: Callable[[], Any], compare_random: bool = False
) -> dict:
    """Does the model draw torch random numbers? Matters only for backends with RNG of their own.

    `eager_on_fresh_copy()` makes one eager call on a new pristine copy (RNG reset by the caller
    of this function between the two seeds, so only torch's seed differs). `fallback_random` in
    the result says whether the compiled side is to be compiled again for the comparison
    (`compare_random`, the --fallback-random option); see `random_not_compared`.
    """
    if not needs_fallback_random(backend):
        return {
            "stochastic": None,
            "fallback_random": False,
            "method": f"backend {backend!r} calls eager's RNG ops: same seed, same numbers",
        }
    from ..pristine import reset_rng_state

    def with_seed(seed: int) -> Leaves:
        reset_rng_state()
        torch.manual_seed(seed)
        return snapshot(eager_on_fresh_copy())

    t0 = time.perf_counter()
    stochastic = draws_random(with_seed)
    return {
        "stochastic": stochastic,
        "fallback_random": stochastic and compare_random,
        "check_s": time.perf_counter() - t0,
        "method": "two eager calls on pristine copies differing only in torch's seed "
        + (
            "differ: the model draws random numbers" if stochastic else "agree: no torch randomness"
        ),
    }


def random_not_compared(rng: dict) -> str | None:
    """Why a random model's outputs were not compared (no fallback_random compile), else None."""
    return RANDOM_NOT_COMPARED if rng.get("stochastic") and not rng["fallback_random"] else None


def fallback_random_output(compiled_on_fresh_copy: Callable[[], Any], rng: dict) -> Leaves:
    """The compiled side again, compiled with fallback_random=True (the harness's accuracy mode).

    `compiled_on_fresh_copy()` compiles a new pristine copy and makes its first call; Dynamo's state
    is reset before (so nothing is reused from the timed compile) and after.
    """
    import torch._inductor.config as inductor_config

    from ..pristine import reset_rng_state
    from . import dynamo_state

    dynamo_state.fresh()
    t0 = time.perf_counter()
    with inductor_config.patch(fallback_random=True):
        reset_rng_state()
        out = snapshot(compiled_on_fresh_copy())
    rng["extra_compile_s"] = time.perf_counter() - t0
    rng["method"] += (
        "; so the compiled side was compiled once more with torch._inductor.config.fallback_random=True "
        "(Inductor calls eager's RNG ops, its own kernels for the rest), as PyTorch's accuracy harness "
        f"does: that compile and call took {rng['extra_compile_s']:.2f} s"
    )
    dynamo_state.fresh()
    return out
