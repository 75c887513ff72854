"""A new rule with a new proof is one rule module, one proof module and two registry lines: a tiny
rule (written here as its own module) and its proof (a function here) are registered in this
process only, and its patch is planned from a break, proven in this process as a patch child
proves it (cheap backend), and shown, with the planted proof's check, in a report's patch row in
every format. No other file is edited. A proof name with nothing registered fails the patch.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from conftest import ROOT, saved_report
from test_cure import _load  # the cure test's module loader

from tcdoctor.experiments import proving
from tcdoctor.experiments.proving.proofs import Check, Checks, ProofContext
from tcdoctor.experiments.proving.proofs import registry as proofs
from tcdoctor.experiments.rewrite import registry
from tcdoctor.options import Options

MODEL = os.path.join(ROOT, "tests", "targets", "cure", "print_stat.py")
OPTIONS = Options(backend="eager", budget_s=0.2, threads=1)
FINDING = {"id": "B1", "line": 15, "reason": "Failed to trace builtin operator", "origin": "user"}

PLANTED = r'''
"""TCD998 planted-guard: a print guarded by is_compiling, proven by the planted proof."""

import libcst as cst

from tcdoctor.experiments.rewrite.base import Page, Rewrite, Rule
from tcdoctor.outcomes import Safety

PROOF = "planted-proof"  # its own proof, registered by the test


def match(spot, observed):
    line = spot.site.line
    old = spot.lines[line - 1]
    if not old.lstrip().startswith("print("):
        return None
    indent = old[: len(old) - len(old.lstrip())]
    new = f"{indent}if not torch.compiler.is_compiling():\n    {old}"
    return Rewrite(
        rule="TCD998", family="planted-guard", safety=Safety.UNSAFE, title=f"guard line {line}",
        note="planted", source="".join(spot.lines).replace(old, new, 1), line=line,
        proofs=(PROOF,),
    )


RULE = Rule(
    code="TCD998", name="planted-guard", safety=Safety.UNSAFE, the_break="a planted print",
    the_rewrite="guarded", statements=(cst.SimpleStatementLine,), proofs=(PROOF,), match=match,
    page=Page(
        rewrites="a print is guarded", refuses="nothing", proof="the planted proof",
        example="def f():\n    print(1)\n", example_line=2, example_gb_type="x",
    ),
)
'''


def planted_proof(ctx: ProofContext) -> Checks:
    """The planted proof: the patched copy's eager stdout is the original's, line for line."""
    same = ctx.said_orig["stdout"] == ctx.said_patch["stdout"]
    n = len(ctx.said_orig["stdout"].splitlines())
    calls = ", ".join(how for how, _ in ctx.made)
    return {"planted check": Check(passed=same, detail=f"{n} line(s) on {calls}, equal: {same}")}


@pytest.fixture
def planted(tmp_path, monkeypatch):
    """The rule's module (written here) first in the rule registry, its proof in the proofs'."""
    path = tmp_path / "planted_guard.py"
    path.write_text(PLANTED)
    module = _load(str(path), "planted_guard")
    monkeypatch.setattr(registry, "RULES", [module.RULE, *registry.RULES])
    monkeypatch.setitem(proofs.PROOFS, module.PROOF, planted_proof)
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(MODEL, folder)
    return str(folder / "print_stat.py")


def _prove(target: str) -> dict:
    from tcdoctor.target.load import load_with_rebuild

    results = {
        "graph_breaks": {"graph_breaks": {"count": 1, "unique": [{**FINDING, "file": target}]}}
    }
    specs, none = proving.plan(results, f"{target}:build", {"graph_breaks": 1})
    assert not none and [s.rule for s in specs] == ["TCD998"], (specs, none)
    w, _ = load_with_rebuild(target + ":build")
    row = proving.run(specs[0], w, OPTIONS)
    row["spec"] = specs[0].to_dict()
    return row


def test_a_planted_rule_and_proof_reach_the_reports_patch_row(planted, tmp_path):
    from tcdoctor.render.markdown import MarkdownRenderer
    from tcdoctor.render.terminal import TerminalRenderer
    from tcdoctor.report.model import Report

    row = _prove(planted)
    patch = row["patch"]
    check = patch["checks"]["planted check"]
    assert check["passed"] is True and "1 line(s) on the workload's inputs" in check["detail"]
    assert patch["rule"] == "TCD998" and patch["safety"] == "unsafe"
    failed = set(patch["failed"]) - {"not slower"}  # a speed judgement, timed apart
    assert not failed, (failed, patch["checks"], row.get("why"))
    data = json.loads(saved_report("two_breaks").read_text(encoding="utf-8"))
    data["fixes"], data["fixes_not_tried"] = [row], []
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    report = Report.load(str(path))
    for text in (TerminalRenderer().render(report), MarkdownRenderer().render(report)):
        assert "TCD998 planted-guard, unsafe" in text
        assert "planted check" in text and "1 line(s) on the workload" in text


def test_a_proof_name_with_nothing_registered_fails_the_patch(planted, monkeypatch):
    monkeypatch.delitem(proofs.PROOFS, "planted-proof")
    patch = _prove(planted)["patch"]
    assert patch["verified"] is False
    assert patch["checks"]["proof planted-proof"] == {
        "passed": False,
        "detail": "no proof of this kind",
    }
    assert "proof planted-proof" in patch["failed"]
