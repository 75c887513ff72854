"""TCD106 helper-op, proven: the NumPy round-trip helper (scipy's gaussian_filter1d on
`x.detach().cpu().numpy()`, `np.ascontiguousarray`, `np.asarray(..., dtype=np.float32)`,
`torch.from_numpy`) wrapped whole in a custom op, planned from the breaks PyTorch reports and
proven in this process as a patch child proves it (cheap backend). Planted wrong patches are
caught by the check each breaks: a fake right only on the workload's rows (opcheck on the
variant), an op with no autograd registration (its output requires grad where the helper's does
not; a backward through it raises).

Why a custom op and not `torch.compiler.disable`: counted with PyTorch's own counters on the same
model, written by hand each way.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace

import pytest
from conftest import ROOT
from test_cure import _load, _pytorch_counts  # the cure test's loader and PyTorch's counters

from tcdoctor.experiments import proving, rewrite
from tcdoctor.options import Options

HELPER = os.path.join(ROOT, "tests", "targets", "cure", "scipy_helper.py")
OPTIONS = Options(backend="eager", budget_s=0.2, threads=1)
# the corpus model with an input variant of another batch size (16 rows against the workload's 8)
VARIANT_BUILD = """
def build():
    import tcdoctor

    torch.manual_seed(0)
    return tcdoctor.Workload(
        Model().eval(), (torch.randn(8, 64),), variants=[(torch.randn(16, 64),)]
    )
"""
FAKE = "torch.empty(x.shape, dtype=torch.float32, device=x.device)"
REGISTRATION = (
    "smooth.register_autograd(lambda ctx, grad: (None, None), setup_context=_tcd_smooth_no_grad)\n"
)


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> tuple[str, object]:
    """The corpus model (with a variant) in a folder of its own, and the one patch planned from
    the breaks PyTorch reports for one call (explain and the graph-break log), as the cold child
    plans them. The user's file is never written, so the tests share it."""
    from tcdoctor.probes import graph_breaks
    from tcdoctor.target.load import load_with_rebuild

    folder = tmp_path_factory.mktemp("helper")
    text = open(HELPER, encoding="utf-8").read()
    head = text[: text.index("def build():")]
    (folder / "scipy_helper.py").write_text(head + VARIANT_BUILD.lstrip(), encoding="utf-8")
    target = str(folder / "scipy_helper.py")
    w, _ = load_with_rebuild(target + ":build")
    gb = graph_breaks.probe(w.model, w.call_args)
    before = {"graph_breaks": gb["graph_breaks"]["count"]}
    specs, none = proving.plan({"graph_breaks": gb}, target + ":build", before)
    assert not none and len(specs) == 1, (specs, none)
    return target, specs[0]


def _prove(planned) -> dict:
    """The planned patch proven in this process, on the target loaded afresh (as its child
    loads it)."""
    from tcdoctor.target.load import load_with_rebuild

    target, spec = planned
    w, _ = load_with_rebuild(target + ":build")
    return proving.run(spec, w, OPTIONS)


def test_the_helper_is_planned_at_the_scipy_line_and_wrapped_whole(planned):
    _, spec = planned
    assert (spec.rule, spec.family, spec.at_line) == ("TCD106", "helper-op", 11)
    assert spec.title.startswith("wrap the whole helper smooth() (the break at line 11)")
    assert spec.addresses  # every break PyTorch reports inside scipy from that line


def test_the_helper_wrap_is_verified_on_every_variant(planned):
    row = _prove(planned)
    patch = row["patch"]
    assert patch["verified"] is True, (row.get("why"), patch["checks"])
    checks = patch["checks"]
    for name in ("torch.library.opcheck", "helper vs op", "gradients", "compiled on every variant"):
        assert checks[name]["passed"] is True, (name, checks[name])
        assert "variant 1" in checks[name]["detail"], (name, checks[name])
    assert "inputs requiring grad" in checks["helper vs op"]["detail"]
    assert row["cheap"]["graph_breaks"] == 0 < row["before"]["graph_breaks"]
    assert patch["observed"]["inputs"]["sigma"] == {"type": "float"}
    assert "custom_op" not in open(planned[0]).read()  # the user's file is never written


def _planted(monkeypatch, old: str, new: str) -> None:
    real = rewrite.plan

    def planted(src, site, observed=None):
        good = real(src, site, observed)
        if isinstance(good, rewrite.NoRewrite):
            return good
        assert old in good.source
        return replace(good, source=good.source.replace(old, new))

    monkeypatch.setattr(rewrite, "plan", planted)


def test_a_fake_right_only_on_the_workloads_rows_fails_opcheck(planned, monkeypatch):
    _planted(monkeypatch, FAKE, "x.new_empty((8, 64))")
    patch = _prove(planned)["patch"]
    assert patch["verified"] is False
    assert "torch.library.opcheck" in patch["failed"], patch["checks"]
    assert "variant 1" in patch["checks"]["torch.library.opcheck"]["detail"]


def test_an_op_without_its_autograd_registration_fails(planned, monkeypatch):
    """Without `register_autograd`, the op's output requires grad where the helper's does not,
    and a backward through it raises: the checks of the op against the helper and of the
    gradients fail, though outputs, breaks and opcheck's own tests may pass."""
    _planted(monkeypatch, REGISTRATION, "")
    patch = _prove(planned)["patch"]
    assert patch["verified"] is False
    assert {"helper vs op", "gradients"} <= set(patch["failed"]), patch["checks"]
    assert "requires_grad=True" in patch["checks"]["helper vs op"]["detail"]


def test_the_op_removes_the_break_that_disable_keeps(tmp_path):
    """The choice of the rewrite, counted: the helper as written, under torch.compiler.disable,
    and as the patch's op (the corpus case's .out.py), each counted by PyTorch's counters."""
    source = open(HELPER, encoding="utf-8").read()
    disabled = source.replace("def smooth(", "@torch.compiler.disable\ndef smooth(", 1)
    patched = os.path.join(ROOT, "tests", "rewrites", "scipy_helper.out.py")
    (tmp_path / "disabled.py").write_text(disabled, encoding="utf-8")
    shutil.copy(patched, tmp_path / "op.py")
    got = {}
    for name, path in (("as written", HELPER), ("disable", str(tmp_path / "disabled.py")),
                       ("op", str(tmp_path / "op.py"))):  # fmt: skip
        mod = _load(path, f"helper_choice_{name.replace(' ', '_')}")
        model, (x,) = mod.build()
        got[name] = _pytorch_counts(model, (x,))[:2]
    assert got["op"] == (1, 0), got
    assert got["disable"][1] >= 1 and got["disable"][0] >= 2, got
    assert got["as written"][1] > got["op"][1] and got["as written"][0] > got["disable"][0], got
