import functools
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "samples")
sys.path.insert(0, SAMPLES)


# One analysis process: the cold one times the main row alone (no warm process, no timing-only
# ones), for tests about anything but the speedup across processes.
ONE_PROCESS = ("--no-warm", "--processes", "1")


def sample(name: str) -> str:
    return os.path.join(SAMPLES, name)


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
