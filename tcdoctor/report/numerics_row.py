"""`NumericsRow`: one output leaf compared, compiled vs eager (probes/numerics.py `compare_leaf`).

The numerics section holds one per output and per changed state tensor (`Numerics.outputs`),
the miscompile search one per failing output of the diverging call (`DivergingCall.outputs`),
and `Numerics.not_compared` one (path and kind only) per leaf no rule judged. A row holds the
keys its leaf gave (a tensor's errors, a string's `==`, a shape mismatch's note), so it is
`Keyed`: read from a saved report it writes back exactly those keys in their order.
"""

from __future__ import annotations

from dataclasses import dataclass

from .keyed import Keyed


@dataclass
class NumericsRow(Keyed):
    """One leaf: `max_abs_err` = max|compiled-eager|, `max_rel_err` that over max|eager|, the
    rmse of each side against the fp64 reference and the harness's `multiplier` where there is
    one; `passed` None when no rule judged the leaf (then `note` says why)."""

    path: str | None = None
    kind: str | None = None
    dtype: str | None = None
    shape: list[int] | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    cosine: float | None = None
    tol: float | None = None
    within_allclose: bool | None = None
    eager_rmse_vs_fp64: float | None = None
    compiled_rmse_vs_fp64: float | None = None
    multiplier: float | None = None
    rule: str | None = None
    passed: bool | None = None
    note: str | None = None
    eager_value: float | None = None  # a one-element float output (the miscompile search)
    compiled_value: float | None = None
