"""`tcdoctor sweep --ray` against a real Ray cluster (ray==2.60.0, the test extra's), no mocks.

One cluster for the module: `ray start --head` with two CPUs on 127.0.0.1, its temp folder and its
token in a folder of the test's own (never ~/.ray); its processes are stopped at the end whatever
happened (the `ray start --block` process, then every process naming the cluster's folder, by
pid). Cheap targets (tests/targets/sweep/), the eager backend, one process per analysis.

What is compared with the local sweep is what does not rest on timing (status, exit code, graph
breaks and where, recompiles, numerics, the failure's reason): the verdict rests on the speedup's
interval, which a loaded machine moves (docs/cluster.md gives the by-hand comparison).
"""

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import psutil
import pytest
from conftest import ROOT, plain_env, run_cli

SWEEP_TARGETS = os.path.join("tests", "targets", "sweep")
OPTS = [
    "--backend", "eager", "--threads", "1", "--budget", "0.2", "--profile-budget", "0.2",
    "--no-fixes", "--no-warm", "--processes", "1", "--timeout", "120",
]  # fmt: skip
COMPARED = ("target", "status", "exit_code", "graph_breaks", "recompiles", "numerics", "reason")


def target(name: str) -> str:
    return os.path.join(SWEEP_TARGETS, f"{name}.py") + ":build"


class RayCluster:
    """A `ray start --head --block` cluster: its address, the environment that reaches it (the
    token's path), its folder; `stop()` ends every process it started."""

    def __init__(self, cpus: int = 2):
        self.temp = tempfile.mkdtemp(prefix="tcd-rt-")  # short: Ray's socket paths must fit
        token = os.path.join(self.temp, "auth_token")
        with open(token, "w") as fh:
            fh.write(secrets.token_hex(32))
        self.env = {**plain_env(), "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": token}
        self.env.pop("RAY_ADDRESS", None)
        with socket_port() as port:
            self.address = f"127.0.0.1:{port}"
        self.log = os.path.join(self.temp, "head.log")
        ray = os.path.join(os.path.dirname(sys.executable), "ray")
        with open(self.log, "wb") as log:
            self.head = subprocess.Popen(
                [
                    ray, "start", "--head", "--block", "--node-ip-address", "127.0.0.1",
                    "--port", str(port), "--num-cpus", str(cpus), "--include-dashboard=false",
                    "--temp-dir", self.temp, "--disable-usage-stats",
                ],
                stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True,
            )  # fmt: skip

    def wait_up(self, timeout: float = 120) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with open(self.log, "rb") as fh:
                if b"Ray runtime started" in fh.read():
                    return
            assert self.head.poll() is None, open(self.log).read()
            time.sleep(0.1)
        raise AssertionError(f"the test cluster did not start in {timeout} s")

    def processes(self) -> list[psutil.Process]:
        """This cluster's processes: the head's descendants and any naming its folder."""
        found = {}
        try:
            for p in [psutil.Process(self.head.pid), *psutil.Process(self.head.pid).children(True)]:
                found[p.pid] = p
        except psutil.NoSuchProcess:
            pass
        for p in psutil.process_iter(["cmdline"]):
            if any(self.temp in part for part in p.info["cmdline"] or ()):
                found[p.pid] = p
        return list(found.values())

    def stop(self) -> None:
        left = self.processes()
        if self.head.poll() is None:
            self.head.send_signal(signal.SIGTERM)
            try:
                self.head.wait(20)
            except subprocess.TimeoutExpired:
                pass
        for p in left + self.processes():
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        self.head.wait()
        shutil.rmtree(self.temp, ignore_errors=True)


class socket_port:
    """A free TCP port on 127.0.0.1 (`with socket_port() as port`)."""

    def __enter__(self) -> int:
        import socket

        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        return self.s.getsockname()[1]

    def __exit__(self, *exc) -> None:
        self.s.close()


def _cmd(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []


def analyses_on(cluster: RayCluster) -> list[psutil.Process]:
    """The analysis processes (sweep/node.py) this cluster's workers started (a worker's process
    title is Ray's, `ray::run_target`: the analysis is found by its own command line)."""
    return [p for p in cluster.processes() if "tcdoctor.sweep.node" in " ".join(_cmd(p))]


@pytest.fixture(scope="module")
def cluster():
    c = RayCluster()
    try:
        c.wait_up()
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def local_rows(tmp_path_factory):
    """The local sweep of the three targets, the rows the Ray sweep must give."""
    out = tmp_path_factory.mktemp("local") / "sweep"
    names = ("clean", "graph_break", "raises")
    rc, _, err = run_cli(ROOT, "sweep", *map(target, names), "--out", str(out), *OPTS)
    assert rc == 4, err
    return json.loads((out / "sweep.json").read_text())["rows"]


def _rows(out) -> list:
    return sorted(out.glob("*/row.json"))


def _same(row: dict) -> dict:
    breaks = {(os.path.basename(b["file"]), b["line"], b["reason"]) for b in row["breaks"]}
    return {
        **{k: row.get(k) for k in COMPARED},
        "breaks": breaks,
        "timed": row["speedup"] is not None,
    }


def test_driver_killed_mid_sweep_resumes_and_gives_the_local_sweeps_rows(
    cluster, local_rows, tmp_path
):
    targets = [target("raises"), target("clean"), target("graph_break")]
    out = tmp_path / "ray"
    cmd = [sys.executable, "-m", "tcdoctor", "sweep", *targets, "--out", str(out)]
    cmd += ["--ray", cluster.address, *OPTS]
    driver = subprocess.Popen(cmd, cwd=ROOT, env=cluster.env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    # the overview is rewritten as each target ends: killed once it has the first row
    while not (out / "sweep.json").exists() and time.monotonic() < deadline:
        assert driver.poll() is None, driver.stderr.read()
        time.sleep(0.05)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    done = {f.parent.name: f.read_bytes() for f in _rows(out)}
    assert 1 <= len(done) < 3, driver.stderr.read()
    partial = json.loads((out / "sweep.json").read_text())
    assert 1 <= len(partial["rows"]) <= len(done) and partial["cluster"] == cluster.address
    assert {r["slug"] for r in partial["rows"]} <= set(done)
    # Ray ends the dead driver's tasks; their analyses stop with their workers
    end = time.monotonic() + 60
    while analyses_on(cluster) and time.monotonic() < end:
        time.sleep(0.5)
    assert not analyses_on(cluster)

    rc, stdout, err = run_cli(
        ROOT, "sweep", *targets, "--out", str(out), "--ray", cluster.address, *OPTS, env=cluster.env
    )
    lines = [ln for ln in err.splitlines() if ln.startswith("sweep ")]
    assert sum("done before" in ln for ln in lines) == len(done) and len(lines) == 3, err
    assert {f.parent.name: f.read_bytes() for f in _rows(out) if f.parent.name in done} == done
    data = json.loads((out / "sweep.json").read_text())
    assert rc == 4 and [r["target"] for r in data["rows"]] == targets
    by_target = {r["target"]: r for r in data["rows"]}
    for local in local_rows:
        assert _same(by_target[local["target"]]) == _same(local), local["target"]
    # each row says where it ran and with what; the workers' versions are the driver's
    assert data["driver"]["torch"] and not [ln for ln in stdout.splitlines() if "versions:" in ln]
    # the test cluster's workers run at Ray's niceness 15: each analysis was brought back to the
    # driver's where lowering is allowed (root), and the overview says so where it is not
    nice = [row["ran_on"]["nice"] for row in data["rows"]]
    if os.geteuid() == 0:
        assert nice == [data["driver_nice"]] * 3 and "niceness:" not in stdout, (nice, stdout)
    else:
        assert all(n > data["driver_nice"] for n in nice) and "niceness:" in stdout, stdout
    for row in data["rows"]:
        assert row["ran_on"]["node_id"] and row["ran_on"]["cpus"] == 1, row
        assert row["versions"] == data["driver"], row
        if row["json"]:  # the report came back, and names its node
            report = json.loads((out / row["json"]).read_text())
            assert report["environment"]["ray"]["node_id"] == row["ran_on"]["node_id"]
            assert report["environment"]["threads"] == 1 and (out / row["report"]).is_file()


def test_a_worker_killed_mid_target_is_retried_and_its_row_is_complete(cluster, tmp_path):
    out = tmp_path / "ray"
    cmd = [sys.executable, "-m", "tcdoctor", "sweep", target("clean"), "--out", str(out)]
    cmd += ["--ray", cluster.address, *OPTS]
    driver = subprocess.Popen(
        cmd, cwd=ROOT, env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        while not analyses_on(cluster) and time.monotonic() < deadline:
            time.sleep(0.05)
        (analysis,) = analyses_on(cluster)
        worker = analysis.parent()
        time.sleep(1.0)  # mid-target: the analysis is under way
        os.kill(worker.pid, signal.SIGKILL)
        # the first try's analysis stops when its worker is gone (it watches its parent)
        analysis.wait(30)
        stdout, err = driver.communicate(timeout=300)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 0, err
    (row,) = json.loads((out / "sweep.json").read_text())["rows"]
    assert row["status"] == "complete" and row["graph_breaks"] == 0 and row["speedup"], row
    assert row["ran_on"]["pid"] != worker.pid  # the try that produced it ran on another worker
    assert json.loads((out / row["json"]).read_text())["errors"] == []


def test_a_target_whose_worker_dies_on_every_try_is_a_row_with_the_why(cluster, tmp_path):
    """Each of the three tries' workers killed as soon as its analysis starts: the row says so,
    and the sweep still writes its overview (exit 4, as for any target without a report)."""
    out = tmp_path / "ray"
    cmd = [sys.executable, "-m", "tcdoctor", "sweep", target("clean"), "--out", str(out)]
    cmd += ["--ray", cluster.address, *OPTS]
    driver = subprocess.Popen(
        cmd, cwd=ROOT, env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    killed = []
    try:
        deadline = time.monotonic() + 180
        while driver.poll() is None and time.monotonic() < deadline:
            for analysis in analyses_on(cluster):
                worker = analysis.parent()
                if worker is not None and worker.pid not in killed:
                    killed.append(worker.pid)
                    worker.kill()
            time.sleep(0.05)
        stdout, err = driver.communicate(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 4 and len(killed) == 3, (killed, err)
    (row,) = json.loads((out / "sweep.json").read_text())["rows"]
    assert row["status"] == "failed" and row["exit_code"] == 4, row
    assert row["reason"].startswith("the Ray task failed on every try (3): "), row
    assert (
        json.loads((out / row["slug"] / "row.json").read_text())["row"]["reason"] == row["reason"]
    )


def test_a_gpu_the_cluster_lacks_is_one_line_never_a_wait(cluster, tmp_path):
    began = time.monotonic()
    rc, stdout, err = run_cli(
        ROOT, "sweep", target("clean"), "--out", str(tmp_path / "o"), "--ray", cluster.address,
        "--ray-gpus", "1", *OPTS, env=cluster.env, timeout=120,
    )  # fmt: skip
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "no node of the Ray cluster has 1 CPU(s) and 1 GPU(s)" in err and "0 GPU" in err
    assert time.monotonic() - began < 60 and not (tmp_path / "o" / "sweep.json").exists()


def test_ray_options_without_ray_and_a_ray_merge_are_one_line(tmp_path):
    rc, _, err = run_cli(ROOT, "sweep", target("clean"), "--ray-gpus", "1", "--out", str(tmp_path))
    assert rc == 2 and "tcdoctor: error: --ray-gpus place targets on a Ray cluster" in err
    rc, _, err = run_cli(
        ROOT, "sweep", target("clean"), "--ray", "--threads", "2", "--ray-cpus", "1"
    )
    assert rc == 2 and "--threads 2 and --ray-cpus 1 differ" in err and len(err.splitlines()) == 1


def test_ray_is_never_imported_without_ray():
    code = (
        "import sys; from click.testing import CliRunner; import tcdoctor.cli as c; "
        "import tcdoctor.sweep.remote, tcdoctor.sweep.node, tcdoctor.sweep.cluster; "
        "r = CliRunner().invoke(c.main, ['sweep', '--help']); assert r.exit_code == 0; "
        "print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_ray_address_or_first_target():
    from tcdoctor.sweep.remote import RaySpec

    assert RaySpec.of("m/a.py:build", ("b.py:f",), None, 0, None).targets == (
        "m/a.py:build",
        "b.py:f",
    )
    assert RaySpec.of("m/a.py:build", (), None, 0, None).address == "local"
    for address in ("auto", "127.0.0.1:6379", "ray://head:10001", "head-0.svc:6379"):
        assert RaySpec.of(address, ("a.py:f",), 2, 1, 2) == RaySpec(address, ("a.py:f",), 2, 1)
    assert RaySpec.of("auto", (), None, 0, 4).cpus == 4  # --threads is the task's CPUs


def test_an_analysis_is_brought_back_to_the_drivers_niceness_never_below_it():
    """run_at lowers the worker's niceness (Ray's 15) to the driver's where allowed (root), never
    raises it; the niceness it returns is the one the analysis runs at."""
    base = os.getpriority(os.PRIO_PROCESS, 0)
    code = (
        "import os; from tcdoctor.sweep.node import run_at; os.setpriority(os.PRIO_PROCESS, 0, 15); "
        f"print(run_at({base}), run_at(19), os.getpriority(os.PRIO_PROCESS, 0))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    got = base if os.geteuid() == 0 else 15
    assert out.stdout.split() == [str(got)] * 3, out.stderr


def test_an_analysis_gets_the_drivers_omp_num_threads_not_rays():
    """Ray sets OMP_NUM_THREADS to a task's CPUs in its workers; the analysis it starts gets the
    driver's (none where the driver had none), as a local sweep's analysis has."""
    from tcdoctor.sweep.node import THREADS_UNSET, driver_threads

    worker = {"OMP_NUM_THREADS": "1", "PATH": "/bin"}
    assert driver_threads(worker, THREADS_UNSET) == {"PATH": "/bin"}
    assert driver_threads(worker, "4") == {"OMP_NUM_THREADS": "4", "PATH": "/bin"}
    assert driver_threads({"PATH": "/bin"}, THREADS_UNSET) == {"PATH": "/bin"}
    assert worker["OMP_NUM_THREADS"] == "1"  # the worker's own environment is left as it is


def _signal_state(code: str, **popen) -> tuple[int, int]:
    """SigBlk and SigIgn (bit masks) of a grandchild started by `python -c code`."""
    grand = "print(*[l.split()[1] for l in open('/proc/self/status') if l.startswith(('SigBlk', 'SigIgn'))])"
    script = f"{code}; import subprocess, sys; subprocess.run([sys.executable, '-c', {grand!r}])"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, **popen
    )
    assert out.returncode == 0, out.stderr
    blocked, ignored = out.stdout.split()
    return int(blocked, 16), int(ignored, 16)


def _bit(sig: signal.Signals) -> int:
    return 1 << (sig - 1)


def test_an_analysis_started_by_a_ray_worker_has_a_plain_processs_signals():
    """A Ray worker blocks SIGINT and ignores SIGINT and SIGQUIT, and both pass through exec: the
    analysis process (sweep/node.py main) resets them, so the user's model runs with the signals a
    plain process has. The worker's state is planted here as Ray leaves it. The bits are read, not
    whole masks: how pytest itself was started (`nohup`, a background job of a script: SIGHUP,
    SIGINT, SIGQUIT ignored) is this test's environment, not the analysis's."""

    def as_ray_worker() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)

    ray_bits = _bit(signal.SIGINT) | _bit(signal.SIGQUIT)
    blocked, ignored = _signal_state("pass", preexec_fn=as_ray_worker)
    assert (
        blocked & _bit(signal.SIGINT) and ignored & ray_bits == ray_bits
    )  # planted, and it passes on
    fixed = "from tcdoctor.sweep.node import plain_signals; plain_signals()"
    blocked, ignored_fixed = _signal_state(fixed, preexec_fn=as_ray_worker)
    assert blocked == 0 and ignored_fixed & ray_bits == 0
    assert ignored_fixed == ignored & ~ray_bits  # every other signal as it was (SIGHUP under nohup)


def test_an_analysis_timed_above_the_drivers_niceness_is_named_in_the_overview():
    from tcdoctor.render.markdown import MarkdownRenderer
    from tcdoctor.report.sweep import Placement, Sweep, SweepRow

    rows = [
        SweepRow(target=f"{t}.py:f", slug=f"{t}.py--f", exit_code=0, duration_s=1.0,
                 ran_on=Placement(node="n1", node_ip="10.0.0.1", cpus=1, pid=7, nice=nice))
        for t, nice in (("a", 0), ("b", 15), ("c", 15), ("d", None))
    ]  # fmt: skip
    sweep = Sweep(torch="2.13.0", targets=[r.target for r in rows], rows=rows, driver_nice=0)
    assert len(sweep.niceness_notes) == 1 and sweep.niceness_notes[0].startswith(
        "b.py:f, c.py:f analysed at niceness 15 (the driver runs at 0)"
    )
    assert "niceness: b.py:f, c.py:f analysed at niceness 15" in MarkdownRenderer().render_sweep(
        sweep
    )
    again = Sweep.from_dict(json.loads(sweep.to_json()))
    assert [r.ran_on.nice for r in again.rows] == [0, 15, 15, None] and again.driver_nice == 0
    assert "nice" not in json.loads(sweep.to_json())["rows"][3]["ran_on"]  # unset: not written
    assert Sweep(rows=rows).niceness_notes == []  # a local sweep has no driver's niceness


def test_merge_joins_a_ray_shard_with_a_local_one_and_says_mixed_versions(tmp_path):
    """A Ray shard (rows with where they ran and with what) and a local shard merged: every row,
    the Ray rows' nodes in the overview; a Ray sweep whose worker had another torch says so."""
    from tcdoctor.render.markdown import MarkdownRenderer
    from tcdoctor.report.sweep import Placement, Sweep, SweepRow, Versions
    from tcdoctor.sweep.merge import merge

    same = Versions(python="3.11.7", tcdoctor="0.1.0", torch="2.13.0", cuda=None)
    ray_rows = [
        SweepRow(target="a.py:f", slug="a.py--f", exit_code=0, duration_s=1.0, versions=same,
                 ran_on=Placement(node="n1", node_ip="10.0.0.1", gpus=["0"], cpus=1, pid=7)),
        SweepRow(target="c.py:f", slug="c.py--f", exit_code=0, duration_s=1.0,
                 versions=Versions(python="3.11.7", tcdoctor="0.1.0", torch="2.12.0"),
                 ran_on=Placement(node="n2", node_ip="10.0.0.2", cpus=1, pid=8)),
    ]  # fmt: skip
    targets = ["a.py:f", "b.py:f", "c.py:f"]
    ray_shard = Sweep(torch="2.13.0", targets=targets, rows=ray_rows, driver=same, cluster="auto")
    local = Sweep(torch="2.13.0", targets=targets, rows=[SweepRow(target="b.py:f", exit_code=0)])
    assert ray_shard.version_mismatches == ["torch 2.12.0 (the driver has 2.13.0) analysed c.py:f"]
    md = MarkdownRenderer().render_sweep(ray_shard)
    assert "versions: torch 2.12.0 (the driver has 2.13.0) analysed c.py:f" in md
    merged = merge([("ray", ray_shard), ("local", local)])
    assert [r.target for r in merged.rows] == targets and merged.complete
    assert [r.ran_on.node if r.ran_on else None for r in merged.rows] == ["n1", None, "n2"]
    md = MarkdownRenderer().render_sweep(merged)
    assert "n1 (10.0.0.1), GPU 0" in md and "ran on" in md
    again = Sweep.from_dict(json.loads(merged.to_json()))
    assert again.rows[0].ran_on == ray_rows[0].ran_on and again.rows[2].versions.torch == "2.12.0"
