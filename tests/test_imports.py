"""Layers: the core (verdict, check, diff, units, run/) never imports render/; no import cycles."""

import ast
import os
import pathlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from conftest import ROOT

PKG = pathlib.Path(ROOT) / "tcdoctor"
CORE = [
    "tcdoctor.verdict",
    "tcdoctor.check",
    "tcdoctor.diff",
    "tcdoctor.units",
    "tcdoctor.run.progress",
    "tcdoctor.run.launcher",
    "tcdoctor.run.options",
    "tcdoctor.run.stream",
]


def _modules() -> dict[str, pathlib.Path]:
    """Every module of the package by dotted name (templates/ holds no Python code)."""
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        if "templates" in rel.parts:
            continue
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: pathlib.Path, modules: dict, top_level_only: bool) -> set[str]:
    """tcdoctor modules that `name` imports (at module level, or anywhere in the file)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in nodes:
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
    return {m for m in found if m in modules}


def test_the_import_graph_has_no_cycles():
    modules = _modules()
    graph = {m: _imports(m, p, modules, top_level_only=True) for m, p in modules.items()}
    state: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for dep in sorted(graph[m]):
            assert state.get(dep) != 1, "import cycle: " + " -> ".join(stack + [m, dep])
            if dep not in state:
                visit(dep, stack + [m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
    assert "tcdoctor.verdict" in graph and "tcdoctor.units" in graph["tcdoctor.verdict"]


def test_core_modules_do_not_import_render_even_lazily():
    modules = _modules()
    for m in CORE + [m for m in modules if m.startswith("tcdoctor.run.")]:
        deps = _imports(m, modules[m], modules, top_level_only=False)
        assert not any(d.startswith("tcdoctor.render") for d in deps), (m, deps)


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


def test_every_module_imports_on_its_own():
    """Each module imported first, in a fresh interpreter: a cycle would raise ImportError here."""
    names = [m for m in _modules() if m != "tcdoctor.__main__"]  # __main__ runs the CLI

    def imports(m: str) -> int:
        return subprocess.run(
            [sys.executable, "-c", f"import {m}"], capture_output=True, timeout=300, cwd=ROOT
        ).returncode

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        failed = [m for m, rc in zip(names, pool.map(imports, names)) if rc != 0]
    assert failed == []
