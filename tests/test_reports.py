"""Report round trip and renderers: JSON keys, re-rendering, Markdown, check, diff, safe HTML in Chromium.

What `analyze` writes (its JSON's keys, its schema, its Markdown drawn again from its JSON) is read
from a fresh analysis; what draws or judges a report reads the saved one (tests/data)."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import NO_TIMING_PROCESSES, ONE_PROCESS, ROOT, run_cli, saved_report

FAST = ["--threads", "1", "--backend", "eager", "--budget", "0.2"]
# a model whose print() carries HTML and script text, with one graph break; the warm process's
# figures are in its report, and no timing-only process runs (tests/data/make_reports.py saves it)
INJECT = f"{ROOT}/tests/targets/inject.py:build"
INJECT_OPTIONS = (*FAST, *NO_TIMING_PROCESSES)
REQUIRED = [
    "schema_version",
    "target",
    "environment.torch",
    "environment.device",
    "environment.threads",
    "environment.python",
    "graphs.count",
    "graph_breaks.count",
    "graph_breaks.unique",
    "recompiles.count",
    "recompiles.events",
    "recompiles.limit_hit",
    "guards.count",
    "errors",
    "runtime.eager.median_s",
    "runtime.compiled.median_s",
    "runtime.speedup",
    "runtime.speedup_ci",
    "runtime.samples",
    "compile.first_call_s",
    "compile.cold_s",
    "compile.warm_s",
    "guards.overhead_s_per_call",
    "guards.overhead_fraction",
    "memory.eager_peak_bytes",
    "memory.compiled_peak_bytes",
    "memory.method",
    "numerics.passed",
    "numerics.max_abs_err",
    "numerics.max_rel_err",
    "verdict.decision",
    "verdict.reasons",
    "verdict.break_even_calls",
]


def dig(d, dotted):
    for p in dotted.split("."):
        assert p in d, f"missing key {dotted}"
        d = d[p]
    return d


@pytest.fixture(scope="module")
def inject_report(tmp_path_factory):
    """A fresh analysis of tests/targets/inject.py: for the tests of what `analyze` writes."""
    d = tmp_path_factory.mktemp("inject")
    args = ("--json", "r.json", "--html", "r.html", "--md", "r.md")
    rc, _, err = run_cli(d, "analyze", INJECT, *INJECT_OPTIONS, *args)
    assert rc == 0, err
    return d


@pytest.fixture(scope="module")
def saved_inject(tmp_path_factory):
    """The saved report of the same target (tests/data/make_reports.py), drawn again by `tcdoctor
    report` into r.html and r.md beside it: for the tests of what draws a report, not of the
    analysis that wrote it."""
    d = tmp_path_factory.mktemp("saved_inject")
    shutil.copy(saved_report("inject"), d / "r.json")
    rc, _, err = run_cli(d, "report", "r.json", "--html", "r.html", "--md", "r.md")
    assert rc == 0, err
    return d


def test_json_has_every_documented_key(inject_report):
    rep = json.loads((inject_report / "r.json").read_text())
    for k in REQUIRED:
        dig(rep, k)
    assert rep["graph_breaks"]["count"] == 1
    assert rep["compile"]["warm_s"] is not None and rep["compile"]["warm_s"] > 0
    assert rep["environment"]["threads"] == 1
    assert rep["environment"]["threads_source"] == "--threads"
    assert not any(
        k in json.dumps(rep)
        for k in ("PATH=", "HOME=", os.environ.get("HOME", "/nonexistent") + "/.")
    )


def test_html_escapes_user_strings(saved_inject):
    html = (saved_inject / "r.html").read_text()
    assert "&lt;script&gt;document.title=" in html
    assert "<script>document.title" not in html and "<img src=x" not in html
    assert len(re.findall(r"<script\b", html)) == 1  # ours only
    assert not re.search(
        r"""(src|href)=["']?(https?:)?//""", html.replace('href="https://meta-pytorch', "")
    )
    assert "Content-Security-Policy" in html and "default-src 'none'" in html


def test_a_fresh_report_is_valid_against_the_published_schema(inject_report):
    """What `analyze` writes today, not only the reports saved in tests/data (tests/test_schema.py)."""
    import jsonschema

    from tcdoctor.report.model import shipped_schema_text

    rep = json.loads((inject_report / "r.json").read_text())
    validator = jsonschema.Draft202012Validator(json.loads(shipped_schema_text()))
    assert [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(rep)] == []


def test_rerender_from_json_matches(cli, inject_report, tmp_path):
    shutil.copy(inject_report / "r.json", tmp_path / "saved.json")
    rc, out, err = cli("report", "saved.json", "--html", "again.html", "--md", "again.md")
    assert rc == 0, err
    assert (tmp_path / "again.md").read_text() == (inject_report / "r.md").read_text()
    assert "VERDICT" in out


def test_markdown_is_escaped_and_says_how_made(saved_inject):
    md = (saved_inject / "r.md").read_text()
    assert md.startswith("## tcdoctor: ")
    outside_code = re.sub(r"`[^`]*`", "", md)
    assert (
        "<script" not in outside_code and "<img" not in outside_code
    )  # in code spans it is inert text
    assert "tcdoctor analyze" in md
    assert "| speedup |" in md


def test_check_gate_fails_and_passes(cli, saved_inject, tmp_path):
    shutil.copy(saved_inject / "r.json", tmp_path / "saved.json")
    rc, out, _ = cli("check", "--report", "saved.json", "--max-graph-breaks", "0")
    assert rc == 1 and "FAIL  graph breaks: 1" in out
    rc, out, _ = cli(
        "check",
        "--report",
        "saved.json",
        "--max-graph-breaks",
        "1",
        "--max-recompiles",
        "0",
        "--require-numerics",
    )
    assert rc == 0 and "3 passed, 0 failed" in out


def test_diff_reports_fixed_break(cli, saved_inject, tmp_path):
    after = json.loads((saved_inject / "r.json").read_text())
    after["graph_breaks"]["unique"] = []
    after["graph_breaks"]["count"] = 0
    (tmp_path / "after.json").write_text(json.dumps(after))
    shutil.copy(saved_inject / "r.json", tmp_path / "before.json")
    rc, out, err = cli("diff", "before.json", "after.json")
    assert rc == 0, err
    assert "Graph breaks fixed: 1" in out and "Graph breaks introduced: 0" in out


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(page, tmp_path):
    """Load a page headless; return its DOM and the URLs the *page* requested (net-log initiator set)."""
    netlog = tmp_path / f"{page.stem}.net.json"
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / ('profile-' + page.stem)}",
        f"--log-net-log={netlog}",
        "--virtual-time-budget=2000",
        "--dump-dom",
        f"file://{page}",
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    text = netlog.read_text(errors="replace") if netlog.exists() else ""
    try:
        events = json.loads(text)["events"]
    except ValueError:  # a log cut short at exit: close the array
        events = json.loads(text.rstrip().rstrip(",") + "]}")["events"]
    requested = {
        e["params"]["url"]
        for e in events
        if "url" in e.get("params", {})
        and e["params"].get("initiator") not in (None, "not an origin")
    }
    return p.stdout, {u for u in requested if not u.startswith(("file:", "data:"))}


@pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)"
)
def test_html_in_headless_chromium_renders_offline_and_runs_no_injected_script(
    saved_inject, tmp_path
):
    # control: a page that does fetch is caught, so the check below can fail
    control = tmp_path / "control.html"
    control.write_text(
        '<html><head><title>c</title></head><body><img src="http://127.0.0.1:9/x.png"></body></html>'
    )
    _, requested = chromium(control, tmp_path)
    assert any(u.startswith("http://127.0.0.1:9/") for u in requested), requested

    dom, requested = chromium(saved_inject / "r.html", tmp_path)
    assert "<title>tcdoctor:" in dom
    assert "PWNED" not in re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
    assert "Graph breaks" in dom and "<svg" in dom and "Don" in dom or "Compile" in dom
    assert requested == set()


def test_hundreds_of_graph_breaks_stay_usable(saved_inject):
    from tcdoctor.render.html import HtmlRenderer
    from tcdoctor.report.model import Report

    data = json.loads((saved_inject / "r.json").read_text())
    base = data["graph_breaks"]["unique"][0]
    data["graph_breaks"]["unique"] = [
        dict(base, line=i, code=f"op_{i}(x)  # <b>{i}</b>") for i in range(300)
    ]
    data["verdict"]["advice"] = [
        {"topic": "graph break", "text": f"fix {i}", "evidence": "e"} for i in range(300)
    ]
    html = HtmlRenderer().render(Report.from_dict(data))
    assert 'class="filter"' in html and html.count("<tr><td><code>") >= 300
    assert "op_299(x)  # &lt;b&gt;299&lt;/b&gt;" in html
    assert "100 more in the JSON report" in html
    assert len(html) < 2_000_000


def test_repr_html_is_a_fragment_for_jupyter(saved_inject):
    from tcdoctor import Report  # the package's Report: importing it installs the notebook hook

    frag = Report.load(str(saved_inject / "r.json"))._repr_html_()
    assert frag.lstrip().startswith("<style>") and "<html" not in frag and "<script" not in frag
    assert "&lt;script&gt;" in frag


def test_trace_dir_gets_chrome_traces(cli, tmp_path):
    rc, out, err = cli(
        "analyze",
        f"{ROOT}/samples/mlp.py:build",
        *FAST,
        *NO_TIMING_PROCESSES,  # the warm process's profiler writes the traces
        *("--trace", "traces", "--html", ""),
    )
    assert rc == 0, err
    for side in ("eager", "compiled"):
        trace = json.loads((tmp_path / "traces" / f"{side}.trace.json").read_text())
        assert trace["traceEvents"]
    compiled_names = {
        e.get("name")
        for e in json.loads((tmp_path / "traces" / "compiled.trace.json").read_text())[
            "traceEvents"
        ]
    }
    assert "TorchDynamo Cache Lookup" in compiled_names


def test_html_writes_figures_with_the_units_formatters():
    """A literal report, no model run: the template's figures are units.py's text."""
    from tcdoctor import units
    from tcdoctor.render.html import HtmlRenderer
    from tcdoctor.report.model import Report
    from tcdoctor.verdict import decide

    data = {
        "target": "m.py:build",
        "errors": [],
        "environment": {},
        "phases": {},
        "runtime": {
            "speedup": 1.52,
            "speedup_ci": [1.49, 1.56],
            "eager": {"median_s": 1e-3},
            "compiled": {"median_s": 1e-3 / 1.52},
        },
        "compile": {"cold_s": 2.0, "warm_s": 0.5},
        "numerics": {"passed": False, "max_abs_err": 0.0123},
        # the guard share is derived: guard time over the compiled median above (35%)
        "guards": {"overhead_s_per_call": 0.35 * 1e-3 / 1.52, "count": 9},
    }
    report = Report.from_dict(data)
    report.verdict = decide(report)
    html = HtmlRenderer().render(report)
    assert f'<div class="d">{units.decision_text("dont-compile")}'.replace("'", "&#39;") in html
    assert "<b>1.52×</b><span>95% CI 1.49–1.56</span>" in html
    assert "<span>numerics</span><b>FAIL</b>" in html
    assert "<summary>Numerics: FAIL</summary>" in html
    assert "<td>35.0%</td>" in html and "<b>5,844 calls</b>" in html
    assert "<td>1,459</td>" in html and "<td>100,000</td>" in html
    bare = {"target": "m.py:build", "errors": [], "environment": {}, "phases": {}}
    assert "Numerics: not measured" in HtmlRenderer().render(Report.from_dict(bare))


@pytest.mark.parametrize("omp", [None, "1"])
def test_threads_default_to_what_the_users_process_gets_and_say_where_from(tmp_path, omp):
    """No --threads: the analysis runs with OMP_NUM_THREADS when set, else torch's own default in a
    fresh process (read here from such a process), and the report names the source."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    if omp:
        env["OMP_NUM_THREADS"] = omp
    fresh = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    args = [
        "--backend",
        "eager",
        "--budget",
        "0.1",
        *ONE_PROCESS,
        "--no-fixes",
        "-q",
    ]
    p = subprocess.run(
        [sys.executable, "-m", "tcdoctor", "analyze", f"{ROOT}/samples/mlp.py:build", *args]
        + ["--json", "r.json", "--html", ""],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    environment = json.loads((tmp_path / "r.json").read_text())["environment"]
    assert environment["threads"] == int(fresh.stdout)
    source = "OMP_NUM_THREADS" if omp else "torch's default in a fresh process"
    assert environment["threads_source"] == source
