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

# The test suite's ISA seeding. Inductor's CPU ISA probe (8-9 s of test builds per empty cache
# folder on a 2-core machine) is paid once per machine and torch version, not once per analysis:
# every analysis the tests run (their cold processes and in-process analyses too, which measure
# other things) starts from this machine's probed folder (tcdoctor/run/isa_seed.py), which the
# first analysis that pays the probe keeps. That is `Options.isa_probe` "none" (`--isa-probe`),
# whose default the environment variable sets: set here, at import, so that every Options the
# tests make, the xdist workers and every CLI subprocess take it; a test of the probe itself sets
# its own (tests/test_isa_probe.py, tests/test_isa_seed.py, tests/test_measurements.py).
os.environ.setdefault("TCDOCTOR_ISA_PROBE", "none")  # tcdoctor.options.ISA_PROBE_ENV


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


DATA = Path(ROOT) / "tests" / "data"


def saved_report(name: str) -> Path:
    """A saved report of this schema version in tests/data, written by tests/data/make_reports.py
    (run by hand; never by the tests): for tests whose subject is what reads or draws a report (the
    renderers, `check --report`), not the analysis that writes one."""
    from tcdoctor.report.model import SCHEMA_VERSION

    return DATA / f"schema{SCHEMA_VERSION}_{name}.json"


def plain_env() -> dict:
    """This environment less GitHub Actions' variables (a test run on GitHub writes no summary)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}


def github_env(tmp_path, workspace=None, **extra) -> dict:
    """This environment as GitHub Actions sets it for a step: the step summary file in
    `tmp_path`, the workspace `workspace` (default `tmp_path`), plus `extra` variables."""
    env = plain_env()
    env.update(
        GITHUB_ACTIONS="true",
        GITHUB_WORKSPACE=str(tmp_path if workspace is None else workspace),
        GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"),
        **extra,
    )
    return env


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


# -- two test workers on two cores; timing tests alone, in a run of their own -----------------------
# The README's test command runs pytest twice: `-m timing` (the tests whose assertions rest on
# wall-clock time: a speedup, a guard cost in µs, a time limit), one after another with no other test
# beside them, then `-n 2 -m "not timing"`: two pytest-xdist workers, each given whole files
# (`--dist loadfile` in pyproject.toml), so a module's fixtures run once. A module fixture serves
# timing tests or plain ones, never both (it would run once in each invocation). A file run alone
# with `-n 2` runs its timing tests beside its others: their time assertions may then fail.


def _run_path() -> Path | None:
    """Where this xdist run's processes share files (None outside xdist): named by the run's id,
    which the controller fixes (pytest_configure) and xdist hands to its workers."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    return Path(tempfile.gettempdir()) / f"tcdoctor-tests-{run}" if run else None


@functools.cache
def _run_dir() -> Path | None:
    """The run's shared directory, made on first use (None outside xdist)."""
    d = _run_path()
    if d is not None:
        d.mkdir(exist_ok=True)
    return d


def _controller(config) -> bool:
    """Whether this process is the controller of an xdist run with workers (`-n`)."""
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


def pytest_configure(config):
    """The xdist controller names the run (`--testrunuid`, which its workers get) so that it knows
    the shared directory to remove at the end, and hands out files in the workers' collection order
    (`heavy_first`), not xdist's default of the files with most tests first."""
    if _controller(config):
        config.option.testrunuid = config.option.testrunuid or uuid.uuid4().hex
        os.environ["PYTEST_XDIST_TESTRUNUID"] = config.option.testrunuid
        config.option.loadscopereorder = False  # xdist's --no-loadscope-reorder


# The files that take longest on one worker, longest first (each timed alone on this shared 2-core
# machine on 2026-11-29, at load 6-8 unless said: about twice CI's seconds there; the closing note
# of branch `citime` has the commands). xdist hands a worker its next file when it has two tests or fewer
# left; by default it hands out the files with the most tests first, which put most of these (few
# tests, minutes each) last, one worker running them while the other had nothing left. Longest
# first, the short files fill in beside them. A file not listed keeps xdist's own order (most tests
# first) after these; a new file that takes minutes belongs here. Not test_sweep.py (170 s at load
# ~4): its targets' 25 s --timeout is kept clear of these, as before (it has 18 tests: xdist's own
# order hands it out early among the others).
HEAVY_FIRST = (
    "test_real_models.py",  # 208 s at load ~2; 831 s at load ~9 (the last closing note)
    "test_drift.py",  # 421 s (load 2 to 7); 188 s at load ~2
    "test_cure.py",  # 493 s at load ~7, 338 s at load ~5
    "test_strategies.py",  # 397 s (its timing tests not counted)
    "test_miscompile_inductor.py",  # 293 s
    "test_ddp_mlp_counts.py",  # 213 s
    "test_experiment_cache.py",  # 173 s
    "test_sweep_ray.py",  # 147 s with test_docs (branch ray's note)
    "test_memory_held.py",  # 118 s
    "test_recompiles.py",  # 80 s
    "test_timing_fidelity.py",  # 61 s
    "test_first_call_recompiles.py",  # 49 s
    "test_helper_shapes.py",  # ~40 s (not timed here)
)


def heavy_first(items: list) -> list:
    """`items` with the files of HEAVY_FIRST first, in its order, then every other file, most
    tests first (xdist's default order); each file's tests stay together and in their own order."""
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)

    def cost(path: str) -> tuple[int, int]:
        name = os.path.basename(path)
        heavy = HEAVY_FIRST.index(name) if name in HEAVY_FIRST else len(HEAVY_FIRST)
        return heavy, -len(files[path])

    return [item for path in sorted(files, key=cost) for item in files[path]]


def pytest_collection_modifyitems(config, items):
    """On an xdist worker, the files in `heavy_first` order (the controller hands them out in the
    order the workers collected them); a run without workers keeps pytest's order."""
    if hasattr(config, "workerinput"):
        items[:] = heavy_first(items)


def pytest_unconfigure(config):
    """The controller removes the run's shared directory (the shared analyses) once its workers are
    gone."""
    d = _run_path()
    if _controller(config) and d is not None:
        shutil.rmtree(d, ignore_errors=True)


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
