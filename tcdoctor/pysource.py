"""The functions a Python source defines, with their qualified names and line spans: read from its
parse once, for whoever must name the function around a line (a graph break's site, a known-breaks
entry). Pure: the callers read the file and cache as their own freshness requires."""

from __future__ import annotations

import ast


def functions(source: str) -> tuple[tuple[int, int, int, str], ...]:
    """(first line incl. decorators, def line, end line, qualified name) of each function defined in
    `source`, outermost first; nested functions are `outer.<locals>.inner`, methods `Class.name`.
    Raises SyntaxError/ValueError as `ast.parse` does."""
    out: list[tuple[int, int, int, str]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                q = prefix + child.name
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                out.append((first, child.lineno, child.end_lineno or child.lineno, q))
                walk(child, q + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(ast.parse(source), "")
    return tuple(out)
