"""`tcdoctor sweep`: four small targets swept once per module (clean, a graph break, build() raises, a
hang under a short --timeout) with the eager backend; the overview, resume after kill -9, shards
and merge, the baseline and the gate are derived from that sweep or from cheap failing targets."""

import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

import pytest
from conftest import ROOT, plain_env, run_cli
from test_reports import CHROMIUM, chromium  # the report tests' headless-browser helper

SWEEP_TARGETS = os.path.join("tests", "targets", "sweep")
GLOB = os.path.join(SWEEP_TARGETS, "*.py") + ":build"
# cheap: eager backend, one thread, short timing and profile, no experiments; the timeout is what the
# hanging target costs, and leaves the others room on a busy machine (each of them took 14-15 s with
# five test runs sharing 2 cores, about 7 s of CPU)
OPTS = [
    "--backend", "eager", "--threads", "1", "--budget", "0.2", "--profile-budget", "0.2",
    "--no-fixes", "--timeout", "25", "--processes", "1",
]  # fmt: skip
NAMES = ["clean", "graph_break", "hangs", "raises"]


def target(name: str) -> str:
    return os.path.join(SWEEP_TARGETS, f"{name}.py") + ":build"


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """The one real sweep of this module: (folder, exit code, stdout, stderr, sweep.json)."""
    out = tmp_path_factory.mktemp("sweep") / "all"
    rc, stdout, stderr = run_cli(ROOT, "sweep", GLOB, "--out", str(out), *OPTS, timeout=600)
    data = json.loads((out / "sweep.json").read_text())
    return out, rc, stdout, stderr, data


def rows_by_name(data):
    return {os.path.basename(r["target"]).split(".py")[0]: r for r in data["rows"]}


def test_four_rows_with_their_statuses_and_analyze_exit_codes(swept, tmp_path):
    out, rc, stdout, stderr, data = swept
    assert [os.path.basename(r["target"]) for r in data["rows"]] == [f"{n}.py:build" for n in NAMES]
    rows = rows_by_name(data)
    assert rows["clean"]["exit_code"] == 0 and rows["clean"]["status"] == "complete", rows["clean"]
    assert rows["clean"]["graph_breaks"] == 0
    gb = rows["graph_break"]
    assert gb["exit_code"] == 0 and gb["graph_breaks"] >= 1, gb
    assert any(
        os.path.basename(b["file"]) == "graph_break.py" and b["line"] == 14 for b in gb["breaks"]
    )
    hang = rows["hangs"]
    assert hang["exit_code"] == 4 and hang["status"] == "incomplete", hang
    assert "timed out" in hang["reason"] and (out / hang["json"]).is_file()
    bad = rows["raises"]
    assert bad["exit_code"] == 3 and bad["status"] == "failed" and bad["json"] is None
    assert "no weights for this model" in bad["reason"]
    # the sweep's exit code: not every target produced a complete report
    assert rc == 4, stderr
    # the same exit code as analyze gives the failing target (the control: analyze itself)
    arc, _, aerr = run_cli(
        tmp_path, "analyze", os.path.join(ROOT, target("raises")), *OPTS, "--no-warm"
    )
    assert arc == bad["exit_code"] and "no weights for this model" in aerr
    # progress names each target, in order, on stderr; stdout carries the table
    lines = [ln for ln in stderr.splitlines() if ln.startswith("sweep ")]
    assert [ln.split(":")[0] for ln in lines] == [f"sweep {i}/4" for i in range(1, 5)]
    assert all(n in ln for n, ln in zip(NAMES, lines)) and "failed (exit 3)" in lines[3]
    assert "pass rate 50% (2 of 4" in stdout and "sweep.html" in stdout
    # analyze's options reached every analysis (declared once, parsed as analyze parses them)
    assert data["options"]["backend"] == "eager" and data["options"]["budget_s"] == 0.2
    assert all(
        json.loads((out / r["json"]).read_text())["options"] == data["options"]
        for r in data["rows"]
        if r["json"]
    )


def _geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def test_rows_and_summary_come_from_each_targets_own_report(swept):
    out, _, _, _, data = swept
    reports = {
        r["target"]: json.loads((out / r["json"]).read_text()) for r in data["rows"] if r["json"]
    }
    assert len(reports) == 3
    for row in data["rows"]:
        rep = reports.get(row["target"])
        if rep is None:
            continue
        assert row["speedup"] == rep["runtime"]["speedup"]
        assert row["speedup_ci"] == rep["runtime"]["speedup_ci"]
        assert row["cold_compile_s"] == rep["compile"]["first_call_s"]
        assert row["warm_compile_s"] == rep["compile"]["warm_s"]
        assert row["graph_breaks"] == rep["graph_breaks"]["count"]
        measured = row["graph_breaks"] is not None or row["speedup"] is not None
        # a target that timed out before any figure: no verdict (its report's is the default)
        assert row["verdict"] == (rep["verdict"]["decision"] if measured else None), row
    # the summary, recomputed here from the reports (the rows' exit codes for the pass rate)
    s = data["summary"]
    rows = data["rows"]
    assert s["pass_rate"] == sum(r["exit_code"] == 0 for r in rows) / 4 == 0.5
    speedups = [rep["runtime"]["speedup"] for rep in reports.values() if rep["runtime"]["speedup"]]
    assert len(speedups) >= 2 and s["speedup_over"] == len(speedups)
    assert s["geomean_speedup"] == pytest.approx(_geomean(speedups))
    colds = [rep["compile"]["first_call_s"] for rep in reports.values()]
    colds = [c for c in colds if c is not None]
    assert s["median_cold_compile_s"] == pytest.approx(statistics.median(colds))
    mems = [
        rep["memory"]["eager_peak_bytes"] / rep["memory"]["compiled_peak_bytes"]
        for rep in reports.values()
        if rep["memory"].get("eager_peak_bytes") and rep["memory"].get("compiled_peak_bytes")
    ]
    assert len(mems) >= 2  # the two complete targets measured memory
    assert s["memory_compression"] == pytest.approx(_geomean(mems))
    verdicts = {}
    for r in rows:
        rep = reports.get(r["target"])
        measured = rep and (rep["graph_breaks"]["count"] is not None or rep["runtime"]["speedup"])
        key = rep["verdict"]["decision"] if measured else "no verdict"  # the hang: nothing measured
        verdicts[key] = verdicts.get(key, 0) + 1
    assert s["verdicts"] == verdicts and "dashboard" in s["method"]


def test_overview_html_and_markdown(swept):
    out, _, _, _, data = swept
    html = (out / "sweep.html").read_text()
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert "http://" not in html and "https://" not in html
    for r in data["rows"]:  # each analysed target links its own report, which exists
        if r["json"]:
            assert f'href="{r["report"]}"' in html and (out / r["report"]).is_file()
    assert 'class="sortable"' in html and "<svg" in html
    timed = [r for r in data["rows"] if r["speedup_ci"]]
    assert html.count("<circle") == len(timed) >= 2  # one dot (and whisker) per timed model
    md = (out / "sweep.md").read_text()
    assert md.count("\n| ") == 1 + 4 and "pass rate 50%" in md


def test_overview_escapes_what_targets_bring():
    from tcdoctor.render.html import HtmlRenderer
    from tcdoctor.render.markdown import MarkdownRenderer
    from tcdoctor.report.sweep import Sweep, SweepRow

    evil = "<script>alert(1)</script>"
    sweep = Sweep(
        rows=[
            SweepRow(target=f"{evil}.py:build", slug="x", exit_code=3, reason=evil),
            SweepRow(
                target="ok.py:build", slug="y", exit_code=0, speedup=1.5, speedup_ci=[1.4, 1.6]
            ),
        ]
    )
    html = HtmlRenderer().render_sweep(sweep)
    assert evil not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("<script>") == 1  # the page's own script only (filter box, sorting)
    md = MarkdownRenderer().render_sweep(sweep)
    assert evil not in md and "\\<script\\>alert(1)\\</script\\>" in md


class _Fragment:
    """A page with a URL fragment, for the report tests' helper (which loads file://{page})."""

    def __init__(self, page, fragment):
        self.stem, self.url = page.stem + "-fragment", f"{page}{fragment}"

    def __str__(self):
        return self.url


@pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)"
)
def test_overview_in_headless_chromium_fetches_nothing(swept, tmp_path):
    out, _, _, _, data = swept
    dom, requested = chromium(out / "sweep.html", tmp_path)
    assert "<title>tcdoctor sweep:" in dom and 'class="sortable"' in dom
    assert dom.count("<tr class=") == len(data["rows"])
    assert requested == set()
    # the inline script runs (its hash is the one the CSP allows) and sorts: #sort=6-desc opens
    # the table by speedup, highest first, rows without one last
    page = out / "sweep.html"
    col = 6
    assert 'data-dir="desc"' not in dom
    dom, _ = chromium(_Fragment(page, f"#sort={col}-desc"), tmp_path)
    assert 'data-dir="desc"' in dom
    order = re.findall(r'<tr class="\w+">\s*<td data-v="([^"]*)"', dom)
    speed = {r["target"]: r["speedup"] for r in data["rows"]}
    expected = sorted(speed, key=lambda t: (speed[t] is None, -(speed[t] or 0)))
    assert order == expected, (order, expected)


# ---------------------------------------------------------------- shards, merge, baseline, gate


def _copy(src, dst):
    shutil.copytree(src, dst)
    return dst


def test_two_shards_merged_give_the_unsharded_rows(swept, tmp_path):
    """Each shard folder starts as a copy of the full sweep's records, so the shard runs resume
    (nothing is analysed twice) and the test checks what sharding and merging do: disjoint shares
    that cover the list, and a merged overview equal to the unsharded one."""
    out, _, _, _, data = swept
    shards = []
    for k in (1, 2):
        d = _copy(out, tmp_path / f"shard{k}")
        (d / "sweep.json").unlink()
        rc, _, err = run_cli(ROOT, "sweep", GLOB, "--out", str(d), "--shard", f"{k}/2", *OPTS)
        assert rc in (0, 4), err
        assert err.count("done before") == 2 and "sweep 2/2" in err, err
        shards.append(json.loads((d / "sweep.json").read_text()))
    names = [[os.path.basename(r["target"]) for r in s["rows"]] for s in shards]
    assert names == [
        ["clean.py:build", "hangs.py:build"],
        ["graph_break.py:build", "raises.py:build"],
    ]
    merged = tmp_path / "merged"
    rc, _, err = run_cli(
        ROOT,
        "sweep",
        "--merge",
        str(tmp_path / "shard1"),
        str(tmp_path / "shard2"),
        "--out",
        str(merged),
    )
    assert rc == 4 and "merge:" not in err, err
    got = json.loads((merged / "sweep.json").read_text())
    assert got["rows"] == data["rows"] and got["warnings"] == []
    assert got["summary"] == data["summary"]
    assert all((merged / r["report"]).is_file() for r in got["rows"] if r["json"])
    # a shard missing, and a shard given twice: one line each
    rc, _, err = run_cli(
        ROOT, "sweep", "--merge", str(tmp_path / "shard1"), "--out", str(tmp_path / "m1")
    )
    assert rc == 4 and err.count("is missing") == 2, err
    rc, _, err = run_cli(
        ROOT,
        "sweep",
        "--merge",
        str(tmp_path / "shard1"),
        str(tmp_path / "shard1"),
        "--out",
        str(tmp_path / "m2"),
    )
    assert err.count("appears twice") == 2, err


def test_merge_names_shards_that_differ_in_torch_device_or_options():
    from tcdoctor.report.sweep import Sweep, SweepRow
    from tcdoctor.sweep.merge import merge

    a = Sweep(torch="2.13.0", options={"budget_s": 5.0}, targets=["a.py:f", "b.py:f"],
              rows=[SweepRow(target="a.py:f", exit_code=0, device="cpu")])  # fmt: skip
    b = Sweep(torch="2.12.0", options={"budget_s": 1.0}, targets=["a.py:f", "b.py:f"],
              rows=[SweepRow(target="b.py:f", exit_code=0, device="cuda")])  # fmt: skip
    merged = merge([("A", a), ("B", b)])
    w = "\n".join(merged.warnings)
    assert "torch version" in w and "device" in w and "option budget_s" in w
    assert len(merged.warnings) == 3 and merged.complete
    same = merge([("A", a), ("A2", Sweep.from_dict(a.to_dict()))])  # the control: no difference
    assert not [x for x in same.warnings if "differ" in x]


def test_shards_balanced_by_durations_are_disjoint_deterministic_and_even():
    from tcdoctor.sweep.shards import shard_targets

    targets = [f"m{i}.py:build" for i in range(7)]
    durations = {"m0.py:build": 100.0, "m1.py:build": 90.0, "m2.py:build": 10.0,
                 "m3.py:build": 10.0, "m4.py:build": 10.0, "m5.py:build": 10.0}  # fmt: skip
    shares = [shard_targets(targets, k, 2, durations) for k in (1, 2)]
    assert sorted(shares[0] + shares[1]) == sorted(targets) and not set(shares[0]) & set(shares[1])
    loads = [sum(durations.get(t, 10.0) for t in s) for s in shares]
    assert abs(loads[0] - loads[1]) <= 20  # round robin would give 120 vs 130 only by luck
    assert shares == [shard_targets(targets, k, 2, durations) for k in (1, 2)]
    assert "m0.py:build" in shares[0] and "m1.py:build" in shares[1]  # the two long ones apart


def test_baseline_marks_the_model_that_gained_a_graph_break_and_nothing_else(swept, tmp_path):
    out, _, _, _, data = swept
    old = json.loads(json.dumps(data))
    for r in old["rows"]:
        if r["target"].endswith("graph_break.py:build"):  # last week: no break in this model
            r["breaks"], r["graph_breaks"] = [], 0
    (tmp_path / "old.json").write_text(json.dumps(old))
    d = _copy(out, tmp_path / "now")
    rc, stdout, err = run_cli(
        ROOT, "sweep", GLOB, "--out", str(d), *OPTS, "--baseline", str(tmp_path / "old.json")
    )
    assert err.count("done before") == 4, err
    rows = rows_by_name(json.loads((d / "sweep.json").read_text()))
    changes = {n: [c["kind"] for c in r["changes"]] for n, r in rows.items()}
    assert changes == {"clean": [], "graph_break": ["new_break"], "hangs": [], "raises": []}
    assert "new graph break at graph_break.py:14" in rows["graph_break"]["changes"][0]["text"]
    assert "new graph break at graph_break.py:14" in stdout
    # the control: against itself nothing changed
    rc, _, err = run_cli(ROOT, "sweep", GLOB, "--out", str(d), *OPTS, "--baseline", str(out))
    assert all(r["changes"] == [] for r in json.loads((d / "sweep.json").read_text())["rows"])


def test_check_sweep_gates_on_the_overview(swept, tmp_path):
    out, _, _, _, data = swept
    rc, stdout, err = run_cli(tmp_path, "check", "--sweep", str(out), "--min-pass-rate", "0.9")
    assert rc == 1 and "FAIL  pass rate: 50%" in stdout, (stdout, err)
    rc, stdout, _ = run_cli(tmp_path, "check", "--sweep", str(out), "--min-pass-rate", "0.5")
    assert rc == 0 and "PASS  pass rate" in stdout
    # newly slower than eager: a baseline where every model was slower, so none is newly slower
    old = json.loads(json.dumps(data))
    for r in old["rows"]:
        r["speedup_ci"] = [0.1, 0.2]
    (tmp_path / "old.json").write_text(json.dumps(old))
    rc, stdout, _ = run_cli(
        tmp_path,
        "check",
        "--sweep",
        str(out),
        "--baseline",
        "old.json",
        "--no-new-slower-than-eager",
    )
    assert rc == 0 and "PASS  no model newly slower than eager" in stdout
    rc, _, err = run_cli(tmp_path, "check", "--sweep", str(out))
    assert rc == 2 and "no sweep thresholds" in err
    rc, _, err = run_cli(tmp_path, "check", "--sweep", str(out), "--max-graph-breaks", "0")
    assert rc == 2 and "not a TARGET, --report or a report's thresholds" in err
    rc, _, err = run_cli(tmp_path, "check", "--report", "r.json", "--min-pass-rate", "0.5")
    assert rc == 2 and "need --sweep DIR" in err


def test_check_newly_slower_than_eager_fails_only_on_a_model_that_was_not():
    from tcdoctor.checks.table import sweep_checks
    from tcdoctor.report.sweep import Sweep, SweepRow
    from tcdoctor.sweep.compare import with_baseline

    now = Sweep(rows=[SweepRow(target="a.py:f", exit_code=0, speedup=0.5, speedup_ci=[0.4, 0.6]),
                      SweepRow(target="b.py:f", exit_code=0, speedup=0.5, speedup_ci=[0.4, 0.6])])  # fmt: skip
    old = Sweep(rows=[SweepRow(target="a.py:f", exit_code=0, speedup=1.5, speedup_ci=[1.4, 1.6]),
                      SweepRow(target="b.py:f", exit_code=0, speedup=0.5, speedup_ci=[0.45, 0.55])])  # fmt: skip
    (res,) = sweep_checks(with_baseline(now, old, "old"), no_new_slower_than_eager=True)
    assert not res.passed and "a.py:f" in res.reason and "b.py:f" not in res.reason
    kinds = {r.target: [c["kind"] for c in r.changes] for r in now.rows}
    assert kinds == {"a.py:f": ["speedup_slower", "newly_slower_than_eager"], "b.py:f": []}


# ---------------------------------------------------------------- resume


def _row_files(out):
    return sorted(out.glob("*/row.json"))


def test_kill_9_after_the_second_target_then_rerun_analyses_only_the_rest(tmp_path):
    """Two cheap failing targets first (their failures are recorded and reused, as done), then a
    clean one; the first sweep is killed with SIGKILL as soon as the second record appears."""
    targets = [
        target("raises"),
        os.path.join("tests", "targets", "bad.py") + ":build_raises",
        target("clean"),
    ]
    out = tmp_path / "out"
    opts = [*OPTS, "--no-warm"]  # one process per target: the failures are what is cheap here
    cmd = [sys.executable, "-m", "tcdoctor", "sweep", *targets, "--out", str(out), *opts]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while len(_row_files(out)) < 2 and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    done = {f.parent.name: f.read_bytes() for f in _row_files(out)}
    assert len(done) == 2 and not (out / "sweep.json").exists()
    rc, stdout, err = run_cli(ROOT, "sweep", *targets, "--out", str(out), *opts)
    lines = [ln for ln in err.splitlines() if ln.startswith("sweep ")]
    assert len(lines) == 3 and all("done before" in ln for ln in lines[:2]), err
    assert "done before" not in lines[2] and "clean.py:build" in lines[2]
    assert {f.parent.name: f.read_bytes() for f in _row_files(out) if f.parent.name in done} == done
    data = json.loads((out / "sweep.json").read_text())
    assert [r["exit_code"] for r in data["rows"]] == [3, 3, 0] and rc == 4
    # --retry-failed runs the two failures again, and only them
    rc, _, err = run_cli(ROOT, "sweep", *targets, "--out", str(out), *opts, "--retry-failed")
    lines = [ln for ln in err.splitlines() if ln.startswith("sweep ")]
    assert ["done before" in ln for ln in lines] == [False, False, True], err


def test_bad_command_lines_are_one_line_and_exit_2(tmp_path):
    rc, _, err = run_cli(tmp_path, "sweep", "--out", "x")
    assert rc == 2 and "give at least one target" in err and "Traceback" not in err
    rc, _, err = run_cli(tmp_path, "sweep", "a.py:build", "--shard", "3/2")
    assert rc == 2 and "1 ≤ K ≤ N" in err
    rc, _, err = run_cli(tmp_path, "sweep", "a.py:build", "--durations", "old")
    assert rc == 2 and "give it with --shard" in err
    rc, _, err = run_cli(tmp_path, "sweep", "@missing.txt")
    assert rc == 2 and "cannot read target list" in err
    rc, _, err = run_cli(tmp_path, "sweep", "--merge", "nowhere", "--out", "m")
    assert rc == 2 and "no sweep overview" in err


def test_a_model_edited_to_gain_a_break_is_analysed_again_and_marked_against_the_baseline(
    tmp_path,
):
    """Real analyses: the record's key holds the file's SHA-256, so after the edit only the edited
    model is analysed again (the unchanged failing target is reused), and against last sweep it is
    the one marked, with its new break."""
    src = os.path.join(ROOT, SWEEP_TARGETS)
    shutil.copy(os.path.join(src, "clean.py"), tmp_path / "model.py")
    shutil.copy(os.path.join(src, "raises.py"), tmp_path / "other.py")
    args = ["sweep", "model.py:build", "other.py:build", *OPTS, "--no-warm"]
    rc, _, err = run_cli(tmp_path, *args, "--out", "old")
    assert rc == 4 and "done before" not in err, err
    shutil.copytree(tmp_path / "old", tmp_path / "new")
    shutil.copy(os.path.join(src, "graph_break.py"), tmp_path / "model.py")  # this week's edit
    rc, _, err = run_cli(tmp_path, *args, "--out", "new", "--baseline", "old/sweep.json")
    lines = [ln for ln in err.splitlines() if ln.startswith("sweep ")]
    assert "done before" not in lines[0] and "done before" in lines[1], err
    rows = rows_by_name(json.loads((tmp_path / "new" / "sweep.json").read_text()))
    assert rows["other"]["changes"] == []
    new = [c["text"] for c in rows["model"]["changes"] if c["kind"] == "new_break"]
    assert len(new) == 1 and new[0].startswith("new graph break at model.py:14"), rows["model"]


def test_targets_from_globs_and_lists_in_order_without_duplicates(tmp_path, monkeypatch):
    from tcdoctor.options import Options
    from tcdoctor.sweep import _own_folders, expand

    monkeypatch.chdir(tmp_path)
    for name in ("b.py", "a.py", "c.txt"):
        (tmp_path / "models").mkdir(exist_ok=True)
        (tmp_path / "models" / name).write_text("")
    (tmp_path / "list.txt").write_text("# the zoo\n\nmodels/b.py:build\nmodels/*.py:other\n")
    got = expand(["models/*.py:build", "@list.txt", "nothing/*.py:build", "./models/a.py:build"])
    assert got == [
        "models/a.py:build",
        "models/b.py:build",
        "models/a.py:other",
        "models/b.py:other",
        "nothing/*.py:build",  # matches nothing: kept, so its row says the file was not found
    ]
    opts = _own_folders(Options(trace_dir="/t", torch_trace=None), "models__a.py--build")
    assert opts.trace_dir == "/t/models__a.py--build" and opts.torch_trace is None


# ---------------------------------------------------------------- issue 35: literal sweeps


def _literal_sweep(tmp_path):
    """A sweep folder from literal rows: one complete, one that timed out before any figure (its
    report's verdict is the rules' default), one whose build() raised."""
    from tcdoctor.report.sweep import Sweep, SweepRow

    rows = [
        SweepRow(target="models/a.py:build", slug="a", exit_code=0, verdict="compile",
                 graph_breaks=0, recompiles=0, speedup=1.5, speedup_ci=[1.4, 1.6]),
        SweepRow(target="models/hangs.py:build", slug="h", exit_code=4, verdict="dont-compile",
                 reason="eager: timed out after 40 s", json="h/report.json"),
        SweepRow(target="models/raises.py:build", slug="r", exit_code=3, reason="build() raised"),
    ]  # fmt: skip
    sweep = Sweep(options={"backend": "eager"}, targets=[r.target for r in rows], rows=rows)
    (tmp_path / "sw").mkdir()
    sweep.save(str(tmp_path / "sw" / "sweep.json"))
    return sweep


def test_a_target_that_timed_out_before_any_figure_has_no_verdict(tmp_path):
    from tcdoctor.render.sweep import cells
    from tcdoctor.render.terminal import TerminalRenderer
    from tcdoctor.report.model import Report
    from tcdoctor.report.sweep import row_from_report
    from tcdoctor.verdict import with_verdict

    sweep = _literal_sweep(tmp_path)
    assert sweep.verdict_counts == {"compile": 1, "no verdict": 2}
    hang = sweep.rows[1]
    shown = TerminalRenderer().render_sweep(sweep)
    assert cells(hang)[3] == "no verdict" and "Don't compile" not in shown
    # a row made from such a report: its verdict is not kept
    rep = with_verdict(
        Report.from_dict(
            {"target": "m.py:build", "errors": [{"phase": "eager", "message": "timed out"}]}
        )
    )
    assert rep.verdict.decision == "dont-compile"  # what the report says on no evidence
    assert row_from_report("m.py:build", rep, 4, 40.0, "m").verdict is None
    # the control: a measured row keeps its verdict
    rep.graph_breaks.count = 1
    assert row_from_report("m.py:build", rep, 4, 40.0, "m").verdict == "dont-compile"


def test_check_sweep_writes_junit_json_and_the_summary(tmp_path):
    _literal_sweep(tmp_path)
    env = plain_env()
    env.update(GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"))
    rc, stdout, err = run_cli(
        tmp_path, "check", "--sweep", "sw", "--min-pass-rate", "0.9",
        "--junit", "j.xml", "--json", "out.json", env=env,
    )  # fmt: skip
    assert rc == 1, stdout + err
    from junitparser import JUnitXml

    (suite,) = list(JUnitXml.fromfile(str(tmp_path / "j.xml")))
    (case,) = list(suite)
    assert case.name == "pass rate" and case.classname == "tcdoctor.check.sweep.sw"
    assert (
        suite.failures == 1 and "models/hangs.py:build: incomplete (exit 4)" in case.result[0].text
    )
    assert json.loads((tmp_path / "out.json").read_text())["summary"]["targets"] == 3
    summary = (tmp_path / "summary.md").read_text()
    assert (
        summary.startswith("## tcdoctor check: 0 passed, 1 failed") and "pass rate 33%" in summary
    )
    assert "::error title=tcdoctor check failed%3A pass rate::" in stdout
    # an analysis option cannot change a finished sweep: refused
    rc, _, err = run_cli(
        tmp_path, "check", "--sweep", "sw", "--min-pass-rate", "0.5", "--backend", "eager"
    )
    assert rc == 2 and "--backend: --sweep DIR judges a finished sweep" in err


def test_targets_are_named_relative_to_the_sweep_folder_as_typed(tmp_path, monkeypatch):
    from tcdoctor.sweep import expand

    (tmp_path / "real" / "models").mkdir(parents=True)
    (tmp_path / "real" / "models" / "m.py").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.chdir(tmp_path / "link")  # the shell's folder is the symlink ($PWD)
    monkeypatch.setenv("PWD", str(tmp_path / "link"))
    got = expand([f"{tmp_path}/link/models/m.py:build", "./models/m.py:other", "../x/y.py:f"])
    assert got == ["models/m.py:build", "models/m.py:other", "../x/y.py:f"]
    # one file named twice (another spelling): analysed once, under its first name
    assert expand(["models/m.py:build", "../real/models/m.py:build"]) == ["models/m.py:build"]
