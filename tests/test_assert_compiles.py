"""`tcdoctor.testing.assert_compiles`: in-process, PyTorch's own records, Dynamo's state put back.

Eager backend only (no Inductor): each call compiles in well under a second on these models.
"""

from __future__ import annotations

import inspect
import logging
import time

import pytest
import torch
import torch._dynamo
from torch._dynamo import utils as dutils

from tcdoctor.testing import assert_compiles


class Clean(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x).relu()


class Prints(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        print("tcdoctor test: y is", y.shape)
        return y.relu()


class NoParams(torch.nn.Module):
    """Works in any float dtype, so a dtype variant recompiles and runs."""

    def forward(self, x, scale=1.0):
        return torch.sin(x) * scale + 1


class Drops(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(x) + 1


def _line_of(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, ln in enumerate(lines) if text in ln)


def _dynamo_state() -> tuple:
    """Counters (contents and the Counter objects), the metrics buffer's entries and limit, and
    torch's logging settings."""
    from torch._logging import _internal

    return (
        {k: dict(c) for k, c in dutils.counters.items()},
        {k: id(c) for k, c in dutils.counters.items()},
        [id(m) for m in dutils.get_compilation_metrics()],
        dutils._compilation_metrics.maxlen,
        dict(_internal.log_state.log_qname_to_level),
        set(_internal.log_state.artifact_names),
    )


def test_a_print_in_forward_fails_with_its_file_line_reason_and_hint():
    with pytest.raises(AssertionError) as info:
        assert_compiles(Prints(), torch.randn(4, 8))
    msg = str(info.value)
    line = _line_of(Prints.forward, "print(")
    assert f"test_assert_compiles.py:{line}" in msg, msg
    assert "1 graph break (at most 0)" in msg
    assert "reason: " in msg and "print" in msg and "hint: " in msg
    assert "recompile" not in msg


def test_a_clean_model_passes_and_a_tolerated_break_passes():
    record = assert_compiles(Clean(), torch.randn(4, 8))
    assert record.graph_breaks == [] and record.recompiles == []
    record = assert_compiles(Prints(), torch.randn(4, 8), max_graph_breaks=1)
    (brk,) = record.graph_breaks
    assert brk["line"] == _line_of(Prints.forward, "print(") and brk["origin"] == "user"


def test_a_dtype_variant_fails_on_its_recompile_with_the_guard():
    x = torch.randn(4, 8)
    with pytest.raises(AssertionError) as info:
        assert_compiles(NoParams(), x, variants=[(x.double(),)])
    msg = str(info.value)
    assert "1 recompile (at most 0)" in msg and "graph break" not in msg
    assert "variant 1: (Tensor[4,8] float64)" in msg
    assert "failing guard: tensor 'x' dtype mismatch" in msg, msg
    record = assert_compiles(NoParams(), x, variants=[(x.double(),)], max_recompiles=1)
    assert len(record.recompiles) == 1


def test_kwargs_dict_variants_and_state_changes_recompile_as_pytorch_says():
    x = torch.randn(4, 8)
    with pytest.raises(AssertionError) as info:
        assert_compiles(NoParams(), x, kwargs={"scale": 1.0}, variants=[{"scale": 2.0}])
    assert "scale" in str(info.value) and "1 recompile" in str(info.value)
    with pytest.raises(AssertionError) as info:
        assert_compiles(Drops().eval(), x, variants=[lambda m: m.train()])
    assert "training" in str(info.value), str(info.value)


def test_a_break_seen_again_on_a_recompile_is_one_break():
    # the dtype variant recompiles forward and the function Dynamo resumes after the break
    x = torch.randn(4, 8)
    record = assert_compiles(
        PrintsDtype(), x, variants=[(x.double(),)], max_graph_breaks=1, max_recompiles=2
    )
    (brk,) = record.graph_breaks
    assert brk["occurrences"] == 2
    assert [r.reason for r in record.recompiles] == [
        "tensor 'x' dtype mismatch: expected Float, actual Double",
        "tensor 'y' dtype mismatch: expected Float, actual Double",
    ]


class PrintsDtype(torch.nn.Module):
    def forward(self, x):
        y = torch.cos(x)
        print("tcdoctor test:", y.dtype)
        return y + 1


def test_a_variant_that_raises_fails():
    with pytest.raises(AssertionError) as info:
        assert_compiles(Clean(), torch.randn(4, 8), variants=[(torch.randn(4, 3),)])
    assert "variant 1: (Tensor[4,3] float32) raised " in str(info.value)
    assert "1 variant raised" in str(info.value).splitlines()[0]


def test_dynamo_state_is_left_as_found():
    # state of the caller's own: a compiled function (counters, metrics) and a logging setting
    torch._logging.set_logs(recompiles=True)
    try:
        f = torch.compile(lambda t: torch.sin(t) + 1, backend="eager")
        f(torch.randn(3))
        dutils.counters["caller"]["mine"] += 7
        before = _dynamo_state()
        assert before[0]["caller"] == {"mine": 7} and before[2]  # not empty: a real check
        assert_compiles(Clean(), torch.randn(4, 8))
        with pytest.raises(AssertionError):
            assert_compiles(Prints(), torch.randn(4, 8), variants=[(torch.randn(4, 8),)])
        with pytest.raises(AssertionError):
            assert_compiles(NoParams(), torch.randn(2), variants=[(torch.randn(2).double(),)])
        assert _dynamo_state() == before
    finally:
        torch._logging.set_logs()


def test_an_error_in_the_first_call_propagates_and_state_is_kept():
    before = _dynamo_state()
    with pytest.raises(RuntimeError):
        assert_compiles(Clean(), torch.randn(4, 3))
    assert _dynamo_state() == before


@pytest.mark.timing
def test_it_takes_about_a_second_on_a_small_model():
    assert_compiles(Clean(), torch.randn(4, 8))  # warm: Dynamo's first use in a process costs more
    t0 = time.perf_counter()
    assert_compiles(Clean(), torch.randn(4, 8), variants=[(torch.randn(4, 8),)])
    with pytest.raises(AssertionError):
        assert_compiles(Prints(), torch.randn(4, 8))
    per_call = (time.perf_counter() - t0) / 2
    logging.getLogger(__name__).info("assert_compiles: %.2f s per call", per_call)
    assert per_call < 5.0, per_call
