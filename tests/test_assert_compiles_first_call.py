"""`assert_compiles` counts the recompiles inside the first call, as PyTorch records them and as
`tcdoctor analyze` counts them (tests/test_first_call_recompiles.py): the NMS loop's `iou` helper
recompiles twice within one call as its candidates shrink. Eager backend, in this process."""

import importlib.util
import os

import pytest
import torch
from conftest import ROOT
from torch._dynamo import utils as du

from tcdoctor.testing import assert_compiles

TARGET = os.path.join(ROOT, "tests", "targets", "real", "nms_loop.py")


def _nms():
    spec = importlib.util.spec_from_file_location("nms_loop_for_assert", TARGET)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build()


def _by_hand() -> list[str]:
    """PyTorch's own record of the same call compiled by hand: the recompiled frames' names."""
    model, inputs = _nms()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="eager")
    n = len(du.get_compilation_metrics())
    with torch.no_grad():
        compiled(*inputs)
    names = [m.co_name for m in du.get_compilation_metrics()[n:] if m.recompile_reason]
    torch._dynamo.reset()
    return names


def test_recompiles_inside_the_first_call_fail_the_assertion_with_their_guard():
    by_hand = _by_hand()
    assert by_hand == ["iou", "iou"], by_hand
    model, inputs = _nms()
    with torch.no_grad(), pytest.raises(AssertionError) as raised:
        assert_compiles(model, *inputs, max_graph_breaks=99)
    text = str(raised.value)
    assert f"{len(by_hand)} recompiles (at most 0)" in text, text
    assert text.count("recompile of iou (nms_loop.py:19) on the first call") == len(by_hand), text
    assert "failing guard: " in text


def test_allowing_them_passes_and_the_record_has_pytorchs_count():
    model, inputs = _nms()
    with torch.no_grad():
        record = assert_compiles(model, *inputs, max_graph_breaks=99, max_recompiles=2)
    assert [r.function.split()[0] for r in record.recompiles] == _by_hand()
