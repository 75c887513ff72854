"""The proof can fail: planted wrong patches (in this process, cheap backend) are caught by the
check each one breaks, and never called verified. The planner patches only the user's own code.

Each planted patch removes the print's break (so the break checks alone would pass it) and breaks
one other promise: a changed eager output, a dropped eager print, a new break elsewhere.
"""

from __future__ import annotations

import os
import shutil

import pytest
from conftest import ROOT

from tcdoctor.experiments import patches, rewrite
from tcdoctor.experiments.specs import PatchFix
from tcdoctor.options import Options

MODEL = os.path.join(ROOT, "tests", "targets", "cure", "print_stat.py")
PRINT = '        print("activation mean", h.mean())\n'


def _planted(new_lines: str):
    """A rewrite.plan that swaps the print line for `new_lines` (and claims to guard stdout)."""

    def plan(source: str, site: rewrite.Site, observed: dict | None = None) -> rewrite.Rewrite:
        assert PRINT in source
        return rewrite.Rewrite(
            rule="TCD999",
            family="planted",
            safety="unsafe",
            title="a planted wrong patch",
            note="",
            source=source.replace(PRINT, new_lines),
            line=site.line,
            checks=("stdout",),
        )

    return plan


@pytest.fixture
def target(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(MODEL, folder)
    return str(folder / "print_stat.py")


def _run(target: str) -> dict:
    """The print's break of the copy at `target`, proven in this process as a patch child does."""
    from tcdoctor.target.load import load_with_rebuild

    w, _ = load_with_rebuild(target + ":build")
    site = {"file": target, "function": "forward", "reason": "Failed to trace builtin operator"}
    spec = PatchFix(
        name="print_stat.py:15",
        target=target + ":build",
        file=target,
        at_line=15,
        gb_type=site["reason"],
        gb_id="GB0059",
        before={"graph_breaks": 1, "sites": [{**site, "line": 15}]},
    )
    return patches.run(spec, w, Options(backend="eager", budget_s=0.2, threads=1))


def _prove(target: str, monkeypatch, new_lines: str) -> dict:
    monkeypatch.setattr(rewrite, "plan", _planted(new_lines))
    return _run(target)


@pytest.mark.parametrize(
    ("new_lines", "fails"),
    [
        # the output doubled: eager outputs differ
        ("        h = h * 2\n", "eager outputs"),
        # the print deleted: no break, same outputs, but eager prints nothing
        ("", "eager stdout"),
        # the print guarded, but a break added elsewhere: fewer breaks fails (1 -> 1), and it is new
        (
            "        if not torch.compiler.is_compiling():\n"
            '            print("activation mean", h.mean())\n'
            "        torch._dynamo.graph_break()\n",
            "no new break",
        ),
    ],
)
def test_a_planted_wrong_patch_is_caught_by_the_check_it_breaks(
    target, monkeypatch, new_lines, fails
):
    row = _prove(target, monkeypatch, new_lines)
    patch = row["patch"]
    assert patch["verified"] is False
    assert fails in patch["failed"], (patch["failed"], row.get("why"))
    assert row["outcome"] == "fails verification"
    assert open(target).read().count(PRINT) == 1  # the user's file is never written


def test_the_right_patch_passes_the_same_proof(target):
    """The control: the real rewrite of the same break, proven the same way, is verified."""
    row = _run(target)
    assert row["patch"]["verified"] is True, row["patch"]["checks"]
    assert row["patch"]["rule"] == "TCD102"


def _results(findings: list[dict]) -> dict:
    return {"graph_breaks": {"graph_breaks": {"count": len(findings), "unique": findings}}}


def test_breaks_in_library_code_get_no_patch(tmp_path):
    """An HF model's breaks inside transformers (or PyTorch) are not the user's: no patch is
    planned for them and none is listed as missing; the user's own break in the same run is."""
    user = tmp_path / "m.py"
    shutil.copy(MODEL, user)
    lib = os.path.join(os.path.dirname(rewrite.__file__), "specs.py")  # any file that exists
    findings = [
        {"id": "B1", "file": lib, "line": 10, "reason": "Failed to trace builtin operator",
         "origin": "library"},
        {"id": "B2", "file": lib, "line": 12, "reason": "Failed to trace builtin operator",
         "origin": "pytorch"},
        {"id": "B3", "file": str(user), "line": 15, "reason": "Failed to trace builtin operator",
         "origin": "user", "gb_id": "GB0059"},
    ]  # fmt: skip
    specs, none = patches.plan(_results(findings), f"{user}:build", {})
    assert [s.file for s in specs] == [str(user)] and not none
    assert specs[0].addresses == ["B3"] and specs[0].rule == "TCD102"


def test_a_file_outside_the_target_folder_is_not_patched(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(MODEL, tmp_path / "b" / "layers.py")
    finding = {"id": "B1", "file": str(tmp_path / "b" / "layers.py"), "line": 15,
               "reason": "Failed to trace builtin operator", "origin": "user"}  # fmt: skip
    specs, none = patches.plan(_results([finding]), f"{tmp_path / 'a' / 't.py'}:build", {})
    assert not specs and "outside the target's folder" in none[0]["why"]
