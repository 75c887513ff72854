"""What `torch.export` is asked to do for a traffic, and why it refused, in the report's terms.

Two things live here, both torch-export specific and free of timing:

1. The dynamic shapes the traffic asks for (`shape_plan`). Each tensor of a request is found by
   its pytree path in the call's arguments; a dimension whose size differs across the requests is
   dynamic, and gets one `torch.export.Dim` whose range is the traffic's own (min and max of the
   sizes seen). Dimensions that vary together in every request (the sequence length of
   `input_ids` and of `attention_mask`) share one Dim: export refuses two Dims it finds equal
   ("The values of b2 ... and b ... must always be equal"). A non-tensor argument that differs
   across requests is named: export bakes its example value into the program.

   The 0/1 specialisation, as PyTorch 2.13 has it (measured on this machine with a small MLP and
   torch 2.13.0+cpu): a Dim's *range* may start at 0 or 1 (`Dim("batch", min=1, max=64)` exports,
   `range_constraints` is `VR[1, 64]`, and the program runs at batch 1); what specialises is the
   *example* input: exporting with an example whose dynamic dim is 1 fails ("You marked batch as
   dynamic but your code specialized it to be a constant (1)"). So the Dim's min is the traffic's
   min, whatever it is, and the example exported with is the first request whose dynamic dims are
   all at least 2 (`example_index`). Export does not duck-size: two Dims with equal example
   values stay two symbols.

2. The findings (`from_draft_report`, `from_error`): `torch.export.draft_export`'s failure
   reports (its `_report.failures`, private in 2.13: data-dependent errors, guards added on a
   dim, missing or mismatched fake kernels) turned into `{file, line, code, kind, why, fix}`:
   the file and line are the deepest frame of the failure's user stack in the user's own files
   (`target/userframes.py` decides ownership, as everywhere in tcdoctor), `why` is PyTorch's
   words shortened to their first sentence, and `fix` names what fits: `torch.cond` for a
   branch on tensor data, `torch._check(...)` (PyTorch's own suggestion) for any other
   data-dependent assumption, and for a guard on a dynamic dim the Dim's range, with the fix
   PyTorch's export error suggests ("Suggested fixes: batch = Dim('batch', max=4)").

Pitfalls: draft_export's report is a private structure (`FailureReport.data` with `user_stack`
frames whose `filename` is an id into `str_to_filename`); a failure it does not describe, or a
draft_export that raises itself, falls back to the export error's own traceback (`from_error`).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any, Sequence

import torch
import torch.utils._pytree as pytree

from ..target.userframes import deepest_user_frame
from ..target.workload import CallArgs

MAX_NAMED = 8  # varying non-tensor arguments / odd requests named at most


@dataclasses.dataclass
class DimSpec:
    """One dynamic dimension of the traffic: the tensors and dims it covers, and its range."""

    name: str
    min: int
    max: int
    where: list[tuple[str, int]]  # (tensor path, dim) pairs this Dim stands for

    def describe(self) -> str:
        dims = ", ".join(f"{p}.shape[{d}]" for p, d in self.where)
        return f"{self.name} = {dims} in {self.min}..{self.max}"


@dataclasses.dataclass
class ShapePlan:
    """What the traffic asks export for: its Dims, the example request, what it cannot follow."""

    dims: list[DimSpec]
    example_index: int | None  # the request exported with (dynamic dims all >= 2), or None
    varying_values: list[str]  # non-tensor arguments that differ across requests
    odd_requests: list[int]  # requests whose structure or ranks differ from most requests'
    why_no_example: str | None = None
    accepts: dict = dataclasses.field(default_factory=dict)  # what the program takes: `misfit`

    def describe(self) -> str:
        if not self.dims:
            return "no dimension varies across the traffic: exported with static shapes"
        return "; ".join(d.describe() for d in self.dims)


def _leaves(req: CallArgs) -> tuple[list[tuple[str, Any]], Any]:
    pairs, spec = pytree.tree_flatten_with_path((tuple(req.args), dict(req.kwargs)))
    return [(_path(keys), leaf) for keys, leaf in pairs], spec


def _path(keys: tuple) -> str:
    """'args[0]', "kwargs['mask']" from a pytree key path over (args, kwargs)."""
    head, rest = keys[0], keys[1:]
    root = "args" if getattr(head, "idx", None) == 0 else "kwargs"
    return root + pytree.keystr(rest)


def _signature(leaves: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """What must agree between requests for one exported program: paths, tensor ranks and dtypes."""
    return [
        (p, ("tensor", v.dim(), v.dtype) if isinstance(v, torch.Tensor) else ("value",))
        for p, v in leaves
    ]


def shape_plan(requests: Sequence[CallArgs]) -> ShapePlan:
    """The Dims the traffic needs (one per group of dims that vary together), the example request,
    the non-tensor arguments that vary, and the requests whose structure (argument tree, tensor
    ranks and dtypes) differs from most requests' (left out of the plan: a planted bad request;
    the replay reports it as it serves it)."""
    if not requests:
        return ShapePlan([], None, [], [], "the traffic has no requests")
    flat = [_leaves(req) for req in requests]
    keys = [f"{spec}|{_signature(leaves)}" for leaves, spec in flat]
    common = max(dict.fromkeys(keys), key=keys.count)  # the most frequent, the first on a tie
    rows = [leaves for (leaves, _), key in zip(flat, keys) if key == common]
    odd = [i for i, key in enumerate(keys) if key != common]
    first = rows[0]
    sizes: dict[tuple[str, int], tuple[int, ...]] = {}
    varying_values = []
    for k, (path, v0) in enumerate(first):
        if isinstance(v0, torch.Tensor):
            for d in range(v0.dim()):
                seen = tuple(int(r[k][1].shape[d]) for r in rows)
                if len(set(seen)) > 1:
                    sizes[(path, d)] = seen
        elif len({repr(r[k][1]) for r in rows}) > 1:
            varying_values.append(path)
    groups: dict[tuple[int, ...], list[tuple[str, int]]] = {}
    for where, seen in sizes.items():
        groups.setdefault(seen, []).append(where)
    dims = [
        DimSpec(_dim_name(where[0]), min(seen), max(seen), where) for seen, where in groups.items()
    ]
    example, why = _example(rows, requests, odd, sizes)
    accepts = _accepts(str(flat[keys.index(common)][1]), first, sizes)
    return ShapePlan(dims, example, varying_values[:MAX_NAMED], odd, why, accepts)


def _accepts(tree: str, first: list[tuple[str, Any]], sizes: dict) -> dict:
    """What the exported program takes, JSON-ready: the argument tree, each tensor's rank, dtype
    and sizes (an int where static, [min, max] where a Dim), each other value's repr."""
    leaves: dict[str, dict] = {}
    for path, v in first:
        if not isinstance(v, torch.Tensor):
            leaves[path] = {"value": repr(v)}
            continue
        dims: list = []
        for d in range(v.dim()):
            seen = sizes.get((path, d))
            dims.append([min(seen), max(seen)] if seen else int(v.shape[d]))
        leaves[path] = {"dtype": str(v.dtype).replace("torch.", ""), "dims": dims}
    return {"tree": tree, "leaves": leaves}


def misfit(accepts: dict, request: CallArgs) -> str | None:
    """Why a request does not fit the exported program (its tree, a tensor's rank, dtype or a
    size outside the program's), or None. An AOTInductor package does not check its inputs
    unless AOTI_RUNTIME_CHECK_INPUTS is set: such a request would read past its tensors."""
    if not accepts:
        return None
    pairs, spec = _leaves(request)
    if str(spec) != accepts["tree"]:
        return "its arguments are not laid out as the exported example's"
    for path, v in pairs:
        want = accepts["leaves"].get(path, {})
        if "value" in want:
            if repr(v) != want["value"]:
                return (
                    f"{path} is {repr(v)[:40]}, the program was exported with {want['value'][:40]}"
                )
            continue
        if not isinstance(v, torch.Tensor):
            return f"{path} is a {type(v).__name__}, the program takes a tensor"
        if v.dim() != len(want["dims"]):
            return f"{path} has rank {v.dim()}, the program takes rank {len(want['dims'])}"
        if str(v.dtype).replace("torch.", "") != want["dtype"]:
            return f"{path} is {v.dtype}, the program takes {want['dtype']}"
        for d, (size, w) in enumerate(zip(v.shape, want["dims"])):
            low, high = (w, w) if isinstance(w, int) else w
            if not low <= size <= high:
                span = str(low) if low == high else f"{low}..{high}"
                return f"{path}.shape[{d}] is {size}, the program takes {span}"
    return None


def _dim_name(where: tuple[str, int]) -> str:
    """A Python identifier for the Dim, from its first tensor ("args_0_dim0"; PyTorch prints it
    in its suggested fixes)."""
    path, d = where
    base = re.sub(r"\W+", "_", path).strip("_") or "x"
    return f"{base}_dim{d}"


def _example(
    rows: list[list[tuple[str, Any]]],
    requests: Sequence[CallArgs],
    odd: list[int],
    sizes: dict[tuple[str, int], tuple[int, ...]],
) -> tuple[int | None, str | None]:
    """The first regular request whose dynamic dims are all >= 2 (a 0 or 1 specialises)."""
    regular = [i for i in range(len(requests)) if i not in set(odd)]
    for j, i in enumerate(regular):
        if all(seen[j] >= 2 for seen in sizes.values()):
            return i, None
    return None, (
        "no request has every varying dimension at 2 or more; torch.export specialises a "
        "dimension whose example size is 0 or 1"
    )


def dynamic_shapes(model: Any, example: CallArgs, plan: ShapePlan) -> dict | tuple:
    """export's `dynamic_shapes` for `example`: keyed by the forward's argument names (what export
    matches kwargs by), each tensor `{dim: Dim}` for its dynamic dims, None where static."""
    by_leaf: dict[str, dict[int, Any]] = {}
    for spec in plan.dims:
        dim = torch.export.Dim(spec.name, min=spec.min, max=spec.max)
        for path, d in spec.where:
            by_leaf.setdefault(path, {})[d] = dim

    def mark(keys: tuple, leaf: Any) -> Any:
        return by_leaf.get(_path(keys)) if isinstance(leaf, torch.Tensor) else None

    args_spec, kwargs_spec = pytree.tree_map_with_path(
        mark, (tuple(example.args), dict(example.kwargs))
    )
    if not example.kwargs:
        return tuple(args_spec)
    forward = getattr(model, "forward", model)
    bound = inspect.signature(forward).bind(*args_spec, **kwargs_spec)
    return dict(bound.arguments)


# --- findings ---------------------------------------------------------------------------------

_FIX_BRANCH = (
    "write the branch as torch.cond(pred, true_fn, false_fn, operands) so that both sides are "
    "exported, or move the decision out of the model"
)
_FIX_CHECK = (
    "assert the assumption with torch._check(...) (PyTorch's suggestion), or torch._check_is_size "
    "for a size read from a tensor"
)


def _first_sentence(text: str) -> str:
    """PyTorch's words shortened: the first non-empty line, cut at 300 characters."""
    line = next((ln.strip() for ln in str(text).splitlines() if ln.strip()), "")
    return line[:300]


def suggested_fixes(message: str) -> list[str]:
    """The lines under "Suggested fixes:" in an export error (`batch = Dim('batch', max=4)`)."""
    lines = str(message).splitlines()
    out: list[str] = []
    for i, ln in enumerate(lines):
        if ln.strip() == "Suggested fixes:":
            for nxt in lines[i + 1 :]:
                if not nxt.strip():
                    break
                out.append(nxt.strip())
    return out[:MAX_NAMED]


def _violations(message: str) -> list[str]:
    """The '  - ' bullet lines of a constraint violation (the guards export found)."""
    return [ln.strip()[2:] for ln in str(message).splitlines() if ln.strip().startswith("- ")]


def _user_frame(stack: list[dict], names: dict[int, str]) -> dict | None:
    frames = [
        (names.get(f.get("filename"), ""), int(f.get("line") or 0), f.get("name", ""))
        for f in stack
    ]
    found = deepest_user_frame(frames)
    if found is not None and not found.get("code"):
        last = next(
            (f for f in reversed(stack) if names.get(f.get("filename")) == found["file"]), {}
        )
        found["code"] = str(last.get("loc") or "").strip()
    return found


def _is_branch(code: str) -> bool:
    """A line that branches on a value: `if`, `elif`, `while`, `assert`, a ternary."""
    text = code.strip()
    return bool(re.match(r"(if|elif|while|assert)\b", text) or re.search(r"\bif\b.*\belse\b", text))


def _finding(frame: dict | None, kind: str, why: str, fix: str) -> dict:
    return {
        "file": frame["file"] if frame else None,
        "line": frame["line"] if frame else None,
        "code": frame.get("code") if frame else None,
        "kind": kind,
        "why": why,
        "fix": fix,
    }


def _pytorch_words(failure: Any, names: dict[int, str]) -> str:
    """The failure's own text (`FailureReport.print`), its first two lines: the kind and the
    sentence that says what happened ("Data dependent error. When exporting, we were unable to
    evaluate the value of `Eq(u0, 1)`.")."""
    try:
        text = failure.print(names)
    except Exception:  # noqa: BLE001 - a private printer; the kind alone is said then
        return ""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return " ".join(lines[:2])[:300]


def _one(failure: Any, names: dict[int, str], message: str, plan: ShapePlan | None) -> dict:
    kind = str(getattr(failure, "failure_type", "unknown"))
    data = getattr(failure, "data", {}) or {}
    frame = _user_frame(list(data.get("user_stack") or []), names)
    if kind == "GUARD_ADDED":
        return _guard_finding(frame, data, message, plan)
    why = _pytorch_words(failure, names) or _first_sentence(message) or kind
    if kind == "DATA_DEPENDENT_ERROR":
        code = (frame or {}).get("code") or ""
        return _finding(frame, kind, why, _FIX_BRANCH if _is_branch(code) else _FIX_CHECK)
    if kind in ("MISSING_FAKE_KERNEL", "MISMATCHED_FAKE_KERNEL"):
        fix = (
            f"register a fake (meta) kernel for torch.ops.{data.get('op')} with "
            "torch.library.register_fake"
        )
        return _finding(frame, kind, why, fix)
    return _finding(frame, kind, why, "see PyTorch's export error")


def _guard_finding(frame: dict | None, data: dict, message: str, plan: ShapePlan | None) -> dict:
    """A guard the code puts on a dynamic dim: the traffic's range does not satisfy it."""
    sources = data.get("symbol_to_sources") or {}
    expr = str(data.get("expr"))
    for sym, src in sources.items():
        expr = re.sub(rf"\b{re.escape(sym)}\b", str(src), expr)
    bullets = [b for b in _violations(message) if "satisfy the generated guard" in b]
    why = bullets[0] if bullets else f"Guard Added: this guard was added during tracing: {expr}"
    ranges = "; ".join(d.describe() for d in plan.dims) if plan else ""
    fix = (
        f"your code adds the guard {expr} on a dimension the traffic varies"
        + (f" ({ranges})" if ranges else "")
        + ": narrow that Dim's range to what the code supports, or remove the shape condition"
    )
    pytorch = suggested_fixes(message)
    if pytorch:
        fix += f"; PyTorch suggests: {', '.join(pytorch)}"
    return _finding(frame, "GUARD_ADDED", why, fix)


def from_draft_report(report: Any, message: str, plan: ShapePlan | None) -> list[dict]:
    """One finding per failure of draft_export's report (`ep._report`); `message` is the export
    error's text (its constraint violations and "Suggested fixes")."""
    names = dict(getattr(report, "str_to_filename", {}) or {})
    return [
        _one(f, names, message, plan)
        for f in getattr(report, "failures", [])
        if not getattr(f, "xfail", False)
    ]


def from_error(exc: BaseException, plan: ShapePlan | None) -> dict:
    """A finding from the export error alone (draft_export raised too, or found nothing): the
    deepest user frame of its traceback, its first line, and PyTorch's suggested fixes."""
    import traceback

    tb = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    frame = deepest_user_frame((f.filename, f.lineno or 0, f.name) for f in tb)
    message = str(exc)
    why = f"{type(exc).__name__}: {_first_sentence(message)}"
    bullets = _violations(message)
    if bullets:
        why += f" ({bullets[0][:300]})"
    pytorch = suggested_fixes(message)
    if pytorch:
        fix = f"PyTorch suggests: {', '.join(pytorch)}"
    elif frame is not None and _is_branch(frame.get("code") or ""):
        fix = _FIX_BRANCH
    else:
        fix = "see the error above; torch.export.draft_export names every failure it finds"
    return _finding(frame, type(exc).__name__, why, fix)
