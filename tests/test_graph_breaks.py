"""Graph-break counts pinned against what PyTorch itself records (explain, counters), eager-cheap."""

import importlib

import pytest
import torch

from tcdoctor.probes import graph_breaks
from tcdoctor.probes.dynamo_state import fresh
from tcdoctor.target.workload import coerce


def probe_sample(name):
    w = coerce(importlib.import_module(name).build())
    with torch.no_grad():
        return graph_breaks.probe(w.model, w.inputs), w


def explain_of(w):
    fresh()
    with torch.no_grad():
        out = torch._dynamo.explain(w.model)(*w.inputs)
    fresh()
    return out


def explain_with_counters(w):
    from torch._dynamo.utils import counters

    fresh()
    with torch.no_grad():
        out = torch._dynamo.explain(w.model)(*w.inputs)
    gb = sum(counters["graph_break"].values())
    unimpl = dict(counters["unimplemented"])
    fresh()
    return out, gb, unimpl


@pytest.mark.parametrize("name,expected", [("mlp", 0), ("prints", 2), ("item_branch", 1)])
def test_call_site_breaks_equal_dynamo_counters(name, expected):
    data, w = probe_sample(name)
    ex, gb, unimpl = explain_with_counters(w)
    assert data["graph_breaks"]["count"] == gb == expected
    assert not unimpl
    assert data["graphs"]["count"] == ex.graph_count
    # explain counts graph boundaries: never more than the breaks taken
    assert 0 <= ex.graph_break_count <= data["graph_breaks"]["count"]
    assert data["graph_breaks"]["explain_graph_break_count"] == ex.graph_break_count


def test_prints_sample_two_adjacent_breaks_explain_counts_one():
    data, w = probe_sample("prints")
    ex, gb, _ = explain_with_counters(w)
    assert ex.graph_break_count == 1 and gb == 2 and data["graph_breaks"]["count"] == 2
    reasons = {f["reason"] for f in data["graph_breaks"]["unique"]}
    assert reasons == {
        "Unsupported Tensor.item() call with capture_scalar_outputs=False",
        "Failed to trace builtin operator",
    }


def test_clean_mlp_has_one_graph_no_breaks_and_counts_nodes():
    data, w = probe_sample("mlp")
    assert data["graphs"]["count"] == 1 and data["graph_breaks"]["count"] == 0
    g = data["graphs"]["per_graph"][0]
    ex = explain_of(w)
    assert g["nodes"] == len(list(ex.graphs[0].graph.nodes))
    assert (
        g["ops"] >= 5
    )  # 3 linear + 2 gelu; explain's ops_per_graph misses call_module/method nodes


def test_data_dependent_branch_gets_full_reason_explain_loses():
    data, w = probe_sample("data_dependent")
    ex, gb, unimpl = explain_with_counters(w)
    assert ex.break_reasons[0].reason.startswith("generic_jump")  # what explain says
    assert data["graph_breaks"]["count"] == ex.graph_break_count == 1 and gb == 0
    assert [k.splitlines()[0] for k in unimpl] == ["Data-dependent branching"]
    (f,) = data["graph_breaks"]["unique"]
    assert f["reason"] == "Data-dependent branching"
    assert f["gb_id"] in graph_breaks.registry()
    assert f["file"].endswith("data_dependent.py") and f["code"] == "if h.sum() > 0:"
    assert f["function"] == "forward" and f["hints"]


def test_loop_break_skipped_frame_is_counted_where_explain_is_silent():
    data, w = probe_sample("loop_break")
    ex, gb, unimpl = explain_with_counters(w)
    assert gb == 0 and any("graph break in loop" in k for k in unimpl)
    assert ex.graph_count == 0 and ex.graph_break_count == -1 and not ex.break_reasons
    gb = data["graph_breaks"]
    assert gb["count"] == 1 and gb["skipped_frames"] == 1
    (f,) = gb["unique"]
    assert f["frame_skipped"] and f["in_loop"]
    assert f["code"] == 'print("layer", i)' and f["gb_id"] == "GB0059"


def helper(x):
    print("in helper")
    return x + 1


class Twice(torch.nn.Module):
    def forward(self, x):
        x = helper(x)
        x = x * 2
        return helper(x)


def test_identical_breaks_are_grouped_with_occurrences_and_match_counters():
    w = coerce((Twice(), (torch.randn(3),)))
    fresh()
    with torch.no_grad():
        data = graph_breaks.probe(w.model, w.inputs)
    ex, gb, _ = explain_with_counters(w)
    assert data["graph_breaks"]["count"] == gb == 3
    assert ex.graph_break_count == 1  # explain: one boundary between its two graphs
    (f,) = data["graph_breaks"]["unique"]
    assert f["occurrences"] == 3 and f["function"] == "helper"
    assert f["code"] == 'print("in helper")'


def test_parse_record_handles_suppressed_duplicate_header():
    msg = (
        "Graph break (user stack suppressed due to duplicate graph break) in user code at /a/b.py:7\n"
        "Graph Break Reason: Failed to trace builtin operator\n  Explanation: nope\n  Hint: do X\n\n"
        " For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html"
    )
    rec = graph_breaks.parse_record(msg)
    assert rec["suppressed_stack"] and rec["header_file"] == "/a/b.py" and rec["header_line"] == 7
    assert (
        rec["gb_type"] == "Failed to trace builtin operator"
        and rec["hints"] == ["do X"]
        and rec["gb_id"] == "GB0059"
    )


def test_unimplemented_without_log_record_is_listed_not_counted():
    findings = graph_breaks.findings_from_messages([])
    out = graph_breaks.unlogged_unimplemented({"step_unsupported\n  Explanation: x": 2}, findings)
    assert out == [
        {
            "reason": "step_unsupported",
            "occurrences": 2,
            "detail": "step_unsupported\n  Explanation: x",
        }
    ]
    data, _ = probe_sample("loop_break")  # its unimplemented entries all match the logged skip
    assert data["graph_breaks"]["unlogged_fallbacks"] == []


class _ShapesPerCall(torch.nn.Module):
    """One call feeds a helper frame three shapes: how many graphs that makes depends on the
    compile's own `dynamic` argument, which torch._dynamo.explain does not take."""

    def forward(self, x):
        return _helper(x[:2]), _helper(x[:3]), _helper(x[:4])


def _helper(t):
    t = t * 2
    print("", end="")  # a break: the helper's frame is compiled on its own, per shape or not
    return t.cos().sum()


def _by_hand_counts(model, x, **compile_kwargs):
    """PyTorch's own counters after one call of the same compile, written by hand."""
    from torch._dynamo.utils import counters

    fresh()
    with torch.no_grad():
        torch.compile(model, backend="eager", **compile_kwargs)(x)
    out = counters["stats"]["unique_graphs"], sum(counters["graph_break"].values())
    fresh()
    return out


@pytest.mark.parametrize("dynamic", [False, True])
def test_counts_are_the_users_compile_not_explains(dynamic):
    """graphs and breaks come from the compile the user runs (its `dynamic` argument included),
    read after its first call; explain's run, which compiles its own way, is kept beside them.
    Before: the counts were explain's (7 graphs, 5 breaks either way) while the user's compile
    makes 9 graphs / 6 breaks with dynamic=False (the helper recompiles per shape), 5 / 4 with
    dynamic=True (here, torch 2.13)."""
    import tcdoctor

    x = torch.randn(8, 4)
    expected = _by_hand_counts(_ShapesPerCall(), x, dynamic=dynamic)
    ex, _, _ = explain_with_counters(coerce((_ShapesPerCall(), (x,))))
    assert expected[0] != len(ex.graphs)  # the case is one where explain differs from the compile
    rep = tcdoctor.analyze(
        _ShapesPerCall(),
        (x,),
        compile_kwargs={"dynamic": dynamic},
        backend="eager",
        threads=1,
        budget_s=0.1,
        profile_budget_s=0.3,
    )
    assert (rep.graphs.count, rep.graph_breaks.count) == expected
    assert sum(f.occurrences for f in rep.graph_breaks.unique) == rep.graph_breaks.count
    assert rep.graphs.explain_run_count == len(ex.graphs) and "compile you run" in rep.graphs.source
    assert "compile you run" in rep.graph_breaks.source
