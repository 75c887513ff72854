"""benchmarks/call_path.py, the method behind issue 61's call-path figures: on planted modules, the
calls that pass an object on are the ones recorded, and a call back into a package the object had
left is counted as a return, once per call site, at the package depth asked."""

from __future__ import annotations

import os
import sys
import types

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import call_path  # noqa: E402

# pkg.a.m1:start -> pkg.b.m2:middle -> pkg.a.m3:back -> pkg.a.m3:leaf; `start` also calls `other`
# with another object (not passed on) and `middle` calls `noarg` without it
SOURCES = {
    "pkg.a.m3": "def leaf(ctx):\n    return ctx\n\ndef back(ctx):\n    return leaf(ctx)\n",
    "pkg.b.m2": (
        "import pkg.a.m3 as m3\n\ndef noarg():\n    return 1\n\n"
        "def middle(ctx):\n    noarg()\n    return m3.back(ctx)\n"
    ),
    "pkg.a.m1": (
        "import pkg.b.m2 as m2\n\ndef other(x):\n    return x\n\n"
        "def start(ctx):\n    other(object())\n    return m2.middle(ctx)\n"
    ),
}


class Ctx:
    pass


def _planted(monkeypatch) -> types.ModuleType:
    for name in ("pkg", "pkg.a", "pkg.b"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    for name, source in SOURCES.items():  # m3 first: the others import it
        mod = types.ModuleType(name)
        monkeypatch.setitem(sys.modules, name, mod)
        parent, _, leaf = name.rpartition(".")
        setattr(sys.modules[parent], leaf, mod)
        exec(compile(source, f"<{name}>", "exec"), mod.__dict__)
    return sys.modules["pkg.a.m1"]


def test_a_call_back_into_a_package_already_left_is_a_return(monkeypatch):
    m1 = _planted(monkeypatch)
    graph, profile = call_path.tracer(lambda v: isinstance(v, Ctx), prefix="pkg")
    sys.setprofile(profile)
    try:
        m1.start(Ctx())
    finally:
        sys.setprofile(None)
    assert graph.roots == {"pkg.a.m1:start"}
    assert {a: sorted(b) for a, b in graph.edges.items()} == {
        "pkg.a.m1:start": ["pkg.b.m2:middle"],
        "pkg.b.m2:middle": ["pkg.a.m3:back"],
        "pkg.a.m3:back": ["pkg.a.m3:leaf"],
    }  # `other` and `noarg` were not handed the object: not recorded
    path = call_path.walk(graph)
    assert path.packages == {"pkg.a", "pkg.b"}
    assert path.crossings == {
        ("pkg.a.m1:start", "pkg.b.m2:middle"),
        ("pkg.b.m2:middle", "pkg.a.m3:back"),
    }
    assert path.returns == {("pkg.b.m2:middle", "pkg.a.m3:back")}
    # one package at depth 0 (everything is `pkg`): nothing crossed, nothing returned to
    top = call_path.walk(graph, depth=0)
    assert top.packages == {"pkg"} and not top.crossings and not top.returns


def test_a_chain_that_never_comes_back_has_no_return():
    graph = call_path.Graph(roots={"p.a.x:f"})
    graph.edges.update({"p.a.x:f": {"p.b.y:g"}, "p.b.y:g": {"p.c.z:h"}})
    path = call_path.walk(graph)
    assert len(path.crossings) == 2 and not path.returns
    assert call_path.package("p.b.y:g") == "p.b" and call_path.package("p.b.y:g", 0) == "p"
