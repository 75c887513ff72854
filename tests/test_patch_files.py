"""Files byte for byte: a CRLF file, a file with a byte-order mark, an executable file with a hard
link, and a symlinked file are each patched by `tcdoctor fix --apply` and by `git apply` of the
written diff file, and every byte outside the patch is kept (and the mode, the hard link, the
link itself).

Each file holds the cure corpus's leftover graph_break() (a safe patch, written without
--unsafe). The patch is proven in this process as a patch child proves it (cheap backend), its
fix row put into a saved report, and the real CLI applies it from that report.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess

import pytest
from conftest import ROOT, run_cli, saved_report

from tcdoctor.experiments import proving
from tcdoctor.experiments.specs import PatchFix
from tcdoctor.options import Options
from tcdoctor.render.patches import diff_file
from tcdoctor.report.model import Report

MODEL = os.path.join(ROOT, "tests", "targets", "cure", "leftover_break.py")
BREAK = "        torch._dynamo.graph_break()"
REASON = "Call to `torch._dynamo.graph_break()`"


def _variant(kind: str, folder) -> tuple[str, str, bytes]:
    """(the target's file, the file the patch changes, its original bytes) for a file kind."""
    text = open(MODEL, encoding="utf-8").read()
    raw = text.encode("utf-8")
    if kind == "crlf":
        raw = text.replace("\n", "\r\n").encode("utf-8")
    elif kind == "bom":
        raw = b"\xef\xbb\xbf" + raw
    real = folder / ("lib" if kind == "symlink" else ".") / "model.py"
    real.parent.mkdir(exist_ok=True)
    real.write_bytes(raw)
    target = real
    if kind == "executable":
        os.chmod(real, 0o755)
        os.link(real, folder / "hardlink.py")
    if kind == "symlink":
        target = folder / "model_link.py"
        os.symlink(os.path.join("lib", "model.py"), target)
    return str(target), str(real), raw


def _prove(target: str) -> dict:
    from tcdoctor.target.load import load_with_rebuild

    w, _ = load_with_rebuild(target + ":build")
    site = {"file": target, "function": "forward", "reason": REASON, "line": 15}
    spec = PatchFix(
        name=f"{os.path.basename(target)}:15",
        target=target + ":build",
        file=target,
        at_line=15,
        gb_type=REASON,
        gb_id="GB0025",
        family="leftover-graph-break",
        rule="TCD101",
        safety="safe",
        before={"graph_breaks": 1, "sites": [site]},
    )
    row = proving.run(spec, w, Options(backend="eager", budget_s=0.2, threads=1))
    row["spec"] = spec.to_dict()
    return row


def _report(row: dict, folder) -> str:
    """A saved report whose fixes are this one proven patch."""
    data = json.loads(saved_report("two_breaks").read_text(encoding="utf-8"))
    data["fixes"] = [row]
    data["fixes_not_tried"] = []
    path = folder / "r.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("kind", ["crlf", "bom", "executable", "symlink"])
def test_fix_apply_and_git_apply_keep_every_byte_outside_the_patch(kind, tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    target, real, raw = _variant(kind, folder)
    row = _prove(target)
    patch = row["patch"]
    assert patch["verified"] is True, (row.get("why"), patch["checks"])
    # the expected bytes: the original's with the graph_break line (and its line ending) gone
    newline = b"\r\n" if kind == "crlf" else b"\n"
    expected = raw.replace(BREAK.encode() + newline, b"", 1)
    assert expected != raw and expected.startswith(raw[:3])
    if kind == "symlink":
        assert patch["file"] == os.path.join("lib", "model.py")  # the real file, not the link
    # git apply of the diff file, from the target's folder, on a fresh copy
    fresh = tmp_path / "fresh"
    shutil.copytree(folder, fresh, symlinks=True)
    report_path = _report(row, tmp_path)
    text = diff_file(Report.load(report_path))
    assert text is not None
    (tmp_path / "tcdoctor-patches.diff").write_bytes(text.encode("utf-8"))
    subprocess.run(["git", "init", "-q"], cwd=fresh, check=True)
    subprocess.run(["git", "apply", str(tmp_path / "tcdoctor-patches.diff")], cwd=fresh, check=True)
    fresh_real = fresh / os.path.relpath(real, folder)
    assert fresh_real.read_bytes() == expected
    if kind == "symlink":
        assert os.path.islink(fresh / "model_link.py")
    # tcdoctor fix --apply on the file itself
    mode = os.stat(real).st_mode
    code, out, err = run_cli(tmp_path, "fix", "--report", report_path, "--apply")
    assert code == 0 and out.startswith("written:"), (code, out, err)
    with open(real, "rb") as fh:
        assert fh.read() == expected
    assert stat.S_IMODE(os.stat(real).st_mode) == stat.S_IMODE(mode)
    assert not [p for p in os.listdir(os.path.dirname(real)) if "tcdoctor-backup" in p]
    if kind == "executable":
        assert os.stat(real).st_mode & stat.S_IXUSR
        assert (folder / "hardlink.py").read_bytes() == expected  # the same inode
    if kind == "symlink":
        assert os.path.islink(folder / "model_link.py")
    # applied once: the file changed since the analysis, nothing written again
    code, out, _ = run_cli(tmp_path, "fix", "--report", report_path, "--apply")
    assert code == 1 and "changed since the analysis" in out
