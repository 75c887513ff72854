"""What the fresh process that serves an AOTInductor package gets beside it, and what it does with
it (probes/aot.py's helpers, one concern: the package checked against eager and kept from what it
cannot take).

- What the exported program accepts (`export_findings.ShapePlan.accepts`): `Gate` keeps from the
  package each request that does not fit it. An AOTInductor package checks no input unless
  AOTI_RUNTIME_CHECK_INPUTS is set where it runs (torch 2.13's generated wrapper reads that
  variable; measured here: a batch past the Dim's max was served without a word), so a planted
  wrong-rank request would be served garbage or crash the process. The check runs as the request
  is drawn, off the clock; the request becomes an error naming it, in its place among the
  replay's per-request lists.
- The eager reference (`save_reference`): a few requests (one per distinct shape, the smallest and
  the largest and the example first, at most COMPARED), their inputs, eager's outputs (every RNG
  reset first) and an fp64 copy's, saved in the export process: the fresh process cannot rebuild
  the same weights or requests when build() or the traffic is unseeded. `compare_with_eager` runs
  them through the package and judges the outputs with probes/numerics.py's `compare` (PyTorch's
  benchmark comparator, `torch._dynamo.utils.same`), so AOT numerics use the report's one rule.

Pitfalls: a model that draws random numbers is not compared (the package draws its own; found by
two eager calls with different seeds, probes/randomness.py). Inputs that do not pickle leave
numerics "not measured (why)"; what the program accepts is saved all the same. The file is ours,
written just before by the export process, so it is read with `weights_only=False`.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Iterator, Sequence

import torch

from ..target.pristine import reset_rng_state
from ..target.workload import CallArgs
from . import export_findings, numerics, randomness
from .outputs import SCALARS, first_line, snapshot

COMPARED = 6  # requests whose outputs are compared with eager's (distinct shapes)


def call_args_of(request: Any) -> CallArgs:
    """A traffic Request's call arguments (target/traffic.py), or a CallArgs as it is."""
    args = getattr(request, "args", None)
    return args if isinstance(args, CallArgs) else request


def request_index(request: Any, position: int) -> int:
    return int(getattr(request, "index", position))


def compared_requests(
    requests: Sequence[Any], plan: export_findings.ShapePlan, n: int = COMPARED
) -> list[int]:
    """Positions of the requests compared: one per distinct shape, the smallest and the largest
    (by elements) and the example first, then the others in traffic order, at most `n`."""
    odd = set(plan.odd_requests)
    by_shape: dict[tuple, int] = {}
    size: dict[int, int] = {}
    for i, r in enumerate(requests):
        if i in odd:
            continue
        shapes = tuple(tuple(t.shape) for t in _tensors(call_args_of(r)))
        if shapes not in by_shape:
            by_shape[shapes] = i
            size[i] = sum(math.prod(s) for s in shapes)
    order = sorted(size, key=lambda i: size[i])
    first = [order[0], order[-1]] if order else []
    if plan.example_index is not None:
        first.insert(0, plan.example_index)
    picked = list(dict.fromkeys(first + list(by_shape.values())))[:n]
    return sorted(picked)


def _tensors(args: CallArgs) -> list[torch.Tensor]:
    from ..target.workload import iter_tensors

    return list(iter_tensors(args))


def _numeric_leaves(obj: Any) -> list[tuple[str, Any]]:
    """Tensor and scalar leaves only (what the comparator judges), as a plain list to save."""
    return [
        (p, v) for p, v in snapshot(obj) if isinstance(v, torch.Tensor) or isinstance(v, SCALARS)
    ]


def save_reference(
    workload: Any, requests: Sequence[Any], plan: export_findings.ShapePlan, path: str
) -> str | None:
    """What the fresh process needs beside the package, saved to `path`: what the exported
    program accepts (`plan.accepts`: a request that does not fit is not sent to the package) and,
    for numerics, the compared requests' inputs, eager outputs and fp64 outputs. Returns None, or
    why numerics cannot be measured (a random model, inputs that cannot be saved)."""
    saved: dict = {"accepts": plan.accepts}
    why = _eager_reference(workload, requests, plan, saved)
    if why is not None:
        saved = {"accepts": plan.accepts, "numerics_why": why}
    try:
        torch.save(saved, path)
    except Exception as exc:  # noqa: BLE001 - inputs that do not pickle
        torch.save({"accepts": plan.accepts, "numerics_why": first_line(exc)}, path)
        return f"the compared requests could not be saved: {first_line(exc)}"
    return why


def _eager_reference(
    workload: Any, requests: Sequence[Any], plan: export_findings.ShapePlan, saved: dict
) -> str | None:
    """The compared requests' inputs and outputs into `saved` (eager, every RNG reset first, and
    an fp64 copy's); None, or why numerics cannot be measured."""
    model = workload.model
    picked = compared_requests(requests, plan)
    if not picked:
        return "no request to compare"
    calls = {request_index(requests[i], i): call_args_of(requests[i]) for i in picked}

    def eager(m: Any, cast: Callable[[Any], Any] = lambda x: x) -> dict:
        outs = {}
        with workload.context():
            for idx, ca in calls.items():
                reset_rng_state()
                outs[idx] = m(*cast(tuple(ca.args)), **cast(dict(ca.kwargs)))
        return outs

    first = next(iter(calls.values()))

    def seeded(seed: int) -> list:
        torch.manual_seed(seed)
        with workload.context():
            return _numeric_leaves(model(*first.args, **first.kwargs))

    try:
        if randomness.draws_random(seeded):
            return (
                "the model draws random numbers (two eager calls with different seeds differ): "
                "the package draws its own, so its outputs are not compared with eager's"
            )
        eager_leaves = _numeric_leaves(eager(model))
        ref, ref_why = numerics.fp64_reference(model, lambda m64, cast: eager(m64, cast))
    except Exception as exc:  # noqa: BLE001 - a model that raises on a compared request
        return f"the eager reference failed: {first_line(exc)}"
    saved.update(
        requests=list(calls),
        inputs=[(tuple(ca.args), dict(ca.kwargs)) for ca in calls.values()],
        eager=eager_leaves,
        fp64=[(p, v) for p, v in ref] if ref is not None else None,
        fp64_why=ref_why,
        tol_dtype=workload.autocast,
    )
    return None


def read_saved(path: str | None) -> dict:
    """What `run` saved beside the package (our own file, written just before: not untrusted)."""
    if not path:
        return {}
    try:
        return dict(torch.load(path, weights_only=False))
    except Exception as exc:  # noqa: BLE001 - a file that cannot be read: numerics says why
        return {"numerics_why": f"the saved requests could not be read: {first_line(exc)}"}


def compare_with_eager(runner: Any, saved: dict) -> dict:
    """The saved requests (`read_saved`) run through the package (off the clock), judged against
    the eager outputs saved with them by probes/numerics.py's `compare`."""
    if "eager" not in saved:
        why = saved.get("numerics_why") or "no eager outputs were saved"
        return {"status": "not measured", "passed": None, "not_measured": why}
    try:
        outs = {}
        with torch.no_grad():
            for idx, (args, kwargs) in zip(saved["requests"], saved["inputs"]):
                outs[idx] = runner(*args, **kwargs)
        got = _numeric_leaves(outs)
    except Exception as exc:  # noqa: BLE001 - a request the package refuses: not compared (why)
        return {"status": "not measured", "passed": None, "not_measured": first_line(exc)}
    data = numerics.compare(
        saved["eager"], got, saved["fp64"], saved["fp64_why"], saved["tol_dtype"]
    )
    status = {True: "pass", False: "fail"}.get(data["passed"], "not measured")
    data.update(
        status=status,
        requests=list(saved["requests"]),
        method=(
            f"requests {', '.join(map(str, saved['requests']))} of the traffic (one per distinct "
            "shape, the smallest and the largest first) run through the package and through the "
            "eager model in the export process (every RNG reset first), each output path "
            "out[request]; each float tensor judged by PyTorch's benchmark comparator "
            "torch._dynamo.utils.same(eager, package, fp64_ref, tol): within "
            "allclose(rtol=atol=tol), "
            "else rmse(package, fp64) <= m * rmse(eager, fp64) + tol/10 (tol 1e-4 fp32, 1e-2 "
            "fp16/bf16), NaN/inf in the same places"
        ),
    )
    return data


class Gate:
    """Keeps from the package the requests that do not fit the exported program (`accepts`,
    export_findings.misfit): an AOTInductor package does not check its inputs unless
    AOTI_RUNTIME_CHECK_INPUTS is set, so such a request would be served garbage or crash the
    process. The check runs as the request is drawn, off the clock; each request kept out is an
    error naming it, and `merge` puts it back in its place in the replay's per-request lists."""

    def __init__(self, accepts: dict):
        self.accepts = accepts
        self.order: list[tuple[Any, str | None]] = []

    def stream(self, requests: Iterable[Any]) -> Iterator[Any]:
        for request in requests:
            why = export_findings.misfit(self.accepts, call_args_of(request))
            self.order.append((request, why))
            if why is None:
                yield request

    def merge(self, result: Any) -> dict:
        lists = {k: getattr(result, k, None) for k in ("latencies_s", "host_s", "device_s")}
        its = {k: iter(v) for k, v in lists.items() if v is not None}
        merged: dict[str, list] = {k: [] for k in its}
        errors = list(result.errors)
        for position, (request, why) in enumerate(self.order):
            if why is not None:
                for k in its:
                    merged[k].append(None)
                errors.append(_kept_out(request, position, why))
                continue
            try:
                row = {k: next(it) for k, it in its.items()}
            except StopIteration:  # the replay stopped before it (its deadline)
                break
            for k, v in row.items():
                merged[k].append(v)
        errors.sort(key=lambda e: (e.get("request") is None, e.get("request") or 0))
        return {**merged, "errors": errors}


def _kept_out(request: Any, position: int, why: str) -> dict:
    return {
        "request": request_index(request, position),
        "shapes": getattr(request, "shapes", None),
        "message": f"not sent to the package: {why} (the package does not check its inputs)",
        "reason": None,
    }
