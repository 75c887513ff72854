"""Write the saved reports of this schema version that rendering and gate tests read (run by hand):

    .venv/bin/python tests/data/make_reports.py [NAME ...]

Each is one real `tcdoctor analyze` of a target in tests/targets with the options the tests that
used to run it gave (imported from those tests, not copied), written to
tests/data/schema<N>_<name>.json (`conftest.saved_report(name)`; N is the report's SCHEMA_VERSION).
Run it after a schema version change: the files of the old version stay, as reports users still
have, and tests/test_schema.py checks every file here against the shipped schema. The tests never
run it; a test whose subject is the analysis itself runs its own.

Pitfall: the reports hold this checkout's absolute paths and this machine's environment and figures.
A test may read the figures but must not assert on the path of the checkout or on its own machine's
environment (a fresh clone elsewhere reads the same files).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, TESTS)

from conftest import ROOT, plain_env, saved_report  # noqa: E402
from test_gate import CHEAP as GATE_CHEAP  # noqa: E402
from test_generation import GEN_SAMPLE, GEN_SAVED  # noqa: E402
from test_reports import INJECT, INJECT_OPTIONS  # noqa: E402
from test_serving_report import SERVE_MLP, SERVE_SAVED, SERVE_SAVED_WARMED  # noqa: E402

# name -> (target, options): what the tests that read the file used to analyse themselves
REPORTS = {
    # test_reports.py's renderers: escaping, one graph break, its tried fix and verified patch
    "inject": (INJECT, list(INJECT_OPTIONS)),
    # test_gate.py's `check --report` on GitHub: two graph breaks and recompiles in gate_model.py
    "gate_base": (os.path.join(ROOT, "tests", "targets", "gate_base.py") + ":build", GATE_CHEAP),
    # test_serving_report.py's serving section (--traffic): the section in every format, its
    # verdict, check's serving checks on the raw traffic and on the one warmed up first
    "serving": (f"{SERVE_MLP}:build_limited", list(SERVE_SAVED)),
    "serving_warmed": (f"{SERVE_MLP}:build_warmed", list(SERVE_SAVED_WARMED)),
    # test_generation.py's generation section: its rendering and check's generation limits
    "generation": (f"{GEN_SAMPLE}:build", list(GEN_SAVED)),
}


def write(name: str, target: str, options: list[str]) -> str:
    """Analyse `target` in a scratch folder (the patches file `analyze` writes beside the JSON stays
    there) and copy the JSON report to tests/data. Returns the path written; exits with analyze's
    output on a failed analysis."""
    path = str(saved_report(name))
    with tempfile.TemporaryDirectory(prefix="tcdoctor-saved-") as cwd:
        cmd = [sys.executable, "-m", "tcdoctor", "analyze", target, *options]
        p = subprocess.run(
            [*cmd, "--json", "r.json", "--html", ""],
            cwd=cwd,
            env=plain_env(),
            capture_output=True,
            text=True,
        )
        if p.returncode != 0:
            sys.exit(f"{name}: analyze exited {p.returncode}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
        _drop_scratch_paths(os.path.join(cwd, "r.json"), path)
    return path


def _drop_scratch_paths(src: str, dst: str) -> None:
    """Copy the report, less the warm-up script's path: `analyze` wrote that script into the
    scratch folder, which is gone (and a link to it would differ with every folder the HTML is
    rendered to); the report then says its text is in the JSON."""
    from tcdoctor.report.model import Report

    report = Report.load(src)
    warmup = report.serving.warmup if report.serving else None
    if warmup is None or warmup.script_path is None:
        shutil.copy(src, dst)
        return
    warmup.script_path = None
    report.save(dst)


def main(names: list[str]) -> None:
    """Every report, or those named on the command line."""
    unknown = sorted(set(names) - set(REPORTS))
    if unknown:
        sys.exit(f"no saved report named {', '.join(unknown)} (known: {', '.join(REPORTS)})")
    for name, (target, options) in REPORTS.items():
        if not names or name in names:
            print(write(name, target, options))


if __name__ == "__main__":
    main(sys.argv[1:])
