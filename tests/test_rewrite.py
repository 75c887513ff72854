"""Source patches for graph breaks (tcdoctor/experiments/rewrite/), torchfix's layout: each case is
plain user code, tests/rewrites/NAME.in.py (or, for the cure corpus's models, the model itself,
tests/targets/cure/NAME.py: one file, never a copy that could drift), with its break site in
cases.json, and either NAME.out.py (the exact patched source) or an expected NoRewrite reason.
Every input the side-effect walk, the logging receivers, the precision of a predicate and the
shape rules were written for is a case: refused (the call named), or rewritten so the effect
stays. Fast and torch-free: nothing here imports torch (whether the patches compile away the
breaks is the proof's job, in a child)."""

import dataclasses
import importlib.util
import json
import pathlib
import shutil
import subprocess
import sys

import libcst as cst
import pytest
from conftest import ROOT

from tcdoctor.experiments.rewrite import (
    BranchPayload,
    Need,
    NoRewrite,
    OpPayload,
    Rewrite,
    Site,
    codes,
    needs_observation,
    pages,
    plan,
    registry,
    rule,
    unified_diff,
)
from tcdoctor.experiments.rewrite.tensor_cond import predicate

CASES_DIR = pathlib.Path(ROOT) / "tests" / "rewrites"
CORPUS = pathlib.Path(ROOT) / "tests" / "targets" / "cure"
CASES = json.loads((CASES_DIR / "cases.json").read_text())
POSITIVE = sorted(n for n in CASES if (CASES_DIR / f"{n}.out.py").exists())
NEGATIVE = sorted(n for n in CASES if n not in POSITIVE)


def _site(name: str) -> Site:
    case = CASES[name]
    return Site(case["line"], case["gb_type"], case.get("gb_id"), file=f"{name}.py")


def _input(name: str) -> pathlib.Path:
    """The case's user code: the corpus model of that name, else tests/rewrites/NAME.in.py."""
    model = CORPUS / f"{name}.py"
    return model if model.exists() else CASES_DIR / f"{name}.in.py"


def _source(name: str) -> str:
    return _input(name).read_text()


def _plan(name: str) -> Rewrite | NoRewrite:
    return plan(_source(name), _site(name), CASES[name].get("observed"))


def test_cases_are_complete():
    """Every input (an .in.py or a corpus model) has a case and every case an input; a case has
    either an .out.py or an expected reason, never both."""
    inputs = {p.name.removesuffix(".in.py") for p in CASES_DIR.glob("*.in.py")}
    corpus = {p.stem for p in CORPUS.glob("*.py")}
    assert not inputs & corpus, "a corpus model is its own case: no .in.py copy"
    inputs |= corpus
    outputs = {p.name.removesuffix(".out.py") for p in CASES_DIR.glob("*.out.py")}
    assert inputs == set(CASES)
    assert outputs <= inputs
    for name, case in CASES.items():
        assert ("reason" in case) == (name not in outputs), name
    families = {CASES[n]["family"] for n in POSITIVE}
    assert families == set(codes()), "one case or more per family"


def test_corpus_models_are_cases():
    """Every model of the cure corpus is a case, read from the corpus itself."""
    for model in sorted(CORPUS.glob("*.py")):
        assert model.stem in CASES and _input(model.stem) == model, model.name


@pytest.mark.parametrize("name", POSITIVE)
def test_plan_writes_the_out_file(name):
    result = _plan(name)
    assert isinstance(result, Rewrite), getattr(result, "reason", result)
    case = CASES[name]
    assert result.family == case["family"]
    assert result.rule == codes()[case["family"]]
    # a patch's safety: its rule's, lowered by the side-effect walk where the case says so
    assert result.safety == case.get("safety", rule(result.rule).safety)
    assert [str(p) for p in result.proofs] == case["checks"]
    assert f"line {case['line']}" in result.title
    assert result.note
    assert result.source == (CASES_DIR / f"{name}.out.py").read_text()


@pytest.mark.parametrize("name", POSITIVE)
def test_out_file_compiles(name):
    path = CASES_DIR / f"{name}.out.py"
    compile(path.read_text(), str(path), "exec")


@pytest.mark.parametrize("name", NEGATIVE)
def test_no_rewrite_says_why(name):
    result = _plan(name)
    assert isinstance(result, NoRewrite), name
    assert CASES[name]["reason"] in result.reason
    assert result.family == CASES[name]["family"]
    assert result.suppressed is CASES[name].get("suppressed", False)
    assert "\n" not in result.reason


@pytest.mark.parametrize("name", POSITIVE)
def test_unified_diff_applies(name, tmp_path):
    """The diff applies with `git apply` and with `patch -p1` and gives the .out.py exactly."""
    before, after = _source(name), (CASES_DIR / f"{name}.out.py").read_text()
    diff = unified_diff(before, after, "model.py")
    assert diff.startswith("--- a/model.py\n+++ b/model.py\n@@ ")
    tools = [["git", "apply", "patch.diff"]]
    if shutil.which("patch"):
        tools.append(["patch", "-p1", "--quiet", "-i", "patch.diff"])
    for tool in tools:
        (tmp_path / "model.py").write_text(before)
        (tmp_path / "patch.diff").write_text(diff)
        subprocess.run(tool, cwd=tmp_path, check=True, capture_output=True)
        assert (tmp_path / "model.py").read_text() == after, tool[0]


def test_unified_diff_without_final_newline(tmp_path):
    before, after = "a = 1\nb = 2", "a = 1\nb = 3"
    diff = unified_diff(before, after, "sub/m.py")
    assert "\\ No newline at end of file" in diff
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "m.py").write_text(before)
    (tmp_path / "p.diff").write_text(diff)
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True, capture_output=True)
    assert (tmp_path / "sub" / "m.py").read_text() == after
    assert unified_diff(before, before, "sub/m.py") == ""


@pytest.mark.parametrize("name", sorted(CASES))
def test_needs_observation_only_for_custom_ops(name):
    """Only a custom-op call asks for the eager run (not one refused before it: op_self)."""
    case = CASES[name]
    wanted = needs_observation(_source(name), _site(name))
    if not case.get("needs_observation", case["family"] == "custom-op"):
        assert wanted is None
    else:
        assert wanted is not None and set(wanted.inputs) == set(case["observed"]["inputs"])


def test_needs_observation_names_the_call():
    site = _site("scipy_call")
    assert needs_observation(_source("scipy_call"), site) == Need(
        line=16,
        function="forward",
        inputs=("h",),
        output="g",
        rule="TCD105",
        title="wrap the scipy call at line 16 in the custom op "
        "tcdoctor_patch::scipy_call_forward_l16",
    )
    result = plan(_source("scipy_call"), site)
    assert isinstance(result, NoRewrite) and result.family == "custom-op"
    assert result.reason == "needs the eager run's shapes"


def test_custom_op_records_the_op():
    result = _plan("scipy_call")
    assert isinstance(result, Rewrite)
    assert result.payload == OpPayload(
        qualname="tcdoctor_patch::scipy_call_forward_l16",
        function="_tcd_op_l16",
        inputs=("h",),
        shape_rule="scipy.special.expit: same shape as its input",
    )
    reduced = _plan("op_reduce")
    assert isinstance(reduced, Rewrite) and isinstance(reduced.payload, OpPayload)
    assert reduced.payload.shape_rule == "numpy.median: reduces over axis 1"
    assert "h.shape[:1] + h.shape[2:]" in reduced.source


@pytest.mark.parametrize(
    "shape, rows, cols",
    [("(8, 64)", 8, 64), ("(8, 32)", 8, 32)],
)
def test_custom_op_refuses_a_shape_its_rule_does_not_give(shape, rows, cols):
    """The observed call must agree with the shape rule: a reduction observed with the input's
    own shape is not the rule's (the fake would be wrong on every other input)."""
    observed = {
        "inputs": {"h": {"type": "tensor", "shape": [rows, cols], "dtype": "float32"}},
        "output": {"type": "tensor", "shape": [rows, cols], "dtype": "float32"},
    }
    result = plan(_source("op_reduce"), _site("op_reduce"), observed)
    assert isinstance(result, NoRewrite)
    assert f"the shape rule (numpy.median: reduces over axis 1) gives ({rows},)" in result.reason
    assert f"produced {shape}" in result.reason


def test_tensor_cond_records_the_branches():
    result = _plan("item_branch")
    assert isinstance(result, Rewrite)
    assert result.payload == BranchPayload(
        function="forward",
        if_line=15,
        test="h.sum().item() > 0",
        predicate="h.sum() > 0",
        passthrough=(),
    )
    no_else = _plan("cond_no_else")
    assert isinstance(no_else.payload, BranchPayload) and no_else.payload.passthrough
    assert "clone" in no_else.note


@pytest.mark.parametrize(
    "test, pred",
    [
        ("t.item() > 0.1", "t.double() > 0.1"),  # 0.1 is not exact in float32 or bf16
        ("t.item() > 0", "t > 0"),
        ("t.item() >= 0.5", "t >= 0.5"),
        ("t.item() < -256", "t < -256"),
        ("t.item() < 257", "t.double() < 257"),  # 257 is not a bfloat16
        ("t.item() > u.item()", "t.double() > u.double()"),
        ("abs(t.item()) > 2", "abs(t.double()) > 2"),
        ("t.item()", "t"),
        ("not t.item()", "torch.logical_not(t)"),
        ("t.any()", "t.any()"),
    ],
)
def test_the_predicate_keeps_the_tests_precision(test, pred):
    """`t.item() > 0.1` compares as a double; `t > 0.1` in t's dtype: .item() becomes .double(),
    dropped only beside literals every half-precision value compares with exactly."""
    got = predicate(cst.parse_expression(test))
    assert cst.Module([]).code_for_node(got) == pred


def test_only_the_statement_at_the_line_changes():
    """A guard removes only the statement's own lines and adds them back indented (libcst keeps
    every comment and the layout of the rest)."""
    before = _source("print_multiline")
    diff = unified_diff(before, (CASES_DIR / "print_multiline.out.py").read_text(), "m.py")
    removed = [
        ln[1:] for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")
    ]
    added = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert removed == before.splitlines()[13:18]
    assert added == ["import torch", "        if not torch.compiler.is_compiling():"] + [
        "    " + ln for ln in removed
    ]


@pytest.mark.parametrize(
    "source, line, reason",
    [
        ("def f(x:\n    return x\n", 1, "does not parse"),
        ("import torch\n\n\ndef f(x):\n    return x\n", 2, "holds no statement"),
        ("def f(x):\n    # a comment\n    return x\n", 2, "holds no statement"),
        ("def f(x):\n    return x\n", 9, "outside the file"),
        ("def f(x):\n    return x\n", 0, "outside the file"),
        ("", 1, "outside the file"),
        ("def f(x):\n    y = x\n    return y\n", 2, "no mechanical patch"),
        ("if x:\n    pass\nelse:\n    pass\n", 3, "holds no statement"),
    ],
)
def test_odd_input_gives_no_rewrite(source, line, reason):
    result = plan(source, Site(line, "generic_jump TensorVariable()"))
    assert isinstance(result, NoRewrite)
    assert reason in result.reason
    assert needs_observation(source, Site(line, "x")) is None


def test_import_is_torch_free():
    code = (
        "import tcdoctor.experiments.rewrite, tcdoctor.experiments.rewrite.pages, sys; "
        "assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def _inline(source: str, line: int, gb_type: str = "generic_jump TensorVariable()") -> Rewrite:
    result = plan(source, Site(line, gb_type))
    assert isinstance(result, Rewrite), getattr(result, "reason", result)
    compile(result.source, "inline.py", "exec")
    return result


def test_tensor_cond_clones_a_name_bound_to_another():
    """`y = x` in a branch would return an alias of x, which torch.cond refuses."""
    source = "import torch\n\n\ndef f(x):\n    if x.sum().item() > 0:\n        y = x * 2\n"
    result = _inline(source + "    else:\n        y = x\n    return y\n", 5)
    assert "        y = x\n        return y.clone()\n" in result.source
    assert "        y = x * 2\n        return y\n" in result.source
    assert "y = torch.cond(x.sum() > 0, _tcd_true_5, _tcd_false_5, ())" in result.source


def test_tensor_cond_negated_test():
    source = (
        "import torch\n\n\ndef f(x):\n    if not x.any().item():\n        x = x + 1\n    return x\n"
    )
    result = _inline(source, 5)
    assert "x = torch.cond(torch.logical_not(x.any()), _tcd_true_5, _tcd_false_5, (x,))" in (
        result.source
    )


def test_guard_check_wraps_an_elif_chain():
    """A break at the elif's test: the whole chain goes under the guard (its other branch reports
    too, and would still run when compiling if only one test were guarded)."""
    source = (
        "import torch\n\n\ndef f(x):\n    if x.max() > 9:\n        print('big')\n"
        "    elif x.min() < -9:\n        print('small')\n    return x\n"
    )
    result = _inline(source, 7)
    assert result.family == "guard-check"
    assert "    if not torch.compiler.is_compiling():\n        if x.max() > 9:\n" in result.source


def test_leftover_break_among_statements_on_one_line():
    result = _inline("import torch\n\n\ndef f(x):\n    y = x; torch._dynamo.graph_break()\n", 5)
    assert result.source.endswith("def f(x):\n    y = x\n")


# -- files byte for byte: CRLF line endings and a byte-order mark --------------------------------


def _apply_tools() -> list[list[str]]:
    tools = [["git", "apply", "patch.diff"]]
    if shutil.which("patch"):
        tools.append(["patch", "-p1", "--quiet", "-i", "patch.diff"])
    return tools


@pytest.mark.parametrize(
    "name, line", [("print_stat", 15), ("leftover_break", 15), ("item_branch", 15)]
)
@pytest.mark.parametrize("bom", ["", "\ufeff"])
def test_crlf_and_bom_files_keep_every_byte_outside_the_patch(name, line, bom, tmp_path):
    """The planner keeps CRLF endings (the new lines get them too) and the byte-order mark; the
    diff applies with git apply and patch -p1 to the file's own bytes, giving the patched text
    byte for byte, and touches no line the LF patch does not."""
    lf = _source(name)
    before = bom + lf.replace("\n", "\r\n")
    result = plan(before, Site(line, CASES[name]["gb_type"], file=f"{name}.py"))
    assert isinstance(result, Rewrite), getattr(result, "reason", result)
    assert result.source.startswith(bom) and result.source.count("\ufeff") == len(bom)
    assert "\n" not in result.source.replace("\r\n", "")  # every line ends CRLF
    expected = plan(lf, Site(line, CASES[name]["gb_type"], file=f"{name}.py"))
    assert result.source == bom + expected.source.replace("\n", "\r\n")
    diff = unified_diff(before, result.source, "model.py")
    lf_diff = unified_diff(lf, expected.source, "model.py")
    changed = [ln for ln in diff.splitlines() if ln[:1] in "+-"]
    assert len(changed) == len([ln for ln in lf_diff.splitlines() if ln[:1] in "+-"])
    for tool in _apply_tools():
        (tmp_path / "model.py").write_bytes(before.encode("utf-8"))
        (tmp_path / "patch.diff").write_bytes(diff.encode("utf-8"))
        subprocess.run(tool, cwd=tmp_path, check=True, capture_output=True)
        assert (tmp_path / "model.py").read_bytes() == result.source.encode("utf-8"), tool[0]


# -- suppression -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "comment, suppressed",
    [
        ("  # tcdoctor: ignore[TCD102]", True),
        ("  # tcdoctor: ignore[TCD101, TCD102]", True),
        ("  # tcdoctor: ignore", True),
        ("  # tcdoctor: ignore[TCD103]", False),
        ("  # noqa: E501", False),
    ],
)
def test_a_suppression_comment_names_its_codes(comment, suppressed):
    source = "import torch\n\n\ndef f(h):\n    print(h.mean())" + comment + "\n    return h\n"
    result = plan(source, Site(5, "Failed to trace builtin operator"))
    assert isinstance(result, NoRewrite) is suppressed
    if suppressed:
        assert result.suppressed and "at line 5" in result.reason


def test_a_suppression_comment_on_the_line_above_counts():
    source = (
        "import torch\n\n\ndef f(h):\n    # tcdoctor: ignore[TCD102]\n    print(h.mean())\n"
        "    return h\n"
    )
    result = plan(source, Site(6, "Failed to trace builtin operator"))
    assert isinstance(result, NoRewrite) and result.suppressed
    assert "at line 5" in result.reason
    assert needs_observation(source, Site(6, "x")) is None


# -- one rule, one unit -------------------------------------------------------------------------

PLANTED = r'''
"""TCD999 planted: `pass  # planted` becomes `pass  # planted, patched`."""

import libcst as cst

from tcdoctor.experiments.rewrite.base import Page, Proof, Rewrite, Rule
from tcdoctor.outcomes import Safety


def match(spot, observed):
    line = spot.site.line
    text, old = "".join(spot.lines), spot.lines[line - 1]
    if "pass  # planted" not in old:
        return None
    new = old.replace("# planted", "# planted, patched")
    return Rewrite(
        rule="TCD999", family="planted", safety=Safety.SAFE, title=f"mark line {line}", note="planted",
        source=text.replace(old, new, 1), line=line, proofs=(Proof.STDOUT,),
    )


RULE = Rule(
    code="TCD999", name="planted", safety=Safety.SAFE, the_break="a planted pass",
    the_rewrite="a comment added", statements=(cst.SimpleStatementLine,),
    proofs=(Proof.STDOUT,), match=match,
    page=Page(
        rewrites="a planted pass is marked", refuses="nothing", proof="eager stdout",
        example="def f():\n    pass  # planted\n", example_line=2, example_gb_type="x",
    ),
)
'''


@pytest.fixture
def planted(tmp_path, monkeypatch):
    """A rule added as a new rule is: one module (written here) and one line in the registry."""
    path = tmp_path / "planted_rule.py"
    path.write_text(PLANTED)
    spec = importlib.util.spec_from_file_location("planted_rule", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(registry, "RULES", [*registry.RULES, module.RULE])
    return module.RULE


def test_a_planted_rule_is_one_module_and_one_registry_line(planted):
    source = "def f():\n    pass  # planted\n"
    result = plan(source, Site(2, "anything"))
    assert isinstance(result, Rewrite) and result.rule == "TCD999"
    assert result.source == "def f():\n    pass  # planted, patched\n"
    assert rule("tcd999") is planted and codes()["planted"] == "TCD999"
    assert "TCD999  planted" in pages.table()
    page = pages.page(planted)
    assert page.startswith("TCD999 planted (safe)") and "+    pass  # planted, patched" in page
    # the rules before it still decide their own statements
    assert _plan("print_stat").rule == "TCD102"
    suppressed = plan("def f():\n    pass  # planted  # tcdoctor: ignore[TCD999]\n", Site(2, "x"))
    assert isinstance(suppressed, NoRewrite) and suppressed.suppressed


def test_every_rule_has_a_page_whose_example_plans():
    """`tcdoctor rules CODE`: each rule's example is planned live by the rule itself."""
    for r in registry.RULES:
        text = pages.page(r)
        assert text.startswith(f"{r.code} {r.name} ({r.safety})")
        assert "plans no patch today" not in text, text
        for part in ("What it rewrites:", "When it refuses:", "How its patch is proven:"):
            assert part in text
        example = plan(r.page.example, Site(r.page.example_line, r.page.example_gb_type),
                       r.page.example_observed)  # fmt: skip
        assert isinstance(example, Rewrite) and example.rule == r.code


def test_docs_list_every_rule_with_its_safety():
    """docs/patches.md's rule table names every rule of the registry with its safety class."""
    doc = (pathlib.Path(ROOT) / "docs" / "patches.md").read_text()
    for r in registry.RULES:
        row = next((ln for ln in doc.splitlines() if ln.startswith(f"| {r.code} ")), None)
        assert row is not None, r.code
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == r.name and cells[4].startswith(r.safety), row


def test_the_docs_rule_table_is_generated_from_the_registry():
    """docs/patches.md holds, between its markers, exactly the table the registry renders (as
    ruff's rule docs are generated from its rules)."""
    doc = (pathlib.Path(ROOT) / "docs" / "patches.md").read_text(encoding="utf-8")
    assert doc.count(pages.BEGIN) == 1 and doc.count(pages.END) == 1
    assert pages.with_table(doc) == doc, (
        f"docs/patches.md's rule table differs from the registry: run `{pages.REGENERATE}`"
    )
    table = pages.markdown_table()
    assert [ln.split(" | ")[0] for ln in table.splitlines()[2:]] == [
        f"| {r.code}" for r in registry.RULES
    ]


def test_the_docs_table_check_can_fail(monkeypatch):
    """A rule changed in the registry and not in the doc: the doc no longer matches."""
    doc = (pathlib.Path(ROOT) / "docs" / "patches.md").read_text(encoding="utf-8")
    changed = dataclasses.replace(registry.RULES[0], the_rewrite="something else")
    monkeypatch.setattr(registry, "RULES", [changed, *registry.RULES[1:]])
    assert pages.with_table(doc) != doc
    assert "| something else |" in pages.with_table(doc)


def test_the_rules_command_lists_and_pages_the_rules():
    """`tcdoctor rules`: every rule with its safety; `tcdoctor rules CODE`: its page; an unknown
    code: one line, exit 2."""
    from click.testing import CliRunner

    from tcdoctor.cli import main

    runner = CliRunner()
    listed = runner.invoke(main, ["rules"])
    assert listed.exit_code == 0
    for r in registry.RULES:
        assert any(
            ln.split()[:3] == [r.code, r.name, r.safety] for ln in listed.output.splitlines()
        ), r.code
    page = runner.invoke(main, ["rules", "tcd104"])
    assert page.exit_code == 0 and page.output.startswith("TCD104 tensor-cond (unsafe)")
    assert "torch.cond(h.sum().double() > 0.1" in page.output
    bad = runner.invoke(main, ["rules", "TCD199"])
    assert bad.exit_code == 2
    assert bad.output.strip().splitlines() == [
        "tcdoctor: error: unknown rule code 'TCD199': the rules are TCD101, TCD102, TCD103, "
        "TCD104, TCD106, TCD105, TCD107"
    ]


STATE_HELPER = """import numpy as np
import scipy.ndimage
import torch

COUNTER = {}


def smooth(x):
    LINE
    y = scipy.ndimage.convolve1d(x.detach().numpy(), taps)
    return torch.from_numpy(np.ascontiguousarray(y))
"""


@pytest.mark.parametrize(
    "line, writes",
    [
        ("taps = np.ones(5) / 5", False),  # a library call computes a value: no write
        ("taps = COUNTER.setdefault('k', np.ones(3))", True),  # a module-level dict written
        ("taps = x.add_(1)", True),  # an input updated in place
        ("taps = print(3)", True),
    ],
)
def test_a_helper_value_that_writes_state_refuses_the_op(line, writes):
    """TCD106 reads a value computed in the helper as part of the op unless it writes state
    outside it; then the op is refused with the call named (TCD107 stands in where the helper
    is called in the file; it is not here)."""
    result = plan(STATE_HELPER.replace("LINE", line), Site(10, "x", file="m.py"))
    assert isinstance(result, NoRewrite) and result.family == "helper-op"
    assert result.pending is not writes, result.reason
    if writes:
        assert f"it writes Python state (`{line.removeprefix('taps = ')}`)" in result.reason
