"""`tcdoctor diff` on the serving and generation sections (issues 60, 61): each figure read from the
section's typed records (the attribute the report draws), before and after with its change; an
interval only where a report carries one, in the report's own words; a section in one report only
said in one line. Saved reports only (tests/data), no analysis."""

from __future__ import annotations

import json
import re

from conftest import saved_report

from tcdoctor import units
from tcdoctor.checks.table import regressions
from tcdoctor.render.html import HtmlRenderer
from tcdoctor.render.markdown import MarkdownRenderer
from tcdoctor.render.outline import HTML, MARKDOWN, TERMINAL
from tcdoctor.render.terminal import TerminalRenderer
from tcdoctor.report import diff_serving
from tcdoctor.report.diff import Diff
from tcdoctor.report.model import Report
from tcdoctor.thresholds import Rules
from tcdoctor.verdict import with_verdict
from tcdoctor.verdict.generation import judged

GEN = saved_report("generation")
NO_CHANGE = re.compile(r"^\+0(\.0+)?( \S+)?( \(\+0%\))?$")
RENDERERS = {TERMINAL: TerminalRenderer(), MARKDOWN: MarkdownRenderer(), HTML: HtmlRenderer()}
GEN_LABELS = [label for label, _, _ in diff_serving.GENERATION_FIGURES]


def _judged(r: Report):
    return judged(r, Rules.from_dict(r.verdict.rules))


def _diff_json(cli, tmp_path, before, after, *more):
    rc, out, err = cli("diff", str(before), str(after), "--json", "d.json", "--md", "d.md", *more)
    return rc, out, err, json.loads((tmp_path / "d.json").read_text())


def _section(data: dict, name: str) -> dict:
    (found,) = [s for s in data["sections"] if s["section"] == name]
    return found


def test_a_generation_report_against_itself_shows_every_row_unchanged(cli, tmp_path):
    rc, out, err, data = _diff_json(cli, tmp_path, GEN, GEN, "--html", "d.html")
    assert rc == 0, err
    gen = _section(data, "generation")
    assert gen["only"] is None
    rows = {r["figure"]: r for r in gen["figures"]}
    assert set(GEN_LABELS) <= set(rows)
    assert {"generation's decision", "compiled steady / eager request time"} <= set(rows)
    for r in gen["figures"]:
        assert r["before"] == r["after"], r
        assert r["delta"] == "" or NO_CHANGE.match(r["delta"]), r
    g = Report.load(str(GEN)).serving.generation
    assert rows["TTFT p99 compiled (cold start)"]["after"] == units.seconds(g.compiled.ttft_p99_s)
    assert rows["tokens equal to eager's"]["after"] == units.of(g.tokens.equal, g.tokens.compared)
    assert rows["compiles during generation"]["after"] == units.count(g.traffic_compiles)
    j = _judged(Report.load(str(GEN)))
    assert rows["compiled steady / eager request time"]["after"] == units.paired(j.interval)
    assert not any(s["section"] == "serving" for s in data["sections"])  # it carries no replay
    md, html = (tmp_path / "d.md").read_text(), (tmp_path / "d.html").read_text()
    for text in (out, md, html):
        assert all(label.replace("'", "&#39;") in text or label in text for label in GEN_LABELS)


def _edited(tmp_path) -> tuple[Report, Report]:
    """The saved generation report, and a copy whose compiled side is twice as slow per token,
    one compile more, one request's tokens unequal, and whose steady replay is five times as fast
    (its verdict given again from its rules, as analyze gives it)."""
    data = json.loads(GEN.read_text())
    g = data["serving"]["generation"]
    g["compiled"]["token_times_s"] = [
        [2 * x for x in t] if t else t for t in g["compiled"]["token_times_s"]
    ]
    g["compiled"]["total_s"] = [2 * x if x else x for x in g["compiled"]["total_s"]]
    g["compiled"]["compiles"].append(dict(g["compiled"]["compiles"][-1], kind="recompile"))
    g["tokens"]["equal"] -= 1
    g["steady"]["total_s"] = [x / 5 if x else x for x in g["steady"]["total_s"]]
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    before = Report.load(str(GEN))
    rules = before.verdict.rules
    after = with_verdict(
        Report.load(str(path)),
        expected_calls=int(rules["expected_calls"]),
        min_speedup=rules["min_speedup"],
    )
    after.save(str(path))
    return before, Report.load(str(path))


def test_edited_generation_figures_show_their_change_and_direction(cli, tmp_path):
    before, after = _edited(tmp_path)
    rc, out, err, data = _diff_json(cli, tmp_path, GEN, tmp_path / "edited.json")
    found = regressions(before, after)
    assert rc == (1 if any(not r.passed and not r.error for r in found) else 0), err
    rows = {r["figure"]: r for r in _section(data, "generation")["figures"]}
    gb, ga = before.serving.generation, after.serving.generation
    for label, attr in (("TTFT p50", "ttft_p50_s"), ("ITL p99", "itl_p99_s")):
        r = rows[f"{label} compiled (cold start)"]
        assert r["before"] == units.seconds(getattr(gb.compiled, attr))
        assert r["after"] == units.seconds(getattr(ga.compiled, attr))
        assert r["delta"].startswith("+") and r["delta"].endswith("(+100%)"), r
        assert NO_CHANGE.match(rows[f"{label} eager"]["delta"])  # eager untouched
    assert rows["tokens/s compiled (cold start)"]["delta"].endswith("(-50%)")
    assert rows["compiles during generation"]["delta"] == "+1 (+25%)"
    assert (rows["tokens equal to eager's"]["after"], rows["tokens equal to eager's"]["delta"]) == (
        units.of(gb.tokens.compared - 1, gb.tokens.compared),
        "-1 (-12%)",
    )
    assert rows["tokens/s compiled steady"]["delta"].startswith("+")
    # the interval and the decision are each report's own, in its words; point figures never
    # say faster or slower
    ja, jb = _judged(before), _judged(after)
    interval = rows["compiled steady / eager request time"]
    assert interval["before"].endswith("inside the noise") and interval["after"].endswith("faster")
    assert interval["after"] == units.paired(jb.interval)
    decided = rows["generation's decision"]
    assert (decided["before"], decided["after"]) == (str(ja.decision), str(jb.decision))
    assert decided["before"] != decided["after"]
    others = [r for f, r in rows.items() if f != "compiled steady / eager request time"]
    assert not any(re.search(r"faster|slower", " ".join(r.values())) for r in others)


def test_a_generation_against_a_report_without_one_says_so_in_one_line(cli, tmp_path):
    data = json.loads(GEN.read_text())
    del data["serving"]
    data["verdict"].pop("serving", None)
    (tmp_path / "plain.json").write_text(json.dumps(data))
    for before, after, only in ((GEN, "plain.json", "before"), ("plain.json", GEN, "after")):
        rc, out, err, got = _diff_json(cli, tmp_path, before, after)
        assert rc == 0 and "Traceback" not in err, err  # no regression: README's exit code 0
        assert _section(got, "generation") == {"section": "generation", "only": only, "figures": []}
        lines = [x for x in out.splitlines() if "generation" in x]
        assert lines == [
            f"  generation: only the {only} report has a generation section; not compared"
        ]
        assert "TTFT" not in out


def test_serving_figures_read_the_section_records_and_a_planted_one_reaches_every_format(
    monkeypatch,
):
    """Two serving reports: each figure is the section's own attribute, its change in the units
    the report writes; an entry added to SERVING_FIGURES reaches the JSON and every format."""
    a, b = (Report.load(str(saved_report(n))) for n in ("serving", "serving_warmed"))
    rows = {
        r["figure"]: r for r in _section(json.loads(Diff(a, b).to_json()), "serving")["figures"]
    }
    ca, cb = a.serving.replay.compiled, b.serving.replay.compiled
    assert rows["p99 compiled (cold start)"]["before"] == units.seconds(ca.p99_s)
    assert rows["p99 compiled (cold start)"]["after"] == units.seconds(cb.p99_s)
    assert rows["compiles during traffic"]["before"] == units.count(a.serving.traffic_compiles)
    n, m = a.serving.traffic_compiles, b.serving.traffic_compiles
    assert n != m and rows["compiles during traffic"]["delta"].startswith("-" if m < n else "+")
    assert rows["operating model"]["after"] == b.verdict.serving.model
    static = rows["strategy static vs reference"]  # the report's own interval, its own words
    assert static["before"] == units.paired(
        next(s for s in a.serving.strategies if s.name == "static").interval
    )
    entry = ("planted served", lambda r: len(r.serving.replay.compiled.latencies_s), units.count)
    monkeypatch.setattr(diff_serving, "SERVING_FIGURES", [*diff_serving.SERVING_FIGURES, entry])
    d = Diff(a, b)
    assert any(
        r["figure"] == "planted served" for r in json.loads(d.to_json())["sections"][0]["figures"]
    )
    for fmt, renderer in RENDERERS.items():
        assert "planted served" in renderer.render_diff(d), fmt
    assert "| planted served |" in RENDERERS[MARKDOWN].render_diff(d)
    assert "planted served" in RENDERERS[HTML].render_diff(d)
