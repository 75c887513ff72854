"""The wheel ships the templates (top-level templates/ → tcdoctor/templates), the report's JSON Schema
and the console script."""

import subprocess
import sys
import zipfile

from conftest import ROOT


def test_wheel_contains_templates(tmp_path):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            ROOT,
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    (whl,) = tmp_path.glob("tcdoctor-*.whl")
    names = zipfile.ZipFile(whl).namelist()
    assert "tcdoctor/templates/report.html.j2" in names
    for included in ("section.html.j2", "charts.html.j2"):  # by report.html.j2
        assert f"tcdoctor/templates/{included}" in names
    assert "tcdoctor/report/report.schema.json" in names  # `tcdoctor schema`
    assert "tcdoctor/templates/page.html.j2" in names  # a sweep overview, a diff
    assert any(n.endswith("entry_points.txt") for n in names)
    assert not any(n.startswith(("tests/", "samples/")) for n in names)
    # every subpackage of the source tree is in the wheel (pyproject lists them by name)
    import pathlib

    pkgs = {
        str(p.parent.relative_to(ROOT)) for p in pathlib.Path(ROOT, "tcdoctor").rglob("__init__.py")
    }
    assert pkgs and all(any(n.startswith(d + "/") for n in names) for d in pkgs), pkgs
