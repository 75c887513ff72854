"""The output flags (`--json`, `--html`, `--md`) are made from the declared formats
(render/formats.py `FORMATS`) and `--expected-calls` is declared once (commands/flags.py
`EXPECTED_CALLS`), for every command that writes reports; every command's body is in commands/,
and cli.py declares no option of its own. No analysis runs."""

from __future__ import annotations

import ast
import json
import pathlib

import click
from conftest import ROOT

from tcdoctor.cli import main

PKG = pathlib.Path(ROOT, "tcdoctor")
FLAGS = {"--json", "--html", "--md", "--expected-calls"}


def _options(command: str) -> dict[str, click.Option]:
    ctx = click.Context(main)
    cmd = main.get_command(ctx, command)
    assert cmd is not None, command
    return {o: p for p in cmd.params if isinstance(p, click.Option) for o in p.opts}


def test_every_command_that_writes_reports_has_the_same_output_flags():
    writes = {"analyze": "jhm", "report": "jhm", "merge": "jhm", "diff": "jhm", "check": "jhm"}
    for command, formats in writes.items():
        options = _options(command)
        for letter, flag in (("j", "--json"), ("h", "--html"), ("m", "--md")):
            if letter not in formats:
                assert flag not in options, (command, flag)
                continue
            opt = options[flag]
            assert (
                opt.name == {"--json": "json_path", "--html": "html_path", "--md": "md_path"}[flag]
            )
            assert opt.help.startswith("Write ") and opt.metavar == "PATH", (command, opt.help)
    assert _options("analyze")["--json"].default == "tcdoctor-report.json"
    assert _options("report")["--json"].default is None
    merge = _options("merge")
    assert merge["-o"] is merge["--output"] is merge["--json"]  # its old spellings kept
    assert merge["--json"].default == "tcdoctor-merged.json"
    # --expected-calls is the one declaration wherever it is
    helps = {_options(c)["--expected-calls"].help for c in ("analyze", "report", "check", "fix")}
    assert len(helps) == 1


def _string_constants(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in FLAGS}


def test_the_flags_are_spelled_in_one_module():
    """--expected-calls stands in commands/flags.py alone, and the output flags nowhere: each is
    made from its format's key (a message may name one in a longer string; a declaration is the
    spelling alone)."""
    spelled = {
        str(p.relative_to(PKG)): found for p in PKG.rglob("*.py") if (found := _string_constants(p))
    }
    assert spelled == {"commands/flags.py": {"--expected-calls"}}, spelled


def test_the_command_bodies_are_in_commands():
    """cli.py's commands call commands/ and do nothing else; its only `click.option` is the one
    that makes every declared option click's (`_click_option`)."""
    tree = ast.parse((PKG / "cli.py").read_text(encoding="utf-8"))
    bodies = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    options = [
        f.name
        for f in bodies.values()
        for n in ast.walk(f)
        if isinstance(n, ast.Attribute) and n.attr == "option"
    ]
    assert set(options) == {"_click_option"}, options
    commands = {"analyze": "analyze", "report": "report", "diff": "diff", "merge": "report"}
    for name, module in {**commands, "fix": "fix", "sweep": "sweep"}.items():
        body = bodies[name].body
        assert len(body) == 2, name  # the import and the call
        (imp,) = [s for s in body if isinstance(s, ast.ImportFrom)]
        assert imp.module == f"commands.{module}", name


def test_merge_writes_the_joined_report_where_its_flags_say(cli, tmp_path):
    """`merge`'s body in commands/: two nodes' saved reports joined, under `-o` (its old
    spelling of `--json`) and `--html`; the same rank twice is one line, exit 2."""
    saved = pathlib.Path(ROOT, "tests", "data", "golden", "distributed_two_ranks.json")
    rep = json.loads(saved.read_text(encoding="utf-8"))
    nodes = []
    for rank in (0, 1):
        part = json.loads(json.dumps(rep))
        part["distributed"]["ranks"] = [r for r in rep["distributed"]["ranks"] if r["rank"] == rank]
        (tmp_path / f"node{rank}.json").write_text(json.dumps(part))
        nodes.append(f"node{rank}.json")
    rc, out, err = cli("merge", nodes[1], nodes[0], "-o", "merged.json", "--html", "m.html")
    assert rc == 0, err
    merged = json.loads((tmp_path / "merged.json").read_text())["distributed"]
    assert [r["rank"] for r in merged["ranks"]] == [0, 1]
    assert "JSON report: merged.json" in out and "HTML report: m.html" in out
    assert (tmp_path / "m.html").read_text().startswith("<!DOCTYPE html>")
    rc, _, err = cli("merge", nodes[0], nodes[0], "--json", "bad.json")
    assert rc == 2 and "rank 0 appears in more than one report" in err
    assert not (tmp_path / "bad.json").exists()
