import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "samples")
sys.path.insert(0, SAMPLES)


def sample(name: str) -> str:
    return os.path.join(SAMPLES, name)


@pytest.fixture
def cli(tmp_path):
    """Run the real CLI in a subprocess; returns (exit code, stdout, stderr)."""
    import subprocess

    def run(*args, timeout=300):
        p = subprocess.run(
            [sys.executable, "-m", "tcdoctor", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return p.returncode, p.stdout, p.stderr

    return run
