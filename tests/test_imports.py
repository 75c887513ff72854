"""Imports point one way, in the order the data flows, counting every import wherever it stands
(module body, function bodies, `if TYPE_CHECKING:` blocks):

    cli, api, testing, commands/  ->  run/  ->  experiments/  ->  probes/  ->  target/
        ->  verdict/, render/  ->  checks/  ->  report/  ->  base

A module may import its own layer and the layers below it, never one above; verdict/ and render/
(both readers of the report) never import each other; and there is no cycle. The core loads
neither render/ nor torch.
"""

import ast
import pathlib
import subprocess
import sys

import pytest
from conftest import ROOT

PKG = pathlib.Path(ROOT) / "tcdoctor"
LAYERS = [  # top to bottom: module prefixes
    (
        "tcdoctor.cli",
        "tcdoctor.api",
        "tcdoctor.testing",
        "tcdoctor.pytest_plugin",
        "tcdoctor.fix",
        "tcdoctor.sweep",
        "tcdoctor.commands",
        "tcdoctor.__main__",
        "tcdoctor",
    ),
    ("tcdoctor.run",),
    ("tcdoctor.experiments",),
    ("tcdoctor.probes",),
    ("tcdoctor.target",),
    ("tcdoctor.verdict", "tcdoctor.render"),
    ("tcdoctor.checks",),
    ("tcdoctor.report",),
    (
        "tcdoctor.units",
        "tcdoctor.stats",
        "tcdoctor.errors",
        "tcdoctor.options",
        "tcdoctor.version",
        "tcdoctor.pysource",
        "tcdoctor.outcomes",
        "tcdoctor.thresholds",
    ),
]
CORE = [
    "tcdoctor.verdict",
    "tcdoctor.checks.table",
    "tcdoctor.report.diff",
    "tcdoctor.units",
    "tcdoctor.run.progress",
    "tcdoctor.run.launcher",
    "tcdoctor.options",
    "tcdoctor.run.stream",
]


def _modules(pkg: pathlib.Path = PKG) -> dict[str, pathlib.Path]:
    """Every module of the package by dotted name (templates/ holds no Python code)."""
    out = {}
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(pkg.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out[".".join(parts)] = path
    return out


def imports_of(name: str, path: pathlib.Path, modules: dict) -> set[str]:
    """tcdoctor modules that `name` imports, anywhere in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
    return {m for m in found if m in modules and m != name}


def layer_of(module: str) -> int:
    for i, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes if p != "tcdoctor"):
            return i
    assert module == "tcdoctor", f"{module} is in no layer: add it to LAYERS"
    return 0


def violations(pkg: pathlib.Path = PKG) -> list[str]:
    """Every upward import, every import between verdict/ and render/, and every cycle."""
    modules = _modules(pkg)
    graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
    out = []
    for m, deps in graph.items():
        for d in sorted(deps):
            if layer_of(d) < layer_of(m):
                out.append(f"{m} imports {d}, a layer above it")
            pair = {m.split(".")[1] if "." in m else m, d.split(".")[1] if "." in d else d}
            if pair == {"verdict", "render"}:
                out.append(f"{m} imports {d}: verdict/ and render/ both only read the report")
    state: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for dep in sorted(graph[m]):
            if state.get(dep) == 1:
                out.append("import cycle: " + " -> ".join(stack + [m, dep]))
            elif dep not in state:
                visit(dep, stack + [m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
    return out


def test_imports_point_down_only_and_never_in_a_cycle():
    assert violations() == []


def test_a_planted_lazy_import_that_points_up_fails(tmp_path):
    """The check sees an import inside a function (and under TYPE_CHECKING): the control."""
    import shutil

    copy = tmp_path / "tcdoctor"
    shutil.copytree(PKG, copy, ignore=shutil.ignore_patterns("__pycache__"))
    units = copy / "units.py"
    units.write_text(
        units.read_text()
        + "\n\ndef _x():\n    from .report.model import Report\n    return Report\n"
    )
    assert any("tcdoctor.units imports tcdoctor.report.model" in v for v in violations(copy))
    units.write_text(
        units.read_text()
        + "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .verdict import judge\n"
    )
    assert any("tcdoctor.units imports tcdoctor.verdict" in v for v in violations(copy))


def test_the_report_module_imports_neither_the_verdict_nor_the_renderers():
    modules = _modules()
    deps = imports_of("tcdoctor.report.model", modules["tcdoctor.report.model"], modules)
    assert deps and not any(d.startswith(("tcdoctor.verdict", "tcdoctor.render")) for d in deps)


@pytest.mark.parametrize("module", CORE)
def test_core_modules_do_not_import_render(module):
    modules = _modules()
    seen, todo = set(), [module]
    while todo:  # transitively, every import counted
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo += imports_of(m, modules[m], modules)
    assert not any(d.startswith("tcdoctor.render") for d in seen), (module, sorted(seen))


def test_importing_the_core_loads_neither_render_nor_torch():
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in CORE)
        + "print(sorted(m for m in sys.modules if m.startswith(('tcdoctor.render', 'torch'))))"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"
    # control: the renderers do load render/ (so the check above can fail)
    p = subprocess.run(
        [
            sys.executable,
            "-c",
            code.replace("import tcdoctor.units\n", "import tcdoctor.render.terminal\n"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert "tcdoctor.render" in p.stdout


# One interpreter imports torch and the parts of it tcdoctor's modules load (no tcdoctor module)
# and forks a child per module: each child imports its module first, as a fresh interpreter would,
# and exits 0 or 1. Importing torch ~100 times over was most of this test's time; what is checked
# is tcdoctor's own import order.
_FORK_EACH = """
import os, sys, traceback
import torch, torch._dynamo, torch._inductor.compile_fx, torch.distributed, torch.profiler
assert not [m for m in sys.modules if m.startswith("tcdoctor")]
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            __import__(name)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        print(name)
"""


def test_every_module_imports_on_its_own():
    """Each module imported first, with no other tcdoctor module loaded: a cycle would raise
    ImportError here. The control: a module that cannot be imported is the one named."""
    names = [m for m in _modules() if m != "tcdoctor.__main__"]  # __main__ runs the CLI
    p = subprocess.run(
        [sys.executable, "-c", _FORK_EACH, *names, "tcdoctor._no_such_module"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split() == ["tcdoctor._no_such_module"], p.stderr[-3000:]
