"""How far one object travels through tcdoctor's packages: the calls that pass it on, and how often
it goes back into a package it had already left (issue 61's "returns").

Method. The command runs in this process (`tcdoctor.cli.main`) under `sys.setprofile` (every
thread). A call *passes the object on* when the called tcdoctor function receives an object of
the class as an argument (directly, or in a tuple or list argument); its caller is the nearest
tcdoctor frame up the stack that holds the same object (by identity) as one of its arguments. That
gives a graph of functions (module:qualname). From each root (a function that received the object
from no tcdoctor frame holding it: where it was made) the graph is walked depth first, each path
acyclic; a call into a package other than the caller's *crosses* a package, and a crossing into a
package already on the path, other than the one just left, is a *return*. A package is a module's
parent package (`--depth N`: tcdoctor's first N dotted names below it instead).

Pitfalls. Only this process is traced: the object must live in the parent (the serving run's
context, `check`'s arguments), not in an analysis child. A method inherited from a base class in
another package counts as a crossing (the object is passed on as `self`). The figures depend on the
command: a path the command does not take is not seen.

    python benchmarks/call_path.py tcdoctor.run.serving.part.Serving -- analyze \\
        samples/serving.py:build --traffic 20 --backend eager --threads 1 --no-warm \\
        --processes 1 --budget 0.3 --no-submodules --json /tmp/r.json --html ""
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from inspect import CO_VARARGS, CO_VARKEYWORDS
from types import FrameType

PREFIX = "tcdoctor"


@dataclass
class Graph:
    """The calls that passed the object on: caller -> callees, and the roots."""

    edges: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    roots: set[str] = field(default_factory=set)


@dataclass
class Path:
    """What the walk found: the packages it crossed, the package-changing calls, the returns."""

    packages: set[str] = field(default_factory=set)
    crossings: set[tuple[str, str]] = field(default_factory=set)
    returns: set[tuple[str, str]] = field(default_factory=set)


def _name(frame: FrameType) -> str:
    code = frame.f_code
    return f"{frame.f_globals.get('__name__', '?')}:{getattr(code, 'co_qualname', code.co_name)}"


def tracer(is_it: Callable[[object], bool], prefix: str = PREFIX) -> tuple[Graph, Callable]:
    """A profile function recording, into the returned graph, every call of a function under
    `prefix` that receives an object `is_it` accepts, with its caller (see the module's method)."""
    graph = Graph()

    def held(frame: FrameType) -> set[int]:
        code = frame.f_code
        n = code.co_argcount + code.co_kwonlyargcount
        n += bool(code.co_flags & CO_VARARGS) + bool(code.co_flags & CO_VARKEYWORDS)
        found: set[int] = set()
        for name in code.co_varnames[:n]:
            v = frame.f_locals.get(name)
            for x in v if isinstance(v, (tuple, list)) else (v,):
                if is_it(x):
                    found.add(id(x))
        return found

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event != "call" or not frame.f_globals.get("__name__", "").startswith(prefix):
            return
        ids = held(frame)
        if not ids:
            return
        callee, up = _name(frame), frame.f_back
        while up is not None:
            if up.f_globals.get("__name__", "").startswith(prefix) and held(up) & ids:
                if _name(up) != callee:
                    graph.edges[_name(up)].add(callee)
                return
            up = up.f_back
        graph.roots.add(callee)

    return graph, profile


def package(function: str, depth: int | None = None) -> str:
    """'a.b.c:f' -> 'a.b' (the module's parent package), or with `depth` the first 1 + depth
    dotted names ('a.b' at depth 1)."""
    mod = function.split(":")[0].split(".")
    parts = mod[:-1] if depth is None else mod[: 1 + depth]
    return ".".join(parts) or mod[0]


def walk(graph: Graph, depth: int | None = None) -> Path:
    """Every acyclic path from every root, depth first (the module's method)."""
    out = Path()

    def go(fn: str, on_path: list[str], seen: frozenset[str]) -> None:
        here = package(fn, depth)
        out.packages.add(here)
        for callee in sorted(graph.edges.get(fn, ())):
            if callee in seen:
                continue
            there = package(callee, depth)
            if there != here:
                out.crossings.add((fn, callee))
                if there in on_path[:-1]:
                    out.returns.add((fn, callee))
            go(callee, on_path + ([there] if there != on_path[-1] else []), seen | {callee})

    for root in sorted(graph.roots):
        go(root, [package(root, depth)], frozenset({root}))
    return out


def of_class(qualified: str) -> Callable[[object], bool]:
    """Accepts objects whose class is `qualified` ('module.Class') exactly."""
    return lambda v: f"{type(v).__module__}.{type(v).__qualname__}" == qualified


def traced(run: Callable[[], object], is_it: Callable[[object], bool]) -> Graph:
    """`run()` under the tracer (every thread), the graph it recorded."""
    graph, profile = tracer(is_it)
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        run()
    except SystemExit:
        pass
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return graph


def lines(path: Path, functions: Iterable[str]) -> list[str]:
    out = [
        f"functions {len(set(functions))}; packages crossed {len(path.packages)}: "
        + ", ".join(sorted(path.packages)),
        f"package-changing calls {len(path.crossings)}; returns to a package already left "
        f"{len(path.returns)}",
    ]
    return out + [f"  return: {a} -> {b}" for a, b in sorted(path.returns)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cls", help="the object's class, module.Class")
    ap.add_argument("--depth", type=int, default=None, help="package = N names below tcdoctor")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="-- then tcdoctor's command line")
    a = ap.parse_args()
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    from tcdoctor.cli import main as cli

    graph = traced(lambda: cli(args, standalone_mode=False), of_class(a.cls))
    functions = set(graph.roots) | set(graph.edges) | {g for s in graph.edges.values() for g in s}
    print("\n".join(lines(walk(graph, a.depth), functions)), file=sys.stderr)


if __name__ == "__main__":
    main()
