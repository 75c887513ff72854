"""`tcdoctor rules` and `tcdoctor rules CODE` (torch-free): the registry's rules as a table, and one
rule's page, with its example planned live (so the page shows what the rule writes today); and
docs/patches.md's rule table, generated from the registry as ruff generates its rule docs.

The doc holds the table between two markers (`BEGIN`, `END`); `markdown_table` renders it from the
rules, `tests/test_rewrite.py` fails when the doc's differs, and `python -m
tcdoctor.experiments.rewrite.pages docs/patches.md` (REGENERATE) writes it back.
"""

from __future__ import annotations

import sys
import textwrap

from . import registry
from .base import NoRewrite, Rule, Site

WIDTH = 100
BEGIN = "<!-- rules:begin (generated from the rule registry: do not edit by hand) -->"
END = "<!-- rules:end -->"
REGENERATE = "python -m tcdoctor.experiments.rewrite.pages docs/patches.md"
COLUMNS = (
    "code",
    "family",
    "the break",
    "the rewrite",
    "safety",
    "checked besides breaks and outputs",
)


def table() -> str:
    """One line per rule, in the planner's order: code, name, safety, the break it patches."""
    rows = [(r.code, r.name, r.safety, r.the_break) for r in registry.RULES]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = []
    for row in rows:
        head = "  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths))
        wrapped = textwrap.wrap(row[3], WIDTH - len(head) - 2) or [""]
        lines.append(f"{head}  {wrapped[0]}")
        lines += [" " * (len(head) + 2) + more for more in wrapped[1:]]
    lines.append("")
    lines.append(
        "safe: behaviour unchanged eager and compiled (`tcdoctor fix --apply` writes it); "
        "unsafe: eager unchanged, compiled differs as the patch's note says (written with "
        "--unsafe). A patch's safety is the less safe of its rule's and what the side-effect walk "
        "found. `tcdoctor rules CODE` prints a rule's page."
    )
    return "\n".join(textwrap.fill(x, WIDTH) if x.startswith("safe:") else x for x in lines) + "\n"


def page(rule: Rule) -> str:
    """A rule's page: what it rewrites, when it refuses, its proof, and its example as a diff."""
    from . import plan, unified_diff

    p = rule.page

    def para(title: str, text: str) -> str:
        return f"{title}\n" + textwrap.fill(
            text, WIDTH, initial_indent="  ", subsequent_indent="  "
        )

    site = Site(p.example_line, p.example_gb_type, file="example.py")
    planned = plan(p.example, site, p.example_observed)
    if isinstance(planned, NoRewrite):
        example = f"  (the example plans no patch today: {planned.reason})"
    else:
        diff = unified_diff(p.example, planned.source, "example.py")
        example = textwrap.indent(diff.rstrip("\n"), "  ")
    parts = [
        f"{rule.code} {rule.name} ({rule.safety})",
        "",
        para("The break:", rule.the_break),
        "",
        para("What it rewrites:", p.rewrites),
        "",
        para("When it refuses:", p.refuses),
        "",
        para("How its patch is proven:", p.proof),
        "",
        "Example:",
        example,
    ]
    return "\n".join(parts) + "\n"


def markdown_table() -> str:
    """docs/patches.md's rule table: one row per rule, in the planner's order."""

    def cell(text: str) -> str:
        return " ".join(text.split()).replace("|", "\\|") or "—"

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in registry.RULES:
        safety = f"{r.safety} ({r.safety_note})" if r.safety_note else str(r.safety)
        row = (r.code, r.name, r.the_break, r.the_rewrite, safety, r.checked)
        lines.append("| " + " | ".join(cell(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


def with_table(doc: str) -> str:
    """`doc` with the text between the markers replaced by the registry's table."""
    head, begin, rest = doc.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"the rule table's markers are missing ({BEGIN} ... {END})")
    return f"{head}{BEGIN}\n{markdown_table()}{END}{tail}"


def main(argv: list[str]) -> int:
    """Write the registry's table into each doc named (REGENERATE)."""
    for path in argv:
        with open(path, encoding="utf-8") as fh:
            doc = fh.read()
        new = with_table(doc)
        if new != doc:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(new)
        print(f"{path}: {'rule table regenerated' if new != doc else 'rule table up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
