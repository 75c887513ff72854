"""The shape rules a custom op's fake follows (TCD105, torch-free): what a library function's
output shape is, as a function of its array argument's, for any input, not only the one seen.

Method. A function is looked up by the dotted name its call resolves to through the imports
(`scipy.ndimage.gaussian_filter1d`, `numpy.tanh`). Two rules are known:
- "same": the output has the array argument's shape (element-wise functions, filters that keep
  the shape);
- "reduce": the output is the array argument's shape without `axis` (a constant int, or None for
  all axes), or with 1 there under `keepdims=True`.
A function not in the table has no shape rule: the fake would be guessed from the one call
observed (`scipy.signal.resample(x, 32, axis=1)` gives x's shape only when x has 32 columns), so
the patch is refused ("output shape unknown off the observed call").

Pitfalls: a positional `axis` is read only for the reductions whose second parameter is `axis`;
an `axis` that is not a literal int (a variable, a tuple) leaves the shape unknown; `out=` and
`output=` arguments (writing into the caller's array) are refused by the rule, not here.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

SAME = "same"
REDUCE = "reduce"

_SCIPY_SPECIAL_SAME = (
    "expit logit erf erfc erfinv erfcinv ndtr ndtri log_ndtr gammaln gamma digamma psi "
    "softplus i0 i0e i1 i1e xlogy entr sinc log_expit boxcox1p expm1 log1p"
).split()
_NUMPY_SAME = (
    "tanh exp exp2 expm1 log log2 log10 log1p sqrt cbrt square abs absolute fabs sign sin cos "
    "tan arcsin arccos arctan sinh cosh arcsinh arccosh arctanh floor ceil rint trunc negative "
    "reciprocal clip round around nan_to_num fliplr flipud ascontiguousarray copy deg2rad "
    "rad2deg sinc"
).split()
_NDIMAGE_SAME = (
    "gaussian_filter1d gaussian_filter uniform_filter1d uniform_filter median_filter "
    "maximum_filter1d maximum_filter minimum_filter1d minimum_filter convolve1d correlate1d "
    "convolve correlate gaussian_laplace gaussian_gradient_magnitude sobel prewitt laplace "
    "percentile_filter rank_filter generic_filter1d shift spline_filter1d"
).split()
_SIGNAL_SAME = "detrend medfilt savgol_filter wiener".split()
_STATS_SAME = "zscore".split()
_NUMPY_REDUCE = (
    "sum mean std var max min amax amin median prod ptp nansum nanmean nanstd nanvar nanmax "
    "nanmin nanmedian any all count_nonzero average"
).split()

RULES: dict[str, str] = {
    **{f"scipy.special.{f}": SAME for f in _SCIPY_SPECIAL_SAME},
    **{f"numpy.{f}": SAME for f in _NUMPY_SAME},
    **{f"scipy.ndimage.{f}": SAME for f in _NDIMAGE_SAME},
    **{f"scipy.signal.{f}": SAME for f in _SIGNAL_SAME},
    **{f"scipy.stats.{f}": SAME for f in _STATS_SAME},
    "scipy.special.softmax": SAME,
    "scipy.special.log_softmax": SAME,
    **{f"numpy.{f}": REDUCE for f in _NUMPY_REDUCE},
    "numpy.linalg.norm": REDUCE,
    "scipy.special.logsumexp": REDUCE,
}
# functions whose output's length depends on the data (no fixed shape rule can give it)
DATA_DEPENDENT = frozenset(
    {f"numpy.{f}" for f in "flatnonzero nonzero argwhere unique extract compress".split()}
    | {"scipy.signal.find_peaks", "scipy.signal.argrelmax", "scipy.signal.argrelmin"}
)
# reductions whose second positional parameter is `axis`
AXIS_SECOND = {f"numpy.{f}" for f in _NUMPY_REDUCE} | {"scipy.special.logsumexp"}


@dataclass(frozen=True)
class Shape:
    """A rule applied to one call: "same", or "reduce" over `axis` (None: every axis)."""

    kind: str
    axis: int | None = None
    keepdims: bool = False

    def of(self, shape: list[int]) -> list[int] | None:
        """The output shape for an input of `shape` (None: the axis is out of range)."""
        if self.kind == SAME:
            return list(shape)
        if self.axis is None:
            return [1] * len(shape) if self.keepdims else []
        n = len(shape)
        if not -n <= self.axis < n:
            return None
        a = self.axis % n
        return [*shape[:a], *([1] if self.keepdims else []), *shape[a + 1 :]]

    def code(self, x: str) -> str:
        """The output shape as code, from input `x`'s shape (`x.shape`, `x.shape[:-1]`, ...)."""
        if self.kind == SAME:
            return f"{x}.shape"
        if self.axis is None:
            return f"(1,) * {x}.dim()" if self.keepdims else "()"
        mid = " + (1,)" if self.keepdims else ""
        if self.axis == -1:
            return f"{x}.shape[:-1]{mid}"
        if self.axis >= 0:
            return f"{x}.shape[:{self.axis}]{mid} + {x}.shape[{self.axis + 1}:]"
        return f"{x}.shape[:{self.axis}]{mid} + {x}.shape[{self.axis + 1}:]"

    def describe(self, function: str) -> str:
        if self.kind == SAME:
            return f"{function}: same shape as its input"
        over = "every axis" if self.axis is None else f"axis {self.axis}"
        keep = ", keepdims" if self.keepdims else ""
        return f"{function}: reduces over {over}{keep}"


# functions returning a tuple of arrays: one rule per output, for a call with the array alone
# (eigh: the eigenvalues reduce the last axis, the eigenvectors keep the shape)
TUPLES: dict[str, tuple[Shape, ...]] = {
    f: (Shape(REDUCE, -1), Shape(SAME)) for f in ("scipy.linalg.eigh", "numpy.linalg.eigh")
}


def shapes_of(function: str, call: cst.Call) -> tuple[Shape, ...] | str:
    """The rule of each output of a function returning a tuple, or why there is none."""
    rules = TUPLES.get(function)
    if rules is None:
        return f"{function} has no rule tcdoctor knows for a tuple of outputs"
    if any(a.keyword is not None for a in call.args) or len(call.args) != 1:
        return f"{function} is called with more than its array: its outputs may differ"
    return rules


def _int(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value)
    if (
        isinstance(node, cst.UnaryOperation)
        and isinstance(node.operator, cst.Minus)
        and isinstance(node.expression, cst.Integer)
    ):
        return -int(node.expression.value)
    return None


def shape_of(function: str, call: cst.Call) -> Shape | str:
    """The shape rule of `function` applied to `call`, or why there is none."""
    kind = RULES.get(function)
    if kind is None:
        return f"{function} has no shape rule tcdoctor knows"
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    if "out" in keywords or "output" in keywords:
        return f"{function} writes into an `out`/`output` argument"
    if kind == SAME:
        return Shape(SAME)
    axis_node = keywords.get("axis")
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    if axis_node is None and function in AXIS_SECOND and len(positional) > 1:
        axis_node = positional[1]
    keep = keywords.get("keepdims")
    if keep is not None and not (isinstance(keep, cst.Name) and keep.value in ("True", "False")):
        return f"{function}'s keepdims is not a literal True or False"
    keepdims = isinstance(keep, cst.Name) and keep.value == "True"
    if axis_node is None or (isinstance(axis_node, cst.Name) and axis_node.value == "None"):
        return Shape(REDUCE, None, keepdims)
    axis = _int(axis_node)
    if axis is None:
        return f"{function}'s axis is not a literal int"
    return Shape(REDUCE, axis, keepdims)
