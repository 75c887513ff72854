"""`tcdoctor report saved.json` re-renders a report written before a change identically: the
terminal summary, the Markdown and the HTML of saved reports, each compared with what the code
before the change wrote for them (tests/data/golden/, made by `tcdoctor report` at that commit)."""

import os
import shutil

import pytest
from conftest import ROOT

DATA = os.path.join(ROOT, "tests", "data")
GOLDEN = os.path.join(DATA, "golden")
SAVED = sorted(
    f[: -len(".txt")] for f in os.listdir(GOLDEN) if f.endswith(".txt")
)  # each NAME has NAME.json in tests/data or tests/data/golden


@pytest.mark.parametrize("name", SAVED)
def test_a_saved_report_re_renders_identically(cli, tmp_path, name):
    src = next(
        p
        for p in (os.path.join(DATA, name + ".json"), os.path.join(GOLDEN, name + ".json"))
        if os.path.exists(p)
    )
    shutil.copy(src, tmp_path / "in.json")
    rc, out, err = cli("report", "in.json", "--md", "out.md", "--html", "out.html")
    assert rc == 0, err
    for suffix, got in (
        (".txt", out),
        (".md", (tmp_path / "out.md").read_text(encoding="utf-8")),
        (".html", (tmp_path / "out.html").read_text(encoding="utf-8")),
    ):
        with open(os.path.join(GOLDEN, name + suffix), encoding="utf-8") as fh:
            assert got == fh.read(), f"{name}{suffix} differs"
