"""Known graph breaks (tcdoctor/checks/known_breaks.py): the comparison with literal findings, the
file format against its JSON Schema, and `check --known-breaks` on a saved report (no analysis)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import jsonschema
import pytest
from click.testing import CliRunner
from conftest import ROOT

from tcdoctor.checks import known_breaks as kb
from tcdoctor.cli import main

SAVED = pathlib.Path(ROOT) / "tests" / "data" / "schema1_two_breaks.json"


def _finding(file, line, function="forward", gb_id="GB0025", reason="Call to graph_break", n=1):
    return {
        "file": file,
        "line": line,
        "function": function,
        "gb_id": gb_id,
        "reason": reason,
        "occurrences": n,
    }


def _entry(file="m.py", function="forward", kind="GB0025", count=1, reason="kept", line=None):
    return kb.KnownBreak(file, function, kind, count, reason, line)


def test_listed_breaks_match_by_file_function_kind_and_count_not_line(tmp_path):
    path = str(tmp_path / "kb.toml")
    f = str(tmp_path / "m.py")
    findings = [_finding(f, 30), _finding(f, 40, gb_id=None, reason="Data-dependent branching")]
    entries = [_entry(line=12), _entry(kind="Data-dependent branching")]
    cmp = kb.compare(entries, findings, path)
    assert not cmp.new and not cmp.stale and not cmp.failed()
    # another function, another kind: not the listed ones
    cmp = kb.compare([_entry(function="other"), _entry(kind="GB0099")], findings, path)
    assert len(cmp.new) == 2 and len(cmp.stale) == 2 and cmp.failed(allow_stale=True)


def test_more_occurrences_than_listed_is_new_and_fewer_is_stale(tmp_path):
    path = str(tmp_path / "kb.toml")
    f = str(tmp_path / "m.py")
    cmp = kb.compare([_entry(count=1)], [_finding(f, 3, n=2)], path)
    (new,) = cmp.new
    assert new.entry is not None and new.seen == 2 and not cmp.stale
    assert "2 times, " in new.line(path) and "lists 1" in new.line(path)
    cmp = kb.compare([_entry(count=3)], [_finding(f, 3), _finding(f, 9)], path)
    assert not cmp.new and [(s.entry.count, s.seen) for s in cmp.stale] == [(3, 2)]
    assert cmp.failed() and not cmp.failed(allow_stale=True)
    assert "(allowed)" in cmp.lines(allow_stale=True)[0]


def test_a_new_break_is_named_with_file_line_and_reason(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cmp = kb.compare([], [_finding(str(tmp_path / "m.py"), 7)], "kb.toml")
    assert cmp.lines() == [
        "new graph break at m.py:7 in forward: Call to graph_break [GB0025]: not in kb.toml"
    ]


def test_files_match_relative_to_the_lists_folder_or_by_path_tail(tmp_path):
    path = str(tmp_path / "lists" / "kb.toml")
    mine = str(tmp_path / "src" / "pkg" / "m.py")
    lib = "/venv/lib/python3.11/site-packages/transformers/models/gpt2/modeling_gpt2.py"
    findings = [_finding(mine, 5), _finding(lib, 9, function="_attn")]
    entries = [
        _entry(file="../src/pkg/m.py"),
        _entry(file="transformers/models/gpt2/modeling_gpt2.py", function="_attn"),
    ]
    assert not kb.compare(entries, findings, path).failed()
    # a report analysed in another checkout: the entry's parts are the tail of the break's
    other = [_finding("/home/runner/work/p/p/src/pkg/m.py", 5)]
    assert not kb.compare([_entry(file="src/pkg/m.py")], other, path).failed()
    assert kb.compare([_entry(file="other/m.py")], other, path).failed()
    # the most specific entry takes the break; the looser one is stale
    cmp = kb.compare([_entry(file="m.py"), _entry(file="pkg/m.py")], other, path)
    assert [s.entry.file for s in cmp.stale] == ["m.py"]
    assert kb.file_key(mine, str(tmp_path / "lists")) == "../src/pkg/m.py"
    assert kb.file_key(lib, "/x") == "transformers/models/gpt2/modeling_gpt2.py"


def test_the_function_is_matched_by_qualname_read_from_the_source(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("class Net:\n    def forward(self, x):\n        return x\n")
    path = str(tmp_path / "kb.toml")
    resumed = _finding(str(src), 3, function="torch_dynamo_resume_in_forward_at_2")
    (seen,) = kb.seen_breaks([resumed])
    assert seen.function == "Net.forward"
    assert not kb.compare([_entry(function="Net.forward")], [resumed], path).failed()
    assert kb.compare([_entry(function="Other.forward")], [resumed], path).failed()


def test_update_keeps_reasons_refreshes_counts_drops_stale_and_adds_placeholders(tmp_path):
    path = str(tmp_path / "kb.toml")
    f = str(tmp_path / "m.py")
    entries = [_entry(count=1, reason="why A", line=1), _entry(kind="GB0099", reason="gone")]
    findings = [_finding(f, 8, n=2), _finding(f, 20, gb_id="GB0059", reason="print")]
    new = kb.updated(entries, findings, path)
    assert new == [
        kb.KnownBreak("m.py", "forward", "GB0025", 2, "why A", 8),
        kb.KnownBreak("m.py", "forward", "GB0059", 1, kb.PLACEHOLDER, 20, "print"),
    ]
    kb.write(path, new)
    assert kb.load(path) == new and not kb.compare(new, findings, path).failed()
    assert kb.compare(new, findings, path).placeholders == 1
    jpath = str(tmp_path / "kb.json")
    kb.write(jpath, new)
    assert json.loads(pathlib.Path(jpath).read_text())["version"] == 1 and kb.load(jpath) == new


@pytest.mark.parametrize(
    "data, why",
    [
        (
            {"breaks": [{"file": "m.py", "function": "f", "kind": "GB1", "count": 1}]},
            "missing reason",
        ),
        (
            {
                "breaks": [
                    {"file": "m.py", "function": "f", "kind": "GB1", "count": 1, "reason": " "}
                ]
            },
            "reason must be a non-empty string",
        ),
        (
            {"breaks": [{"file": "m.py", "function": "f", "kind": "G", "count": 0, "reason": "r"}]},
            "count must be an integer >= 1",
        ),
        (
            {
                "breaks": [
                    {"file": "m", "function": "f", "kind": "G", "count": 1, "reason": "r", "x": 1}
                ]
            },
            "unknown key(s) x",
        ),
        ({"version": 2, "breaks": []}, "version 2"),
    ],
)
def test_a_bad_file_is_one_line_and_the_schema_refuses_it_too(data, why):
    with pytest.raises(kb.KnownBreaksError, match=r".*") as info:
        kb.entries_from(data, "kb.json")
    assert why in info.value.message
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, kb.SCHEMA)


def test_written_files_satisfy_the_schema_and_toml_strings_round_trip(tmp_path):
    odd = 'a "quoted" \\ reason\twith ünïcode \x7f and a newline\n'
    entries = [_entry(reason=odd, line=3), _entry(kind="GB0059", count=2)]
    path = tmp_path / "kb.toml"
    kb.write(path, entries)
    import tomllib

    data = tomllib.loads(path.read_text())
    jsonschema.validate(data, kb.SCHEMA)
    assert kb.load(path) == entries and kb.load(path)[0].reason == odd


def test_the_module_imports_no_torch():
    code = "import sys, tcdoctor.checks.known_breaks; assert 'torch' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# `tcdoctor check --known-breaks` on the saved two-break report (samples/two_breaks.py:
# torch._dynamo.graph_break() at line 28 [GB0025], a torch.compiler.disable'd call at 30 [GB0098]).
TWO = """version = 1

[[breaks]]
file = "samples/two_breaks.py"
function = "Model.forward"
kind = "GB0025"
count = 1
reason = "the split is deliberate"
line = 99

[[breaks]]
file = "samples/two_breaks.py"
function = "Model.forward"
kind = "{kind}"
count = 1
reason = "a disabled helper"
"""


def _check(*args: str):
    return CliRunner().invoke(main, ["check", "--report", str(SAVED), *args])


def test_check_known_breaks_on_a_saved_report(tmp_path):
    listed = tmp_path / "kb.toml"
    listed.write_text(TWO.format(kind="GB0098"))
    r = _check("--known-breaks", str(listed))
    assert r.exit_code == 0, r.output
    assert "PASS  known graph breaks: 0 new, 0 stale" in r.output
    listed.write_text(TWO.format(kind="GB0059"))  # the disabled call is not this kind
    r = _check("--known-breaks", str(listed))
    assert r.exit_code == 1, r.output
    assert "FAIL  known graph breaks: 1 new, 1 stale" in r.output
    new = [ln for ln in r.output.splitlines() if "new graph break at" in ln]
    assert len(new) == 1 and "samples/two_breaks.py:30 in " in new[0], r.output
    assert "compiler.disable" in new[0] and "[GB0098]" in new[0]
    assert "stale known break in" in r.output and "GB0059" in r.output
    r = _check("--known-breaks", str(listed), "--allow-stale")
    assert r.exit_code == 1 and "1 new, 1 stale (allowed)" in r.output, r.output


def test_check_update_known_breaks_keeps_reasons(tmp_path):
    listed = tmp_path / "kb.toml"
    listed.write_text(TWO.format(kind="GB0059"))
    r = _check("--known-breaks", str(listed), "--update-known-breaks")
    assert r.exit_code == 0 and "updated; 0 new, 0 stale" in r.output, r.output
    entries = kb.load(listed)
    assert [(e.kind, e.reason, e.line) for e in entries] == [
        ("GB0025", "the split is deliberate", 28),
        ("GB0098", kb.PLACEHOLDER, 30),
    ]
    assert "placeholder reason" in r.output
    r = _check("--allow-stale", "--max-graph-breaks", "5")
    assert r.exit_code == 2 and "need --known-breaks FILE" in r.output, r.output
