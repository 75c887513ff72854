"""tcdoctor's pytest plugin (tcdoctor/pytest_plugin.py): a planted test suite run by pytest in a
subprocess, through the `pytest11` entry point (tcdoctor is installed in the test venv).

The planted model has two graph breaks in `Net.forward`: `torch._dynamo.graph_break()` (GB0025)
and a print (GB0059). Eager backend: each planted run takes a few seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from tcdoctor.checks import known_breaks as kb

MODEL = """\
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        torch._dynamo.graph_break()
        z = y.relu()
        print("planted:", z.shape)
        return z + 1
"""
SPLIT_LINE = 11  # torch._dynamo.graph_break()
PRINT_LINE = 13  # print(...)
TEST = """\
import pytest
import torch
from model import Net


@pytest.mark.compiles({marker})
def test_{name}(compiles):
    compiles(Net(), torch.randn(2, 4))
"""


def _entry(kind: str, reason: str, count: int = 1, function: str = "Net.forward") -> str:
    return (
        f'\n[[breaks]]\nfile = "model.py"\nfunction = "{function}"\nkind = "{kind}"\n'
        f'count = {count}\nreason = "{reason}"\n'
    )


BOTH = _entry("GB0025", "a split kept on purpose") + _entry("GB0059", "debug print, kept")


def _plant(tmp_path, tests: dict[str, tuple[str, str | None]]) -> None:
    """model.py, pytest.ini, and per test name: its marker arguments and its known-breaks TOML."""
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    for name, (marker, toml) in tests.items():
        (tmp_path / f"test_{name}.py").write_text(TEST.format(marker=marker, name=name))
        if toml is not None:
            (tmp_path / f"{name}.toml").write_text("version = 1\n" + toml)


def _pytest(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _out(p: subprocess.CompletedProcess) -> str:
    return p.stdout + p.stderr


def test_known_breaks_listed_pass_and_a_new_one_fails_with_file_line(tmp_path):
    _plant(
        tmp_path,
        {
            "listed": ('known_breaks="listed.toml"', BOTH),
            "one_missing": ('known_breaks="one_missing.toml"', _entry("GB0025", "split")),
        },
    )
    p = _pytest(tmp_path, "-rA")
    out = _out(p)
    assert p.returncode == 1, out
    assert "PASSED test_listed.py::test_listed" in out, out
    assert "1 failed, 1 passed" in out, out
    assert f"new graph break at model.py:{PRINT_LINE} in Net.forward" in out, out
    assert "Failed to trace builtin operator [GB0059]" in out
    assert f"model.py:{SPLIT_LINE}" in out  # every break is named, the listed one too
    assert "new graph break at model.py:11" not in out


def test_a_stale_entry_fails_unless_allowed(tmp_path):
    stale = BOTH + _entry("GB0025", "a second split, since removed", function="Net.helper")
    _plant(
        tmp_path,
        {
            "strict": ('known_breaks="strict.toml"', stale),
            "allowed": ('known_breaks="allowed.toml", allow_stale=True', stale),
            "fewer": (
                'known_breaks="fewer.toml"',
                _entry("GB0025", "x", 2) + _entry("GB0059", "y"),
            ),
        },
    )
    p = _pytest(tmp_path, "-rA")
    out = _out(p)
    assert p.returncode == 1, out
    assert "PASSED test_allowed.py::test_allowed" in out, out
    assert "FAILED test_strict.py::test_strict" in out and "FAILED test_fewer.py" in out
    assert "stale known break in" in out and "model.py Net.helper GB0025 listed 1, seen 0" in out
    assert "model.py Net.forward GB0025 listed 2, seen 1" in out, out


def test_update_writes_a_file_that_passes_keeping_reasons(tmp_path):
    old = _entry("GB0025", "a split kept on purpose") + _entry(
        "GB0059", "gone", function="Net.helper"
    )
    _plant(tmp_path, {"net": ('known_breaks="net.toml"', old)})
    assert _pytest(tmp_path).returncode == 1  # a new break (the print) and a stale entry
    p = _pytest(tmp_path, "--tcdoctor-update-known-breaks")
    out = _out(p)
    assert p.returncode == 0, out
    assert "updated known breaks" in out and f"reason {kb.PLACEHOLDER!r}: edit them" in out, out
    entries = kb.load(tmp_path / "net.toml")
    by_kind = {e.kind: e for e in entries}
    assert set(by_kind) == {"GB0025", "GB0059"} and len(entries) == 2
    assert by_kind["GB0025"].reason == "a split kept on purpose"
    assert by_kind["GB0025"].line == SPLIT_LINE and by_kind["GB0025"].function == "Net.forward"
    assert by_kind["GB0059"].reason == kb.PLACEHOLDER and by_kind["GB0059"].file == "model.py"
    p = _pytest(tmp_path)
    assert p.returncode == 0 and "1 passed" in p.stdout, _out(p)


def test_it_runs_under_xdist_each_worker_updating_its_own_file(tmp_path):
    _plant(
        tmp_path,
        {
            "a": ('known_breaks="a.toml"', None),
            "b": ('known_breaks="b.toml", max_recompiles=0', _entry("GB0025", "kept in b")),
        },
    )
    p = _pytest(tmp_path, "-n", "2", "--tcdoctor-update-known-breaks")
    assert p.returncode == 0 and "2 passed" in p.stdout, _out(p)
    assert len(kb.load(tmp_path / "a.toml")) == 2
    assert {e.reason for e in kb.load(tmp_path / "b.toml")} == {"kept in b", kb.PLACEHOLDER}
    p = _pytest(tmp_path, "-n", "2")
    assert p.returncode == 0 and "2 passed" in p.stdout, _out(p)
    (tmp_path / "a.toml").write_text("version = 1\n" + _entry("GB0025", "only the split"))
    p = _pytest(tmp_path, "-n", "2")
    assert p.returncode == 1 and f"new graph break at model.py:{PRINT_LINE}" in p.stdout, _out(p)


def test_two_tests_sharing_a_file_and_a_marker_without_the_fixture_are_refused(tmp_path):
    _plant(
        tmp_path,
        {"one": ('known_breaks="shared.toml"', BOTH), "two": ('known_breaks="shared.toml"', None)},
    )
    p = _pytest(tmp_path)
    assert p.returncode == 4, _out(p)
    assert "both use known breaks" in _out(p) and "belongs to one test" in _out(p)
    (tmp_path / "test_two.py").write_text(
        "import pytest\n\n\n@pytest.mark.compiles(max_recompiles=0)\ndef test_two():\n    pass\n"
    )
    p = _pytest(tmp_path)
    assert p.returncode == 4 and "does not use the `compiles` fixture" in _out(p), _out(p)


def test_without_known_breaks_the_fixture_is_assert_compiles_with_the_markers_limits(tmp_path):
    _plant(tmp_path, {"zero": ("", None), "two": ("max_graph_breaks=2", None)})
    p = _pytest(tmp_path, "-rA")
    out = _out(p)
    assert "FAILED test_zero.py::test_zero" in out and "2 graph breaks (at most 0)" in out, out
    assert "PASSED test_two.py::test_two" in out


def test_importing_the_plugin_imports_no_torch_and_it_is_registered():
    code = textwrap.dedent(
        """
        import sys
        import tcdoctor.pytest_plugin
        assert not [m for m in sys.modules if m == "torch" or m.startswith("torch.")], "torch"
        from importlib.metadata import entry_points
        eps = [e for e in entry_points(group="pytest11") if e.value == "tcdoctor.pytest_plugin"]
        assert [e.name for e in eps] == ["tcdoctor"], eps
        """
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
