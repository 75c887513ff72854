"""Write the saved reports of this schema version that rendering and gate tests read (run by hand):

    .venv/bin/python tests/data/make_reports.py

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
from test_reports import INJECT, INJECT_OPTIONS  # noqa: E402

# name -> (target, options): what the tests that read the file used to analyse themselves
REPORTS = {
    # test_reports.py's renderers: escaping, one graph break, its tried fix and verified patch
    "inject": (INJECT, list(INJECT_OPTIONS)),
    # test_gate.py's `check --report` on GitHub: two graph breaks and recompiles in gate_model.py
    "gate_base": (os.path.join(ROOT, "tests", "targets", "gate_base.py") + ":build", GATE_CHEAP),
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
        shutil.copy(os.path.join(cwd, "r.json"), path)
    return path


def main() -> None:
    for name, (target, options) in REPORTS.items():
        print(write(name, target, options))


if __name__ == "__main__":
    main()
