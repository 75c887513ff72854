"""Source patches for graph breaks (tcdoctor/experiments/rewrite.py), torchfix's layout: each case is
plain user code, tests/rewrites/NAME.in.py (or, for the cure corpus's models, the model itself,
tests/targets/cure/NAME.py: one file, never a copy that could drift), with its break site in
cases.json, and either NAME.out.py (the exact patched source) or an expected NoRewrite reason. Fast and torch-free: nothing
here imports torch (whether the patches compile away the breaks is the proof's job, in a child)."""

import json
import pathlib
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

from tcdoctor.experiments.rewrite import (
    CODES,
    NoRewrite,
    Rewrite,
    Site,
    needs_observation,
    plan,
    unified_diff,
)

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
    assert families == set(CODES), "one case or more per family"


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
    assert result.rule == CODES[case["family"]]
    assert result.safety == ("safe" if case["family"] == "leftover-graph-break" else "unsafe")
    assert list(result.checks) == case["checks"]
    assert f"line {case['line']}" in result.title or f"line {_stmt_line(name)}" in result.title
    assert result.note
    assert result.source == (CASES_DIR / f"{name}.out.py").read_text()


def _stmt_line(name: str) -> int:
    """The first line of a multi-line statement PyTorch reports one of its inner lines for."""
    return {"op_fixed_shape": 7}.get(name, CASES[name]["line"])


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
        assert wanted is not None and set(wanted["inputs"]) == set(case["observed"]["inputs"])


def test_needs_observation_names_the_call():
    site = _site("scipy_call")
    assert needs_observation(_source("scipy_call"), site) == {
        "line": 16,
        "function": "forward",
        "inputs": ["h"],
        "output": "g",
    }
    result = plan(_source("scipy_call"), site)
    assert isinstance(result, NoRewrite) and result.family == "custom-op"
    assert result.reason == "needs the eager run's shapes"


def test_custom_op_records_the_op():
    result = _plan("scipy_call")
    assert isinstance(result, Rewrite)
    assert result.op == {
        "qualname": "tcdoctor_patch::scipy_call_forward_l16",
        "function": "_tcd_op_l16",
        "inputs": ["h"],
    }
    assert "fixed shape" not in result.note
    fixed = _plan("op_fixed_shape")
    assert isinstance(fixed, Rewrite)
    assert "fake: fixed shape (8, 4) as observed" in fixed.note
    assert fixed.op is not None and fixed.op["inputs"] == ["x", "k"]


def test_tensor_cond_records_the_branches():
    result = _plan("item_branch")
    assert isinstance(result, Rewrite)
    assert result.branch == {
        "predicate": "h.sum().item() > 0",
        "function": "forward",
        "true_lines": [16, 16],
        "false_lines": [18, 18],
    }
    no_else = _plan("cond_no_else")
    assert isinstance(no_else, Rewrite) and no_else.branch is not None
    assert no_else.branch["false_lines"] is None
    assert "clone" in no_else.note


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
    code = "import tcdoctor.experiments.rewrite, sys; assert 'torch' not in sys.modules"
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
