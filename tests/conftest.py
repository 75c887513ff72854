import copy
import functools
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "samples")
sys.path.insert(0, SAMPLES)


# One analysis process: the cold one times the main row alone (no warm process, no timing-only
# ones), for tests about anything but the speedup across processes.
ONE_PROCESS = ("--no-warm", "--processes", "1")
# The cold and the warm process, no timing-only one: for tests that read what the warm process
# measures (warm compile, profile, guard cost, traces, experiments run there) but not the speedup
# across processes. (`--processes` is a cap; the cold and warm processes always time.)
NO_TIMING_PROCESSES = ("--processes", "1")
# A cheap analysis for tests of the rules, not of the kernels: aot_eager, one thread, short timing,
# one process, no submodule children, no progress lines. Tests that analyse the same target with
# exactly these options share one run (`shared_analysis`).
CHEAP = (
    "--threads", "1", "--backend", "aot_eager", "--budget", "0.3", *ONE_PROCESS,
    "--no-submodules", "--quiet",
)  # fmt: skip


def sample(name: str) -> str:
    return os.path.join(SAMPLES, name)


def plain_env() -> dict:
    """This environment less GitHub Actions' variables (a test run on GitHub writes no summary)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}


def run_cli(cwd, *args, timeout=300, env=None):
    """The real CLI in a subprocess run in `cwd` (`env`: its whole environment, default this
    process's); returns (exit code, stdout, stderr)."""
    import subprocess

    p = subprocess.run(
        [sys.executable, "-m", "tcdoctor", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    return p.returncode, p.stdout, p.stderr


@pytest.fixture
def cli(tmp_path):
    """`run_cli` in this test's tmp_path."""
    return functools.partial(run_cli, tmp_path)


@pytest.fixture(scope="session")
def shared_analysis(tmp_path_factory):
    """`analyze(target, *options)` → (the JSON report as a dict, stdout): one real `tcdoctor analyze`
    per distinct (target, options) in the whole session, however many tests (in any file) read it.
    Each call returns its own deep copy, so a test may change what it got. A run that fails fails
    every test that asks for it, with its output."""
    runs: dict[tuple[str, ...], tuple[dict, str]] = {}

    def analyze(target: str, *options: str, timeout: int = 600) -> tuple[dict, str]:
        key = (target, *options)
        if key not in runs:
            cwd = tmp_path_factory.mktemp("shared-analysis")
            args = ("analyze", target, *options, "--json", "r.json", "--html", "")
            rc, out, err = run_cli(cwd, *args, timeout=timeout)
            assert rc == 0, out[-3000:] + err[-3000:]
            runs[key] = (json.loads((cwd / "r.json").read_text()), out)
        return copy.deepcopy(runs[key])

    return analyze
