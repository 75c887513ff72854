"""The full logits of a generation, eager against compiled, step by step (issue 60).

Tokens equal (run/serving/generate_section.py) compares greedy tokens; two decoders can emit the
same tokens while their logits drift apart (a compiler bug that has not yet flipped an argmax), or
different tokens because two logits were within precision of each other (no bug). This module
keeps, per request and decode step, the last position's logits (the distribution the greedy token
was taken from) and compares them by the forward's numerics rule.

Method:
- Recording (`StepLogits`), in each side's process, never inside a timed interval:
  - `generate`: the raw logits generate itself keeps per step (`output_logits=True`, requested on
    both sides already for the top-two margins: a float32 copy per step inside generate), taken
    after the request's end time was read;
  - the user's own loop: each step's logits copied to the host after the token's time was read,
    with the clock paused (probes/generate_loop.py `LoopClock`: the copy's own time, device synced,
    is taken out of every later token time), so the next token's interval holds only the user's
    calls. A copy is needed: a decode may hand back a buffer it overwrites at the next step (a
    static output, a CUDA graph's).
  Kept on the host, up to CAP_BYTES per side (the rest of the steps "not recorded", counted); the
  eager side writes them with `torch.save` to its side file (SIDE_FILE; the events stay small),
  which the compiled side reads and compares with its own, held in memory.
- Comparing (`compare`), in the compiled side's process after its cold replay, against the eager
  side's file: per request served by both, the steps from 0 up to and including the first step
  whose greedy tokens differ (at that step both sides had seen the same tokens, so its logits are
  comparable; after it the contexts differ). Each step's logits vector is one leaf of the numerics
  rule, probes/numerics.py `compare_leaf` (the benchmark harness's `same`: allclose with rtol =
  atol = tol, NaN/inf in the same places), with tol by the model's dtype (`TOL`: 1e-4 float32,
  1e-2 float16/bfloat16): generate upcasts its logits to float32, so its tolerance comes from the
  model's parameters' dtype, never from the upcast. No float64 reference is run (a decoder is not
  run twice more), so the rule is allclose alone ("no fp64 reference" in its text).
- At a token divergence: whether that step's logits passed the rule. Passed: the two top
  candidates were within precision of each other ("precision, not a compiler bug"); failed: the
  compiled decoder computes something different there.

Pitfalls: a side that recorded fewer steps (its cap, a request that failed) is compared over the
steps both have; steps past a side's cap are counted, never guessed; a wrong-shaped step (vocab
sizes differ) fails the rule, as a forward output of another shape does.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from .numerics import TOL, compare_leaf

CAP_BYTES = 256 * 2**20  # per side: the logits kept on the host (the steps after: "not recorded")
SIDE_FILE = "generate_{side}.logits.pt"


def side_file(folder: str, side: str) -> str:
    return os.path.join(folder, SIDE_FILE.format(side=side))


def tol_dtype(model: Any, logits_dtype: torch.dtype | None) -> torch.dtype | None:
    """The dtype the numerics rule's tolerance is read for: the model's floating dtype when it has
    one (generate's logits are a float32 upcast), else the logits'."""
    dtype = getattr(model, "dtype", None)
    if isinstance(dtype, torch.dtype) and dtype in TOL:
        return dtype
    return logits_dtype


class StepLogits:
    """One side's logits, per request (its index) a list of 1-D host tensors, one per step."""

    def __init__(self, cap_bytes: int = CAP_BYTES) -> None:
        self.cap_bytes = cap_bytes
        self.kept_bytes = 0
        self.steps: dict[int, list[torch.Tensor]] = {}
        self.unrecorded = 0  # steps past the cap
        self.dtype: torch.dtype | None = None  # the tolerance's (None: the first step's)

    def add(self, request: int, logits: torch.Tensor) -> None:
        """Step logits of `request` (the last position's, any leading dims of size 1), copied to
        the host unless the cap is reached."""
        if self.dtype is None:
            self.dtype = logits.dtype
        size = logits.numel() * logits.element_size()
        if self.kept_bytes + size > self.cap_bytes:
            self.unrecorded += 1
            return
        self.kept_bytes += size
        self.steps.setdefault(request, []).append(logits.detach().reshape(-1).to("cpu", copy=True))

    def add_all(self, request: int, per_step: Any) -> None:
        for logits in per_step or ():
            self.add(request, logits)

    def drop(self, request: int) -> None:
        """A request that failed mid-generation: its steps are not compared."""
        self.steps.pop(request, None)

    def save(self, path: str, tokens: list) -> None:
        """The side file: the logits, the side's tokens and the tolerance's dtype."""
        dtype = self.dtype
        torch.save(
            {
                "logits": self.steps,
                "tokens": tokens,
                "dtype": str(dtype).replace("torch.", "") if dtype is not None else None,
                "unrecorded": self.unrecorded,
            },
            path,
        )


def load(path: str) -> dict | None:
    """A side file (None: not there: its process did not finish its replay)."""
    if not os.path.exists(path):
        return None
    return torch.load(path, weights_only=True)


def _first_divergence(a: list[int], b: list[int]) -> int | None:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)


def _dtype(name: str | None) -> torch.dtype | None:
    dtype = getattr(torch, name, None) if name else None
    return dtype if isinstance(dtype, torch.dtype) else None


def compare(eager: dict, compiled: dict) -> dict:
    """The logits compared (the module's method): JSON-ready (report/sections/generation.py
    `LogitsCompared`)."""
    dtype = _dtype(eager.get("dtype"))
    out: dict[str, Any] = {"requests": 0, "steps": 0, "failed_steps": 0, "divergences": []}
    out["unrecorded_steps"] = int(eager.get("unrecorded") or 0) + int(
        compiled.get("unrecorded") or 0
    )
    worst: tuple[float, int, int] | None = None
    e_tokens, c_tokens = eager["tokens"], compiled["tokens"]
    for r in range(min(len(e_tokens), len(c_tokens))):
        e_steps, c_steps = eager["logits"].get(r), compiled["logits"].get(r)
        if e_tokens[r] is None or c_tokens[r] is None or not e_steps or not c_steps:
            continue
        div = _first_divergence(e_tokens[r], c_tokens[r])
        last = min(len(e_steps), len(c_steps)) - 1
        last = last if div is None else min(div, last)
        out["requests"] += 1
        for step in range(last + 1):
            row = compare_leaf(
                f"request {r} step {step}", e_steps[step], c_steps[step], None, dtype
            )
            out["steps"] += 1
            out.setdefault("tol", row.tol)
            out.setdefault("rule", row.rule)
            diff = row.max_abs_err
            if diff is not None and (worst is None or diff > worst[0]):
                worst = (float(diff), r, step)
            if not row.passed:
                out["failed_steps"] += 1
                if out.get("first_fail_request") is None:
                    out["first_fail_request"], out["first_fail_step"] = r, step
            if step == div:
                out["divergences"].append(
                    {"request": r, "step": step, "within": bool(row.passed),
                     "max_abs_diff": diff}
                )  # fmt: skip
    if worst is not None:
        out["max_abs_diff"], out["max_request"], out["max_step"] = worst
    out["method"] = METHOD
    return out


METHOD = (
    "per request and decode step, the last position's logits (what the greedy token was taken "
    "from), recorded off the clock in each side's process (generate: its own output_logits, read "
    "after the request ended; your loop: copied to the host with the clock paused), compared from "
    "step 0 up to and including the first step whose tokens differ (after it the contexts "
    "differ) by the numerics rule (probes/numerics.py: allclose, rtol = atol = tol by the model's "
    "dtype, NaN/inf in the same places; no fp64 reference)"
)


def against_eager(folder: str, own: StepLogits, tokens: list) -> dict:
    """The compiled side's logits (`own`, its `tokens`) compared with the eager side's file in
    `folder`; {"why": ...} when eager's was not written."""
    eager = load(side_file(folder, "eager"))
    if eager is None:
        return {"why": "the eager side's logits were not recorded (its process did not finish)"}
    compiled = {"logits": own.steps, "tokens": tokens, "unrecorded": own.unrecorded}
    return compare(eager, compiled)
