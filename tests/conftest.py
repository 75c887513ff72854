import fcntl
import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

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


# -- two test workers on two cores, timing tests alone -----------------------------------------
# The README's test command runs two pytest-xdist workers (`-n 2`): most tests wait on one
# single-threaded child at a time, so the second core was idle. A test whose assertions rest on
# wall-clock time (a speedup, a guard cost in µs, a process not excluded as disturbed, a time limit)
# is marked `timing` and runs with no other test beside it: it takes the machine exclusively, every
# other test takes it shared. A turnstile lock in front keeps a waiting timing test from being
# starved by the other worker's stream of shared holders.
#
# Scheduling: every timing test is in one work unit, handed out first (TimingFirst below), so one
# worker runs them back to back and keeps the machine from the first to the last (the other worker
# pauses once, not once per timing test, and never starts a long test in a gap between two of
# them); every other test goes with its file (`--dist loadfile`), so a module's fixtures run once.
# No module fixture serves both a timing and a plain test (it would run on both workers). Without
# xdist (one file while you work) nothing is locked or regrouped.


def _run_path() -> Path | None:
    """Where this xdist run's processes share files (None outside xdist): named by the run's id,
    which the controller fixes (pytest_configure) and hands to its workers."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    return Path(tempfile.gettempdir()) / f"tcdoctor-tests-{run}" if run else None


@functools.cache
def _run_dir() -> Path | None:
    """The run's shared directory, made on first use (None outside xdist)."""
    d = _run_path()
    if d is not None:
        d.mkdir(exist_ok=True)
    return d


def _timing(item) -> bool:
    return item is not None and item.get_closest_marker("timing") is not None


def _controller(config) -> bool:
    """Whether this process is the controller of an xdist run with workers (`-n`)."""
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


def pytest_configure(config):
    """The xdist controller names the run (its workers get the same id) so that it finds the list
    of timing tests the workers write at collection."""
    if _controller(config) and getattr(config.option, "dist", None) == "loadfile":
        config.option.testrunuid = config.option.testrunuid or uuid.uuid4().hex
        os.environ["PYTEST_XDIST_TESTRUNUID"] = config.option.testrunuid


def pytest_unconfigure(config):
    """The controller removes the run's shared directory (locks, the timing list, shared analyses)
    once its workers are gone."""
    d = _run_path()
    if _controller(config) and d is not None:
        shutil.rmtree(d, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """Under xdist, the timing tests' ids where the controller's scheduler reads them (TimingFirst
    makes them one work unit and deals it first)."""
    d = _run_dir()
    if d is not None:
        ids = "".join(item.nodeid + "\n" for item in items if _timing(item))
        tmp = d / f"timing.{os.getpid()}"
        tmp.write_text(ids)
        tmp.replace(d / "timing")  # both workers write the same list


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, except that the timing tests are one work unit of their own, dealt first."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class TimingFirst(LoadFileScheduling):
        timing: set[str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.timing is None:  # first asked once every worker has collected
                self.timing = set((_run_dir() / "timing").read_text().splitlines())
            return "timing" if nodeid in self.timing else super()._split_scope(nodeid)

        def _assign_work_unit(self, node) -> None:
            # xdist deals the largest units first; the timing unit goes before every other
            if "timing" in self.workqueue:
                self.workqueue.move_to_end("timing", last=False)
            super()._assign_work_unit(node)

    return TimingFirst(config, log)


_held: list = []  # the lock files while this worker holds the machine across timing tests


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Hold the machine (exclusively for a `timing` test, shared otherwise) through the test's
    setup, call and teardown, module-scoped fixtures included. A timing test followed by another
    keeps it exclusively: the other worker cannot start a test in between."""
    d = _run_dir()
    if d is None:
        yield
        return
    alone = _timing(item)
    if not _held:
        turnstile, machine = open(d / "turnstile", "a"), open(d / "machine", "a")
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(machine, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        _held.extend((turnstile, machine))
    try:
        yield
    finally:
        if not (alone and _timing(nextitem)):
            for f in reversed(_held):
                fcntl.flock(f, fcntl.LOCK_UN)
                f.close()
            _held.clear()


@pytest.fixture(scope="session")
def shared_analysis(tmp_path_factory):
    """`analyze(target, *options)` → (the JSON report as a dict, stdout): one real `tcdoctor analyze`
    per distinct (target, options) in the whole test run, however many tests (in any file, on
    either xdist worker) read it: the first asker runs it under a file lock, later ones read its
    files. Each call parses the saved report afresh, so a test may change what it got. A run that
    fails fails every test that asks for it, with its output."""
    shared = _run_dir() or tmp_path_factory.mktemp("shared-analyses")

    def analyze(target: str, *options: str, timeout: int = 600) -> tuple[dict, str]:
        cwd = shared / hashlib.sha256(repr((target, *options)).encode()).hexdigest()[:16]
        cwd.mkdir(exist_ok=True)
        with open(cwd / "lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (cwd / "out.txt").exists():
                args = ("analyze", target, *options, "--json", "r.json", "--html", "")
                rc, out, err = run_cli(cwd, *args, timeout=timeout)
                assert rc == 0, out[-3000:] + err[-3000:]
                (cwd / "out.txt").write_text(out)
        return json.loads((cwd / "r.json").read_text()), (cwd / "out.txt").read_text()

    return analyze
