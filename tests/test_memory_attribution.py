"""Memory attribution (issue 36 item 2): the compiled graph that holds the extra memory, named with
its bytes and the user line its frame starts at; the parts add up to at most the compiled peak; a
model without growth gets one line and nothing profiled."""

import importlib
import sys

import pytest
import torch
from conftest import ROOT

import tcdoctor
from tcdoctor.probes import memory_graphs
from tcdoctor.render.html import HtmlRenderer
from tcdoctor.render.markdown import MarkdownRenderer
from tcdoctor.render.terminal import TerminalRenderer

sys.path.insert(0, f"{ROOT}/tests/targets")
memory_growth = importlib.import_module("memory_growth")


@pytest.fixture(scope="module")
def grown():
    """One in-process analysis of the model whose first graph holds a 16 MiB buffer (aot_eager)."""
    return tcdoctor.analyze(
        memory_growth.build(), backend="aot_eager", budget_s=0.2, profile_budget_s=0.2
    )


def test_the_graph_holding_the_buffer_is_named_with_its_bytes(grown):
    m = grown.memory
    a = m.attribution
    assert a.grew is True and a.not_measured is None
    assert a.growth_bytes > memory_growth.BUFFER_BYTES * 0.9
    big = a.largest
    assert big["compile_id"] == "0/0" and big["function"] == "forward"
    assert big["file"].endswith("memory_growth.py")
    assert abs(big["bytes"] - memory_growth.BUFFER_BYTES) <= 0.1 * memory_growth.BUFFER_BYTES
    # the graph after the break does not hold it, though the buffer is live while it runs
    rest = [g for g in a.graphs if g["compile_id"] != "0/0"]
    assert rest and all(g["bytes"] < 0.01 * memory_growth.BUFFER_BYTES for g in rest)
    total = sum(g["bytes"] for g in a.graphs)
    assert total <= m.compiled_peak_bytes
    assert a.compile_working_set_bytes == m.compile_peak_bytes
    assert "add up to at most the compiled peak" in a.method


def test_every_renderer_names_the_graph(grown):
    term = TerminalRenderer().render(grown)
    assert "memory growth" in term and "largest: graph 0/0 (forward, memory_growth.py:" in term
    assert "Memory growth by compiled graph:" in term
    md = MarkdownRenderer().render(grown)
    assert "### Memory growth by compiled graph" in md and "steady-state growth per call" in md
    html = HtmlRenderer().render(grown)
    assert "Memory growth by compiled graph" in html and "memory_growth.py" in html
    again = type(grown).from_dict(grown.to_dict())  # the JSON keeps it
    assert again.memory.attribution.largest["compile_id"] == "0/0"


def test_no_growth_profiles_nothing_and_is_one_line(monkeypatch):
    def never(*_a, **_k):
        raise AssertionError("profiled a model without growth")

    monkeypatch.setattr(memory_graphs, "_profiled_events", never)
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU())
    rep = tcdoctor.analyze(
        model, (torch.randn(4, 32),), backend="eager", budget_s=0.1, profile_budget_s=0.1
    )
    a = rep.memory.attribution
    assert a.grew is False and a.graphs == []
    term = TerminalRenderer().render(rep)
    assert sum("memory growth" in line for line in term.splitlines()) == 1
    assert "Memory growth by compiled graph" not in term


def test_shares_are_clamped_to_the_compiled_peak():
    # two graphs, each holding 10 bytes at the peak; the memory phase saw a peak of 15
    events = [(1, 10, 0xA), (5, 10, 0xB), (9, -10, 0xA), (9, -10, 0xB)]
    regions = [("0/0", 0, 10), ("1/0", 4, 8)]
    out = memory_graphs.attribute(events, regions, 15)
    assert [g["compile_id"] for g in out["graphs"]] == ["0/0", "1/0"]
    assert sum(g["bytes"] for g in out["graphs"]) <= 15 and out["scale"] == pytest.approx(0.75)
    assert "scaled by 0.750" in out["method"]
