"""Compiled vs eager outputs, both judged against an fp64 reference where the model allows it.

The rule is the benchmark harness's (`torch._dynamo.utils.same` with fp64_ref): compiled
passes if its RMSE against fp64 is at most `multiplier × eager's RMSE + tol/10`, so rounding
that eager shares is not blamed on the compiler.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any, Callable

import torch

TOL = {torch.float32: 1e-4, torch.float64: 1e-7, torch.float16: 1e-2, torch.bfloat16: 1e-2}
MULTIPLIER = {torch.float16: 3.0, torch.bfloat16: 3.0}


def flatten(obj: Any, path: str = "out") -> list[tuple[str, Any]]:
    """Leaves of tuples, lists, dicts (incl. HF ModelOutput), dataclasses and namedtuples."""
    if isinstance(obj, torch.Tensor):
        return [(path, obj)]
    if isinstance(obj, dict):
        return [leaf for k, v in obj.items() for leaf in flatten(v, f"{path}[{k!r}]")]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [leaf for f in dataclasses.fields(obj) for leaf in flatten(getattr(obj, f.name), f"{path}.{f.name}")]
    if isinstance(obj, (list, tuple)):
        return [leaf for i, v in enumerate(obj) for leaf in flatten(v, f"{path}[{i}]")]
    return [(path, obj)]


def detached_copy(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(detached_copy(v) for v in obj)
    if isinstance(obj, list):
        return [detached_copy(v) for v in obj]
    if type(obj) is dict:
        return {k: detached_copy(v) for k, v in obj.items()}
    return obj


def to_fp64(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.double() if obj.is_floating_point() else obj
    if isinstance(obj, tuple):
        return tuple(to_fp64(v) for v in obj)
    if isinstance(obj, list):
        return [to_fp64(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_fp64(v) for k, v in obj.items()}
    return obj


def fp64_reference(model: Any, inputs: tuple, call: Callable[[Any, tuple], Any]) -> tuple[Any, str | None]:
    if not isinstance(model, torch.nn.Module):
        return None, "model is not an nn.Module, so it cannot be cast to float64"
    try:
        m64 = copy.deepcopy(model).to(torch.float64)
        return call(m64, to_fp64(inputs)), None
    except Exception as exc:  # noqa: BLE001 - some models cannot run in fp64; that is reported
        return None, f"fp64 copy of the model failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def _rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    return math.sqrt(torch.mean((a.double() - b.double()) ** 2).item()) if a.numel() else 0.0


def compare_leaf(path: str, eager: Any, compiled: Any, ref: Any) -> dict:
    if not isinstance(eager, torch.Tensor) or not isinstance(compiled, torch.Tensor):
        try:
            same = bool(eager == compiled)
        except Exception:  # noqa: BLE001
            same = None
        return {"path": path, "kind": type(eager).__name__, "passed": same, "note": "non-tensor output compared with ==" if same is not None else "not comparable"}
    info: dict = {"path": path, "kind": "tensor", "dtype": str(eager.dtype).replace("torch.", ""), "shape": list(eager.shape)}
    if eager.shape != compiled.shape or eager.dtype != compiled.dtype:
        info.update(passed=False, note=f"compiled output has shape {list(compiled.shape)} dtype {compiled.dtype}")
        return info
    if not eager.is_floating_point() and not eager.is_complex():
        info.update(max_abs_err=float((eager != compiled).sum().item()), passed=bool(torch.equal(eager, compiled)), rule="exact equality (non-float)")
        return info
    e, c = eager.detach().double().cpu(), compiled.detach().double().cpu()
    diff = (c - e).abs()
    scale = e.abs().max().item() if e.numel() else 0.0
    info["max_abs_err"] = diff.max().item() if e.numel() else 0.0
    info["max_rel_err"] = info["max_abs_err"] / scale if scale > 0 else (0.0 if info["max_abs_err"] == 0 else math.inf)
    cos = torch.nn.functional.cosine_similarity(e.flatten(), c.flatten(), dim=0).item() if e.numel() else 1.0
    info["cosine"] = cos
    tol = TOL.get(eager.dtype, 1e-4)
    info["tol"] = tol
    nonfinite_mismatch = not torch.equal(torch.isfinite(e), torch.isfinite(c))
    if isinstance(ref, torch.Tensor) and ref.shape == eager.shape:
        r = ref.detach().double().cpu()
        mult = MULTIPLIER.get(eager.dtype, 2.0)
        ref_err, res_err = _rmse(r, e), _rmse(r, c)
        info.update(eager_rmse_vs_fp64=ref_err, compiled_rmse_vs_fp64=res_err, multiplier=mult)
        info["passed"] = (not nonfinite_mismatch) and res_err <= mult * ref_err + tol / 10.0
        info["rule"] = f"rmse(compiled, fp64) <= {mult} * rmse(eager, fp64) + {tol}/10"
    else:
        info["passed"] = (not nonfinite_mismatch) and bool(torch.allclose(c, e, rtol=tol, atol=tol, equal_nan=True))
        info["rule"] = f"allclose(compiled, eager, rtol={tol}, atol={tol}) (no fp64 reference)"
    return info


def compare(eager_out: Any, compiled_out: Any, ref_out: Any, ref_why: str | None) -> dict:
    e_leaves, c_leaves = flatten(eager_out), flatten(compiled_out)
    r_leaves = dict(flatten(ref_out)) if ref_out is not None else {}
    if [p for p, _ in e_leaves] != [p for p, _ in c_leaves]:
        return {"passed": False, "max_abs_err": None, "max_rel_err": None, "outputs": [],
                "note": "compiled output has a different structure from eager output"}
    outs = [compare_leaf(p, e, c, r_leaves.get(p)) for (p, e), (_, c) in zip(e_leaves, c_leaves)]
    judged = [o for o in outs if o.get("passed") is not None]
    abs_errs = [o["max_abs_err"] for o in outs if "max_abs_err" in o]
    rel_errs = [o["max_rel_err"] for o in outs if "max_rel_err" in o]
    cos = [o["cosine"] for o in outs if "cosine" in o]
    return {
        "passed": all(o["passed"] for o in judged) if judged else None,
        "max_abs_err": max(abs_errs) if abs_errs else None,
        "max_rel_err": max(rel_errs) if rel_errs else None,
        "min_cosine": min(cos) if cos else None,
        "fp64_reference": ref_out is not None,
        "fp64_unavailable_why": ref_why,
        "outputs": outs[:200],
        "method": "one call each on the same inputs with the same RNG seed; max_rel_err = max|compiled-eager| / max|eager| per output",
    }
