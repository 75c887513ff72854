"""Pass/fail per output is PyTorch's benchmark-harness comparator, `torch._dynamo.utils.same(eager,
compiled, fp64_ref, tol)`, called on each tensor leaf; tcdoctor keeps its own figures per output.

The cases are outputs where that rule and tcdoctor's former rule (rmse(compiled, fp64) <= m *
rmse(eager, fp64) + tol/10, m = 2 for fp32 whatever the size) disagree: a large-magnitude output
within allclose of eager, and small outputs (fewer than 1000 elements) that get a 3x multiplier.
No compile: the leaves are built by hand.
"""

from __future__ import annotations

import torch
import torch._dynamo.utils

from tcdoctor.probes import numerics

TOL = 1e-4  # tcdoctor's fp32 tolerance, the harness's default


def _old_rule(info: dict) -> bool:
    """tcdoctor's rule before it called `same`: rmse with m = 2 for fp32, no allclose first."""
    return info.compiled_rmse_vs_fp64 <= 2.0 * info.eager_rmse_vs_fp64 + TOL / 10


def _sides(n: int, eager_noise: float, compiled_noise: float, scale: float = 1.0, seed: int = 0):
    """(fp64 reference, eager fp32, compiled fp32) of n elements, each side off fp64 by its noise."""
    g = torch.Generator().manual_seed(seed)
    fp64 = torch.randn(n, generator=g, dtype=torch.float64) * scale
    eager = (fp64 + eager_noise * torch.randn(n, generator=g, dtype=torch.float64)).float()
    compiled = (fp64 + compiled_noise * torch.randn(n, generator=g, dtype=torch.float64)).float()
    return fp64, eager, compiled


def test_large_magnitude_output_within_allclose_passes_where_the_rmse_rule_failed():
    # summed logits of magnitude ~1e4: compiled 0.05 off eager is a relative 5e-6, well within
    # allclose(rtol=1e-4), yet far more than twice eager's own fp32 rounding against fp64
    fp64 = torch.linspace(1e4, 2e4, 4096, dtype=torch.float64)
    eager = fp64.float()
    compiled = eager + 0.05
    info = numerics.compare_leaf("out", eager, compiled, fp64)
    assert info.within_allclose is True
    assert not _old_rule(info), info  # the case the two rules disagree on
    assert info.passed is True
    assert info.multiplier == 2.0 and info.rule.startswith("torch._dynamo.utils.same(")
    assert info.max_abs_err > 0.04 and info.max_rel_err is not None and info.cosine is not None


def test_small_output_is_judged_with_the_3x_multiplier():
    # 100 elements, outside allclose, compiled 2.5x eager's error against fp64: fails with 2x,
    # passes with the 3x the harness gives outputs of fewer than 1000 elements
    fp64, eager, compiled = _sides(100, 1e-3, 2.5e-3)
    info = numerics.compare_leaf("out", eager, compiled, fp64)
    ratio = info.compiled_rmse_vs_fp64 / info.eager_rmse_vs_fp64
    assert 2.1 < ratio < 2.9, ratio
    assert info.within_allclose is False and not _old_rule(info)
    assert info.multiplier == 3.0 and info.passed is True, info


def test_the_same_error_on_a_large_output_fails_with_2x():
    fp64, eager, compiled = _sides(4000, 1e-3, 2.5e-3)
    info = numerics.compare_leaf("out", eager, compiled, fp64)
    assert 2.1 < info.compiled_rmse_vs_fp64 / info.eager_rmse_vs_fp64 < 2.9
    assert info.within_allclose is False
    assert info.multiplier == 2.0 and info.passed is False, info


def test_verdicts_equal_same_called_directly():
    cases = [
        _sides(100, 1e-3, 2.5e-3),
        _sides(100, 1e-3, 4e-3, seed=1),
        _sides(4000, 1e-3, 2.5e-3, seed=2),
        _sides(4000, 1e-3, 1.5e-3, seed=3),
        _sides(2000, 0.0, 1e-6, scale=100.0, seed=4),
    ]
    verdicts = []
    for fp64, eager, compiled in cases:
        info = numerics.compare_leaf("out", eager, compiled, fp64)
        expected = torch._dynamo.utils.same(eager, compiled, fp64_ref=fp64, tol=TOL, equal_nan=True)
        assert info.passed is bool(expected), info
        verdicts.append(info.passed)
    assert True in verdicts and False in verdicts  # both outcomes exercised


def test_without_same_tcdoctors_copy_of_the_rule_decides_and_says_so(monkeypatch):
    cases = [_sides(100, 1e-3, 2.5e-3), _sides(4000, 1e-3, 2.5e-3, seed=2)]
    with_same = [numerics.compare_leaf("out", e, c, r).passed for r, e, c in cases]
    monkeypatch.delattr(torch._dynamo.utils, "same")
    rows = [numerics.compare_leaf("out", e, c, r) for r, e, c in cases]
    assert [row.passed for row in rows] == with_same == [True, False]
    assert all("tcdoctor's copy of the harness rule" in row.rule for row in rows)
    assert all("not in this torch" in row.rule for row in rows)


def test_no_fp64_reference_is_allclose_only():
    fp64, eager, compiled = _sides(100, 1e-3, 2.5e-3)
    info = numerics.compare_leaf("out", eager, compiled, None)
    assert info.passed is False and "no fp64 reference" in info.rule
    assert "multiplier" not in info.to_dict()
    info = numerics.compare_leaf("out", eager, eager + 1e-6, None)
    assert info.passed is True


def test_nan_in_different_places_fails():
    fp64, eager, compiled = _sides(100, 1e-3, 1e-3)
    eager[0], compiled[1] = float("nan"), float("nan")
    info = numerics.compare_leaf("out", eager, compiled, fp64)
    assert info.passed is False and "NaN/inf" in info.note


def test_method_names_the_harness_comparator():
    leaves = [("out", torch.ones(3))]
    data = numerics.compare(leaves, leaves, [("out", torch.ones(3, dtype=torch.float64))], None)
    assert data["passed"] is True
    assert "torch._dynamo.utils.same" in data["method"] and "1000 elements" in data["method"]
