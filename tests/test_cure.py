"""The cure, end to end: each corpus model (tests/targets/cure/, one graph-break family each) is
analysed as a user runs it, the written tcdoctor-patches.diff is applied with `git apply` to a fresh
copy, and the patched copy is checked here with PyTorch's own counters (fewer breaks, none new),
its eager outputs against the original's and its compiled outputs against its eager ones (the
numerics rule). The NumPy round-trip helper (scipy_helper: `gaussian_filter1d`, then
`np.ascontiguousarray`, `np.asarray(..., dtype=np.float32)`, `torch.from_numpy`) is wrapped whole
(TCD106). A `.tolist()` loop gets no verified patch; `tcdoctor fix` writes only what it may,
and exits as ruff does. The held-out-style smoothing model (scipy_smooth: `gaussian_filter1d` on
`x.detach().cpu().numpy()` in forward) breaks inside scipy: its patch is at the user's line, and the
verdict's advice says so.

Cheap backend, one analysis process per model (conftest.CHEAP): the subject is the patch's proof,
not the speed of the kernels.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import CHEAP, ROOT, run_cli

CORPUS = os.path.join(ROOT, "tests", "targets", "cure")
# model -> (rule, family) its break's verified patch must have
FAMILIES = {
    "print_stat": ("TCD102", "guard-logging"),
    "logging_stat": ("TCD102", "guard-logging"),
    "warn_check": ("TCD103", "guard-check"),
    "leftover_break": ("TCD101", "leftover-graph-break"),
    "scipy_call": ("TCD105", "custom-op"),
    "scipy_smooth": ("TCD105", "custom-op"),
    "scipy_helper": ("TCD106", "helper-op"),  # the NumPy round-trip helper, wrapped whole
    "item_branch": ("TCD104", "tensor-cond"),
}
# torch.cond compiled by the cheap backend runs slower than the break it removes (on item_branch,
# timed by hand: 114 µs a call against 68 with aot_eager; with inductor 38 against 48): the patch's
# "not slower" check is then a close, load-dependent speed judgement this test does not assert
# (every other check of its proof is). Timed against its own eager code, as before, torch.cond's
# eager (380 µs a call) made it read faster.
CHEAP_SPEED_UNASSERTED = {"item_branch"}
PRINT = '        print("activation mean", h.mean())\n'
SUPPRESSED = (
    open(os.path.join(CORPUS, "print_stat.py"), encoding="utf-8")
    .read()
    .replace(PRINT, PRINT[:-1] + "  # tcdoctor: ignore[TCD102]\n")
)


def _analyse(tmp: str, name: str, source: str | None = None) -> dict:
    """`tcdoctor analyze` on a copy of the model in its own folder (the patch copies that folder);
    `source`: the model's text instead of the corpus file's."""
    folder = os.path.join(tmp, name)
    os.makedirs(folder)
    if source is None:
        shutil.copy(os.path.join(CORPUS, f"{name}.py"), folder)
    else:
        with open(os.path.join(folder, f"{name}.py"), "w", encoding="utf-8") as fh:
            fh.write(source)
    # every planned fix runs, however long the ones before it took: the default fix budget (4 cold
    # first calls, 20 s at least) is wall time, and on a busy machine logging_stat's config fix
    # used it up before its patch was tried (no patch row: a failure)
    code, out, err = run_cli(
        folder, "analyze", f"{name}.py:build", *CHEAP, "--fix-budget", "600",
        "--json", "r.json", "--html", "", timeout=600,
    )  # fmt: skip
    assert code == 0, (code, out[-2000:], err[-2000:])
    with open(os.path.join(folder, "r.json"), encoding="utf-8") as fh:
        report = json.load(fh)
    return {"folder": folder, "report": report, "stdout": out}


@pytest.fixture(scope="module")
def analysed(tmp_path_factory) -> dict[str, dict]:
    tmp = str(tmp_path_factory.mktemp("cure"))
    got = {name: _analyse(tmp, name) for name in [*FAMILIES, "tolist_loop"]}
    got["suppressed"] = _analyse(tmp, "suppressed", SUPPRESSED)
    return got


def _load(path: str, name: str):
    """The module at `path`, registered under `name` (torch.cond traces its branches by module)."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _pytorch_counts(model, inputs) -> tuple[int, int, set[str]]:
    """(graphs, breaks, break messages) as PyTorch's own counters record them for one compiled call
    (backend eager): call-site breaks (`graph_break`) and data-dependent branches (`unimplemented`)
    merged, as torch-2.13-facts says."""
    import torch
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    with torch.no_grad():
        torch.compile(model, backend="eager")(*inputs)
    breaks = {**counters["graph_break"], **counters["unimplemented"]}
    graphs = counters["stats"]["unique_graphs"]
    torch._dynamo.reset()
    return graphs, sum(breaks.values()), set(breaks)


def _patch_row(report: dict) -> dict:
    rows = [r for r in report["fixes"] if r.get("patch")]
    assert len(rows) == 1, [r.get("fix") for r in report["fixes"]]
    return rows[0]


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_each_family_gets_a_verified_patch_that_git_applies_and_holds(analysed, name, tmp_path):
    import torch

    from tcdoctor.probes import numerics, outputs

    got = analysed[name]
    row = _patch_row(got["report"])
    patch = row["patch"]
    assert (patch["rule"], patch["family"]) == FAMILIES[name]
    timed = {"not slower"} if name in CHEAP_SPEED_UNASSERTED else set()
    assert set(patch["failed"]) <= timed, (patch["failed"], patch["checks"], row.get("why"))
    assert all(c["passed"] for n, c in patch["checks"].items() if n not in timed)
    diff_path = os.path.join(got["folder"], "tcdoctor-patches.diff")
    if not patch["verified"]:  # slower under the cheap backend only: its own diff, as proven
        diff_path = str(tmp_path / "patch.diff")
        with open(diff_path, "w", encoding="utf-8") as fh:
            fh.write(patch["diff"])
    assert os.path.isfile(diff_path)
    # a fresh copy of the original, patched with git apply as a user would
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copy(os.path.join(CORPUS, f"{name}.py"), fresh)
    subprocess.run(["git", "init", "-q"], cwd=fresh, check=True)
    subprocess.run(["git", "apply", diff_path], cwd=fresh, check=True)
    patched_src = (fresh / f"{name}.py").read_text()
    assert patched_src != open(os.path.join(CORPUS, f"{name}.py")).read()

    orig = _load(os.path.join(CORPUS, f"{name}.py"), f"cure_orig_{name}")
    new = _load(str(fresh / f"{name}.py"), f"cure_patched_{name}")
    m_o, (x,) = orig.build()
    m_p, _ = new.build()
    m_p.load_state_dict(m_o.state_dict())
    g_before, before, before_reasons = _pytorch_counts(m_o, (x,))
    g_after, after, after_reasons = _pytorch_counts(m_p, (x,))
    assert after < before and g_after < g_before, (before, after, g_before, g_after)
    assert after_reasons <= before_reasons, after_reasons - before_reasons
    with torch.no_grad():
        e_o, e_p = m_o(x), m_p(x)
        c_p = torch.compile(m_p, backend="aot_eager")(x)
    torch._dynamo.reset()
    same = numerics.compare(outputs.snapshot(e_o), outputs.snapshot(e_p), None, "test", None)
    assert same["passed"] is True, same
    comp = numerics.compare(outputs.snapshot(e_p), outputs.snapshot(c_p), None, "test", None)
    assert comp["passed"] is True, comp


def test_the_config_switch_is_offered_before_the_patch(analysed):
    """print's hint names reorderable_logging_functions: tried, process-wide, listed first."""
    fixes = analysed["print_stat"]["report"]["fixes"]
    kinds = [r["kind"] for r in fixes]
    assert kinds.index("config_set") < kinds.index("patch"), kinds
    row = fixes[kinds.index("config_set")]
    assert row["fix"] == "torch._dynamo.config.reorderable_logging_functions.add(print)"
    assert "process-wide" in row["why"]


def test_a_tolist_loop_gets_no_verified_patch(analysed):
    got = analysed["tolist_loop"]
    report = got["report"]
    assert not [r for r in report["fixes"] if (r.get("patch") or {}).get("verified")]
    assert not os.path.exists(os.path.join(got["folder"], "tcdoctor-patches.diff"))
    why = [
        n["why"]
        for n in report["fixes_not_tried"]
        if (n["spec"].get("fix") or {}).get("kind") == "patch"
    ]
    assert len(why) == 1 and why[0].startswith("no mechanical patch:"), why
    assert "tolist" in why[0]


def test_every_renderer_shows_the_patch(analysed):
    """The diff, the safety class and each check, in the terminal, Markdown and HTML."""
    from tcdoctor.render.html import HtmlRenderer
    from tcdoctor.render.markdown import MarkdownRenderer
    from tcdoctor.render.terminal import TerminalRenderer
    from tcdoctor.report.model import Report

    folder = analysed["leftover_break"]["folder"]
    rep = Report.load(os.path.join(folder, "r.json"))
    for text in (
        TerminalRenderer().render(rep),
        MarkdownRenderer().render(rep),
        HtmlRenderer().render(rep),
    ):
        assert "TCD101 leftover-graph-break, safe" in text
        assert "-        torch._dynamo.graph_break()" in text
        assert "no new break" in text and "verified" in text


def test_fix_writes_only_verified_patches_it_may(analysed):
    """`tcdoctor fix`: the diff by default (exit 1: a change to make, as ruff's --diff); --apply
    writes a safe patch (exit 0), refuses an unsafe one without --unsafe (exit 1: left unwritten),
    and refuses a file changed since the analysis."""
    safe = analysed["leftover_break"]["folder"]
    unsafe = analysed["print_stat"]["folder"]
    code, out, _ = run_cli(safe, "fix", "--report", "r.json")
    assert code == 1 and out.startswith("--- a/leftover_break.py")
    original = open(os.path.join(safe, "leftover_break.py")).read()
    assert "graph_break()" in original  # --diff wrote nothing
    code, out, _ = run_cli(unsafe, "fix", "--report", "r.json", "--apply")
    assert code == 1 and "refused" in out and "--unsafe" in out
    assert "is_compiling" not in open(os.path.join(unsafe, "print_stat.py")).read()
    code, out, _ = run_cli(unsafe, "fix", "--report", "r.json", "--apply", "--unsafe")
    assert code == 0 and out.startswith("written:"), out
    assert "is_compiling" in open(os.path.join(unsafe, "print_stat.py")).read()
    with open(os.path.join(safe, "leftover_break.py"), "a") as fh:
        fh.write("# edited since\n")
    code, out, _ = run_cli(safe, "fix", "--report", "r.json", "--apply")
    assert code == 1 and "changed since the analysis" in out
    assert "graph_break()" in open(os.path.join(safe, "leftover_break.py")).read()


def test_fix_without_a_change_exits_0(analysed):
    code, out, _ = run_cli(analysed["tolist_loop"]["folder"], "fix", "--report", "r.json")
    assert code == 0 and out.startswith("no verified patch")


@pytest.mark.parametrize(
    ("args", "leftover", "scipy"),
    [
        (("--select", "TCD101"), True, False),
        (("--select", "tcd1"), True, True),  # a prefix, any case
        (("--select", "TCD102,TCD104"), False, False),
        (("--ignore", "TCD101"), False, True),
        (("--select", "TCD1", "--ignore", "TCD105"), True, False),
    ],
)
def test_fix_select_and_ignore_by_code(analysed, args, leftover, scipy):
    """ruff's --select/--ignore: leftover_break's patch is TCD101, scipy_call's TCD105."""
    for name, shows in (("leftover_break", leftover), ("scipy_call", scipy)):
        code, out, _ = run_cli(analysed[name]["folder"], "fix", "--report", "r.json", *args)
        assert code == (1 if shows else 0), (name, args, out)
        assert out.startswith(f"--- a/{name}.py") is shows, (name, args, out)
        if not shows:
            assert out.startswith("no verified patch")


def test_fix_refuses_an_unknown_code_in_one_line(analysed):
    code, out, err = run_cli(analysed["leftover_break"]["folder"], "fix", "--report", "r.json",
                             "--select", "TCD9")  # fmt: skip
    assert code == 2 and err.strip().splitlines() == [
        "tcdoctor: error: unknown rule code 'TCD9': the rules are TCD101, TCD102, TCD103, TCD104, "
        "TCD106, TCD105, TCD107 (tcdoctor rules)"
    ]


def test_a_suppressed_print_is_honoured_and_listed(analysed):
    """`# tcdoctor: ignore[TCD102]`: no patch tried, the report lists the break as suppressed in
    every format, and `fix` names it (on stderr: stdout stays a diff)."""
    from tcdoctor.render.markdown import MarkdownRenderer
    from tcdoctor.render.terminal import TerminalRenderer
    from tcdoctor.report.model import Report

    got = analysed["suppressed"]
    report = got["report"]
    assert not [r for r in report["fixes"] if r.get("patch")]
    why = [n["why"] for n in report["fixes_not_tried"] if n["spec"]["fix"]["kind"] == "patch"]
    assert why == [
        "suppressed: `# tcdoctor: ignore[TCD102]` at line 15 keeps the line as it is (TCD102 "
        "guard-logging not applied)"
    ]
    rep = Report.load(os.path.join(got["folder"], "r.json"))
    for text in (TerminalRenderer().render(rep), MarkdownRenderer().render(rep)):
        assert "not tried: suppressed.py:15: suppressed: " in text  # Markdown escapes the rest
        assert "ignore[TCD102]" in text.replace("\\", "")
    code, out, err = run_cli(got["folder"], "fix", "--report", "r.json")
    assert code == 0 and "suppressed: suppressed.py:15: suppressed:" in err


def test_breaks_inside_scipy_are_wrapped_at_the_users_line(analysed):
    """The held-out-style smoothing model: the breaks PyTorch reports inside scipy (reached from
    the user's line 16) get one verified custom-op patch at that line, and the advice says so
    instead of "not yours to edit"."""
    report = analysed["scipy_smooth"]["report"]
    inside = [f for f in report["graph_breaks"]["unique"] if f.get("origin") == "library"]
    assert inside and {f["library"] for f in inside} == {"scipy"}
    assert {f["line"] for f in inside} == {16}
    n = sum(f.get("occurrences") or 1 for f in inside)
    row = _patch_row(report)
    assert set(row["addresses"]) == {f["id"] for f in inside}
    assert row["patch"]["verified"] is True and row["patch"]["line"] == 16
    advice = [a["text"] for a in report["verdict"]["advice"] if a["topic"] == "graph break"]
    assert advice[0].startswith(
        f"{n} breaks inside scipy, called from your line 16: wrap the call (patch below)"
    ), advice
    assert not any("From your side" in a for a in advice)
    # the verdict's reasons say the same, never "not yours to edit" for these breaks
    reasons = " ".join(report["verdict"]["reasons"])
    assert f"{n} breaks inside scipy, called from your line 16: wrap the call" in reasons
    assert "not yours to edit" not in reasons and "nothing to change in your code" not in reasons
