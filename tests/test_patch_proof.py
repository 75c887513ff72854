"""The proof can fail: planted wrong patches (in this process, cheap backend) are caught by the
check each one breaks, and never called verified. The planner patches only the user's own code,
and the user's line that calls into a library.

Each planted patch removes its break (so the break checks alone would pass it) and breaks one
other promise: a changed eager output, a dropped eager print, a new break elsewhere, a fake shape
right only on the workload's inputs, a branch wrong only on inputs the workload never sends, a
predicate of another precision, a clone that no longer updates a buffer, a lost gradient.
"""

from __future__ import annotations

import logging
import os
import shutil
import textwrap
from dataclasses import replace

import pytest
from conftest import ROOT

from tcdoctor.experiments import proving, rewrite
from tcdoctor.experiments.proving import measure, sandbox
from tcdoctor.experiments.rewrite import BranchPayload, Proof
from tcdoctor.experiments.specs import PatchFix
from tcdoctor.options import Options

MODEL = os.path.join(ROOT, "tests", "targets", "cure", "print_stat.py")
PRINT = '        print("activation mean", h.mean())\n'
OPTIONS = Options(backend="eager", budget_s=0.2, threads=1)


def _planted(new_lines: str, old: str = PRINT, proofs=(Proof.STDOUT,), payload=None):
    """A rewrite.plan that swaps `old` for `new_lines` (and claims the given proofs)."""

    def plan(source: str, site: rewrite.Site, observed: dict | None = None) -> rewrite.Rewrite:
        assert old in source
        return rewrite.Rewrite(
            rule="TCD999",
            family="planted",
            safety="unsafe",
            title="a planted wrong patch",
            note="",
            source=source.replace(old, new_lines),
            line=site.line,
            proofs=proofs,
            payload=payload,
        )

    return plan


@pytest.fixture
def target(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(MODEL, folder)
    return str(folder / "print_stat.py")


def _run(target: str, line: int = 15, reason: str = "Failed to trace builtin operator",
         function: str = "forward", breaks: int = 1) -> dict:  # fmt: skip
    """The break at `line` of the copy at `target`, proven in this process as a patch child does."""
    from tcdoctor.target.load import load_with_rebuild

    w, _ = load_with_rebuild(target + ":build")
    site = {"file": target, "function": function, "reason": reason}
    spec = PatchFix(
        name=f"{os.path.basename(target)}:{line}",
        target=target + ":build",
        file=target,
        at_line=line,
        gb_type=reason,
        gb_id=None,
        before={"graph_breaks": breaks, "sites": [{**site, "line": line}] * breaks},
    )
    return proving.run(spec, w, OPTIONS)


def _proven(row: dict) -> dict:
    """The checks of a proof whose subject is correctness: every one passed but "not slower" (a
    torch.cond compiled by the cheap backend may run slower than the break it removes: a speed
    judgement, timed apart)."""
    checks = row["patch"]["checks"]
    failed = [n for n, c in checks.items() if not c["passed"] and n != "not slower"]
    assert not failed, (failed, checks, row.get("why"))
    return checks


def _prove(target: str, monkeypatch, new_lines: str) -> dict:
    monkeypatch.setattr(rewrite, "plan", _planted(new_lines))
    return _run(target)


@pytest.mark.parametrize(
    ("new_lines", "fails"),
    [
        # the output doubled: eager outputs differ
        ("        h = h * 2\n", "eager outputs"),
        # the print deleted: no break, same outputs, but eager prints nothing
        ("", "eager stdout"),
        # the print guarded, but a break added elsewhere: fewer breaks fails (1 -> 1), and it is new
        (
            "        if not torch.compiler.is_compiling():\n"
            '            print("activation mean", h.mean())\n'
            "        torch._dynamo.graph_break()\n",
            "no new break",
        ),
    ],
)
def test_a_planted_wrong_patch_is_caught_by_the_check_it_breaks(
    target, monkeypatch, new_lines, fails
):
    row = _prove(target, monkeypatch, new_lines)
    patch = row["patch"]
    assert patch["verified"] is False
    assert fails in patch["failed"], (patch["failed"], row.get("why"))
    assert row["outcome"] == "fails verification"
    assert open(target).read().count(PRINT) == 1  # the user's file is never written


def test_the_right_patch_passes_the_same_proof(target):
    """The control: the real rewrite of the same break, proven the same way, is verified."""
    row = _run(target)
    assert row["patch"]["verified"] is True, row["patch"]["checks"]
    assert row["patch"]["rule"] == "TCD102"
    # the compiled copy is timed against the original's eager code
    assert "the original eager" in row["patch"]["checks"]["compiled numerics"]["detail"]


@pytest.mark.timing
def test_the_patched_copy_is_timed_against_the_original_eager(target, monkeypatch):
    """A planted patch whose eager code sleeps 5 ms a call and whose compiled code does not:
    against its own eager code the compiled copy would read over 50x faster; against the
    original's eager code (a print and two small Linears, well under a millisecond) it cannot."""
    new = (
        "        if not torch.compiler.is_compiling():\n"
        '            print("activation mean", h.mean())\n'
        '            __import__("time").sleep(0.005)\n'
    )
    row = _prove(target, monkeypatch, new)
    speedup = row["after"]["speedup"]
    assert speedup is not None and speedup < 10, row["after"]


def test_an_empty_break_reason_is_a_reason(target):
    """PyTorch may log a break with no reason: keyed as "", the proof runs (it raised before)."""
    assert measure.key({"file": target, "reason": ""}, os.path.dirname(target)) == (
        "print_stat.py",
        "",
    )
    assert measure.new_sites([{"file": target, "reason": None}], "/", [], "/", ("x", "")) == []
    row = _run(target, reason="")
    assert row["patch"]["verified"] is True, (row.get("why"), row["patch"]["checks"])


def test_log_records_are_captured_at_every_level():
    """A guarded logger.info under the default WARNING level is still compared: the capture
    lowers the root logger's level for the block, and puts it back."""
    root = logging.getLogger()
    level = root.level
    with sandbox.captured() as said:
        logging.getLogger("tcdoctor.test.capture").info("hidden %s", 1)
    assert said["logs"] == ["tcdoctor.test.capture INFO: hidden 1"]
    assert root.level == level


# -- a custom op whose fake is right only on the workload's inputs -------------------------------

SCIPY_MODEL = """
import scipy.special
import torch
from torch import nn

import tcdoctor


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(32, 32)

    def forward(self, x):
        h = self.a(x)
        g = torch.from_numpy(scipy.special.expit(h.detach().numpy()))
        return g * 2


def build():
    torch.manual_seed(0)
    return tcdoctor.Workload(
        Model().eval(), (torch.randn(8, 32),), variants=[(torch.randn(16, 32),)]
    )
"""
SCIPY_LINE = "        g = torch.from_numpy(scipy.special.expit(h.detach().numpy()))\n"


@pytest.fixture
def scipy_target(tmp_path):
    folder = tmp_path / "op"
    folder.mkdir()
    (folder / "op_model.py").write_text(SCIPY_MODEL.lstrip())
    return str(folder / "op_model.py")


def test_a_fake_right_only_on_the_workloads_inputs_fails_the_proof(scipy_target, monkeypatch):
    """The planted op's fake has the observed fixed shape (8, 32): right on the workload's
    inputs, wrong on the variant of 16 rows. opcheck on the variant's inputs catches it."""
    real = rewrite.plan
    source = open(scipy_target).read()

    def planted(src, site, observed=None):
        good = real(src, site, observed)
        if isinstance(good, rewrite.NoRewrite):
            return good
        wrong = good.source.replace("torch.empty_like(h)", "h.new_empty((8, 32))")
        assert wrong != good.source
        return replace(good, source=wrong)

    monkeypatch.setattr(rewrite, "plan", planted)
    row = _run(scipy_target, line=15, reason="Unsupported method call")
    patch = row["patch"]
    assert patch["verified"] is False
    assert "torch.library.opcheck" in patch["failed"], patch["checks"]
    detail = patch["checks"]["torch.library.opcheck"]["detail"]
    assert "variant 1" in detail and "the workload's inputs" not in detail.split(":")[0]
    assert open(scipy_target).read() == source


def test_the_shape_rules_fake_passes_on_every_variant(scipy_target):
    row = _run(scipy_target, line=15, reason="Unsupported method call")
    patch = row["patch"]
    assert patch["verified"] is True, (row.get("why"), patch["checks"])
    assert "variant 1" in patch["checks"]["torch.library.opcheck"]["detail"]
    assert "variant 1" in patch["checks"]["compiled on every variant"]["detail"]


# -- a branch rewrite wrong only where the workload never goes ------------------------------------

COND_MODEL = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)

    def forward(self, x):
        h = self.a(x)
        if x.sum().item() > 0.1:
            y = h * 2
        else:
            y = h * 3
        return y


def build():
    torch.manual_seed(0)
    return Model().eval(), (torch.ones(4, 8),)
"""
COND_IF = """        if x.sum().item() > 0.1:
            y = h * 2
        else:
            y = h * 3
"""
COND_PAYLOAD = BranchPayload("forward", 12, "x.sum().item() > 0.1", "x.sum().double() > 0.1")


@pytest.fixture
def cond_target(tmp_path):
    folder = tmp_path / "cond"
    folder.mkdir()
    (folder / "cond_model.py").write_text(COND_MODEL.lstrip())
    return str(folder / "cond_model.py")


def _cond(target: str) -> dict:
    return _run(target, line=12, reason="Unsupported Tensor.item() call")


def test_the_branch_rewrite_is_verified(cond_target):
    checks = _proven(_cond(cond_target))
    assert "x.sum().double() > 0.1" in checks["predicate"]["detail"]
    assert "the workload's inputs" in checks["both branches"]["detail"]
    assert checks["gradients"]["passed"] is True


@pytest.mark.parametrize(
    ("new", "payload", "fails"),
    [
        # the false branch wrong: the workload (all ones) never takes it
        (
            "        def _t(h):\n            return h * 2\n\n"
            "        def _f(h):\n            return h * 4\n\n"
            "        y = torch.cond(x.sum().double() > 0.1, _t, _f, (h,))\n",
            COND_PAYLOAD,
            "both branches",
        ),
        # outputs equal, but the gradient dropped on the true branch
        (
            "        if x.sum().item() > 0.1:\n            y = (h * 2).detach()\n"
            "        else:\n            y = h * 3\n",
            COND_PAYLOAD,
            "gradients",
        ),
    ],
)
def test_a_branch_rewrite_wrong_off_the_workload_fails(cond_target, monkeypatch, new, payload,
                                                       fails):  # fmt: skip
    monkeypatch.setattr(
        rewrite, "plan", _planted(new, COND_IF, proofs=(Proof.BRANCHES,), payload=payload)
    )
    row = _cond(cond_target)
    patch = row["patch"]
    assert patch["verified"] is False
    assert fails in patch["failed"], (patch["failed"], patch["checks"])


def test_the_predicate_check_sees_the_precision_the_workload_hits(tmp_path, monkeypatch):
    """A workload whose sum is float32's 0.1 (0.100000001490116...): above 0.1 as a double (the
    test), equal to it in float32. `x.sum() > 0.1` takes the other branch; the right rewrite,
    `x.sum().double() > 0.1`, is verified on the same input."""
    import torch  # noqa: F401 - eval() below builds the value with it

    value = "torch.tensor([[0.1] + [0.0] * 7])"
    x = eval(value)
    assert x.sum().item() > 0.1 and not bool(x.sum() > 0.1)
    folder = tmp_path / "prec"
    folder.mkdir()
    path = folder / "prec_model.py"
    path.write_text(COND_MODEL.replace("torch.ones(4, 8)", value).lstrip())
    _proven(_cond(str(path)))
    wrong = (
        "        def _t(h):\n            return h * 2\n\n"
        "        def _f(h):\n            return h * 3\n\n"
        "        y = torch.cond(x.sum() > 0.1, _t, _f, (h,))\n"
    )
    payload = replace(COND_PAYLOAD, predicate="x.sum() > 0.1")
    monkeypatch.setattr(
        rewrite, "plan", _planted(wrong, COND_IF, proofs=(Proof.BRANCHES,), payload=payload)
    )
    row = _cond(str(path))
    assert row["patch"]["verified"] is False
    assert {"predicate", "eager outputs"} <= set(row["patch"]["failed"]), row["patch"]["checks"]
    assert "disagree on the workload's inputs" in row["patch"]["checks"]["predicate"]["detail"]


def test_a_one_line_branch_is_proven(tmp_path):
    """`if t: y = a` on one line: the header line runs whichever branch is taken, so a branch is
    counted from the test evaluated where the if ran, and both are seen."""
    folder = tmp_path / "one"
    folder.mkdir()
    path = folder / "one_model.py"
    path.write_text(
        COND_MODEL.replace(
            COND_IF, "        if x.sum().item() > 0.1: y = h * 2\n        else: y = h * 3\n"
        ).lstrip()  # fmt: skip
    )
    checks = _proven(_cond(str(path)))
    detail = checks["both branches"]["detail"]
    assert "true branch taken on the workload's inputs" in detail and "false on -x" in detail


BUFFER_MODEL = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.zeros(8))

    def forward(self, x):
        buf = self.buf
        if x.sum().item() > 0:
            buf = buf * 2
        buf.add_(1)
        return x + buf


def build():
    return Model(), (torch.ones(4, 8),)
"""


def test_a_clone_that_no_longer_updates_a_buffer_fails(tmp_path, monkeypatch):
    """The planner refuses this `if` (tests/rewrites/cond_alias); planted anyway, the buffers
    compared after each eager call catch it."""
    folder = tmp_path / "buf"
    folder.mkdir()
    path = folder / "buf_model.py"
    path.write_text(BUFFER_MODEL.lstrip())
    planned = rewrite.plan(path.read_text(), rewrite.Site(12, "Unsupported Tensor.item() call"))
    assert isinstance(planned, rewrite.NoRewrite) and "updated in place" in planned.reason
    old = "        if x.sum().item() > 0:\n            buf = buf * 2\n"
    new = (
        "        def _t(buf):\n            return buf * 2\n\n"
        "        def _f(buf):\n            return buf.clone()\n\n"
        "        buf = torch.cond(x.sum() > 0, _t, _f, (buf,))\n"
    )
    payload = BranchPayload("forward", 12, "x.sum().item() > 0", "x.sum() > 0", ("buf",))
    monkeypatch.setattr(
        rewrite, "plan", _planted(new, old, proofs=(Proof.BRANCHES,), payload=payload)
    )
    row = _run(str(path), line=12, reason="Unsupported Tensor.item() call")
    patch = row["patch"]
    assert patch["verified"] is False
    assert "eager outputs" in patch["failed"] or "both branches" in patch["failed"], patch


# -- what the planner patches -------------------------------------------------------------------


def _results(findings: list[dict]) -> dict:
    return {"graph_breaks": {"graph_breaks": {"count": len(findings), "unique": findings}}}


def test_breaks_in_library_code_get_no_patch(tmp_path):
    """An HF model's breaks inside transformers (or PyTorch) are not the user's: no patch is
    planned for them and none is listed as missing; the user's own break in the same run is."""
    user = tmp_path / "m.py"
    shutil.copy(MODEL, user)
    lib = os.path.join(os.path.dirname(proving.__file__), "plan.py")  # any file that exists
    findings = [
        {"id": "B1", "file": lib, "line": 10, "reason": "Failed to trace builtin operator",
         "origin": "library"},
        {"id": "B2", "file": lib, "line": 12, "reason": "Failed to trace builtin operator",
         "origin": "pytorch"},
        {"id": "B3", "file": str(user), "line": 15, "reason": "Failed to trace builtin operator",
         "origin": "user", "gb_id": "GB0059"},
        # transformers reached from the user's `return self.b(h)`: no rule wraps a module call
        {"id": "B4", "file": str(user), "line": 16, "reason": "Unsupported method call",
         "origin": "library", "library": "transformers"},
    ]  # fmt: skip
    specs, none = proving.plan(_results(findings), f"{user}:build", {})
    assert [s.file for s in specs] == [str(user)] and not none
    assert specs[0].addresses == ["B3"] and specs[0].rule == "TCD102"


def test_breaks_inside_scipy_are_planned_at_the_users_line(tmp_path):
    """Breaks inside scipy reached from the user's line: one custom-op patch at that line,
    addressing every one of them."""
    user = tmp_path / "smooth.py"
    user.write_text(
        textwrap.dedent(
            """\
            import scipy.ndimage
            import torch


            def smooth(x):
                y = scipy.ndimage.gaussian_filter1d(x.detach().cpu().numpy(), sigma=2.0, axis=-1)
                return torch.as_tensor(y, device=x.device) + x
            """
        )
    )
    findings = [
        {"id": f"B{i}", "file": str(user), "line": 6, "reason": "Unsupported ndarray attribute "
         "access", "origin": "library", "library": "scipy", "occurrences": n}
        for i, n in ((1, 3), (2, 1))
    ]  # fmt: skip
    specs, none = proving.plan(_results(findings), f"{user}:build", {})
    assert not none and len(specs) == 1
    assert specs[0].rule == "TCD105" and specs[0].addresses == ["B1", "B2"]
    assert specs[0].title.startswith("wrap the scipy call at line 6 in the custom op")


def test_a_suppressed_break_is_listed(tmp_path):
    user = tmp_path / "m.py"
    user.write_text(open(MODEL).read().replace(PRINT, PRINT[:-1] + "  # tcdoctor: ignore\n"))
    finding = {"id": "B1", "file": str(user), "line": 15, "origin": "user",
               "reason": "Failed to trace builtin operator"}  # fmt: skip
    specs, none = proving.plan(_results([finding]), f"{user}:build", {})
    assert not specs
    assert none[0]["why"] == (
        "suppressed: `# tcdoctor: ignore` at line 15 keeps the line as it is (TCD102 "
        "guard-logging not applied)"
    )


def test_a_file_outside_the_target_folder_is_not_patched(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(MODEL, tmp_path / "b" / "layers.py")
    finding = {"id": "B1", "file": str(tmp_path / "b" / "layers.py"), "line": 15,
               "reason": "Failed to trace builtin operator", "origin": "user"}  # fmt: skip
    specs, none = proving.plan(_results([finding]), f"{tmp_path / 'a' / 't.py'}:build", {})
    assert not specs and "outside the target's folder" in none[0]["why"]
    # a link inside the folder to a file outside it: the diff could not patch it either
    os.symlink(tmp_path / "b" / "layers.py", tmp_path / "a" / "layers.py")
    finding["file"] = str(tmp_path / "a" / "layers.py")
    specs, none = proving.plan(_results([finding]), f"{tmp_path / 'a' / 't.py'}:build", {})
    assert not specs and "a link to a file outside" in none[0]["why"]
