"""Experiment specs: one typed class per kind, read from and written to the JSON shape specs always had."""

import inspect
import json
import re

import pytest

from tcdoctor.experiments import specs
from tcdoctor.experiments.specs import (
    AblationSpec,
    ConfigFix,
    ConfigSetFix,
    DisableModuleFix,
    DynamicSpec,
    EnvFix,
    FixSpec,
    InductorConfigFix,
    ModeSpec,
    PatchFix,
    PortableCacheSpec,
    RegionalCompileSpec,
    RegionsSpec,
    Spec,
    StanceFix,
    TrainWaySpec,
)

BEFORE = {"graph_breaks": 1, "speedup": 0.9, "speedup_ci": [0.85, 0.95]}
MALLOC = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "1073741824"}

# (the dict as plans, spec files and reports hold it, its class, its phase key, its progress label)
EXAMPLES = [
    ({"kind": "mode", "mode": "max-autotune"}, ModeSpec, "mode:max-autotune", "mode=max-autotune"),
    ({"kind": "train", "way": "model"}, TrainWaySpec, "train:model", "compile the model only"),
    (
        {"kind": "train", "way": "optimizer"},
        TrainWaySpec,
        "train:optimizer",
        "compile the optimizer step only",
    ),
    ({"kind": "dynamic", "how": "static"}, DynamicSpec, "dynamic:static", "dynamic=False"),
    (
        {"kind": "dynamic", "how": "automatic"},
        DynamicSpec,
        "dynamic:automatic",
        "dynamic=None (automatic)",
    ),
    ({"kind": "dynamic", "how": "dynamic"}, DynamicSpec, "dynamic:dynamic", "dynamic=True"),
    (
        {"kind": "dynamic", "how": "marked"},
        DynamicSpec,
        "dynamic:marked",
        "mark_dynamic on the changing dims",
    ),
    (
        {"kind": "regions", "depth": 2, "automatic": True},
        RegionsSpec,
        "regions:2",
        "submodules alone (depth 2)",
    ),
    (
        {
            "kind": "fix",
            "fix": {"kind": "config", "name": "capture_scalar_outputs", "value": True},
            "addresses": ["B1"],
            "before": BEFORE,
        },
        ConfigFix,
        "fix:capture_scalar_outputs",
        "fix: capture_scalar_outputs",
    ),
    (
        {
            "kind": "fix",
            "fix": {"kind": "inductor_config", "name": "emulate_precision_casts", "value": True},
            "addresses": ["numerics"],
            "before": BEFORE,
        },
        InductorConfigFix,
        "fix:emulate_precision_casts",
        "fix: emulate_precision_casts",
    ),
    (
        {
            "kind": "fix",
            "fix": {"kind": "env", "name": "malloc_thresholds", "value": True, "env": MALLOC},
            "addresses": ["runtime"],
            "before": BEFORE,
        },
        EnvFix,
        "fix:malloc_thresholds",
        "fix: malloc_thresholds",
    ),
    (
        {
            "kind": "fix",
            "fix": {"kind": "stance", "name": "skip_guard_eval_unsafe", "value": True},
            "addresses": ["guards"],
            "before": BEFORE,
        },
        StanceFix,
        "fix:skip_guard_eval_unsafe",
        "fix: skip_guard_eval_unsafe",
    ),
    (
        {
            "kind": "fix",
            "fix": {
                "kind": "disable_module",
                "name": "block.total",
                "value": True,
                "class_name": "Total",
            },
            "addresses": ["numerics"],
            "before": BEFORE,
        },
        DisableModuleFix,
        "fix:block.total",
        "fix: block.total",
    ),
    (
        {
            "kind": "fix",
            "fix": {
                "kind": "config_set",
                "name": "reorderable_logging_functions",
                "value": True,
                "member": "print",
            },
            "addresses": ["B1"],
            "before": BEFORE,
        },
        ConfigSetFix,
        "fix:reorderable_logging_functions:print",
        "fix: reorderable_logging_functions",
    ),
    (
        {
            "kind": "fix",
            "fix": {
                "kind": "patch",
                "name": "m.py:15",
                "value": True,
                "target": "/w/m.py:build",
                "file": "/w/m.py",
                "at_line": 15,
                "gb_type": "Failed to trace builtin operator",
                "gb_id": "GB0059",
                "family": "guard-logging",
                "rule": "TCD102",
                "safety": "unsafe",
                "title": "guard the print() at line 15",
            },
            "addresses": ["B1"],
            "before": BEFORE,
        },
        PatchFix,
        "patch:m.py:15",
        "patch m.py:15",
    ),
    (
        {"kind": "ablation", "backend": "aot_eager"},
        AblationSpec,
        "ablation:aot_eager",
        "backend='aot_eager'",
    ),
    (
        {
            "kind": "regional_compile",
            "block": "LlamaDecoderLayer",
            "names": ["model.layers.0", "model.layers.1"],
            "container": "model.layers",
            "share": 0.9,
            "compile_args": "",
        },
        RegionalCompileSpec,
        "remedy:regional",
        "regional compilation (2 × LlamaDecoderLayer)",
    ),
    (
        {"kind": "portable_cache", "path": "/tmp/w/cache-artifacts.bin", "artifact_bytes": 1024},
        PortableCacheSpec,
        "remedy:portable_cache",
        "portable cache (load_cache_artifacts)",
    ),
]


def concrete_spec_classes() -> set[type]:
    """Every spec class that can be instantiated, found by walking the subclasses (not the registry)."""
    out, todo = set(), [Spec]
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if not inspect.isabstract(cls):
            out.add(cls)
    return out


def test_every_spec_class_has_an_example():
    assert {cls for _, cls, _, _ in EXAMPLES} == concrete_spec_classes()


@pytest.mark.parametrize("d, cls, key, label", EXAMPLES, ids=[e[2] for e in EXAMPLES])
def test_round_trip_key_and_label(d, cls, key, label):
    spec = Spec.from_dict(d)
    assert type(spec) is cls and cls.from_dict(d) == spec
    assert spec.to_dict() == d  # today's dict shape, unchanged
    assert Spec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec  # through a spec file
    assert list(spec.to_dict()) == list(d)  # same key order: event files read the same
    assert (spec.key, spec.label, spec.phase) == (key, label, "strategy:" + key)


def test_a_spec_and_its_dicts_share_no_list_or_dict():
    d = EXAMPLES[8][0]
    spec = Spec.from_dict(json.loads(json.dumps(d)))
    spec.to_dict()["addresses"].append("B2")
    assert spec.addresses == ["B1"]


def test_fix_lines_are_what_a_user_writes():
    lines = {
        type(s): s.line for s in (Spec.from_dict(e[0]) for e in EXAMPLES) if isinstance(s, FixSpec)
    }
    assert lines == {
        ConfigFix: "torch._dynamo.config.capture_scalar_outputs = True",
        InductorConfigFix: "torch._inductor.config.emulate_precision_casts = True",
        EnvFix: "MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824"
        "  # in the environment the process starts with",
        StanceFix: 'torch.compiler.set_stance("default", skip_guard_eval_unsafe=True)  # after warm-up',
        DisableModuleFix: "Total.forward = torch.compiler.disable(Total.forward)  # block.total runs eagerly",
        ConfigSetFix: "torch._dynamo.config.reorderable_logging_functions.add(print)",
        PatchFix: "the source patch for m.py:15 (TCD102 guard-logging, unsafe)",
    }


def test_what_the_parent_asks_a_spec():
    by_class = {cls: Spec.from_dict(d) for d, cls, _, _ in EXAMPLES}
    budgeted = {cls for cls, s in by_class.items() if s.uses_fix_budget}
    assert budgeted == {
        ConfigFix,
        ConfigSetFix,
        PatchFix,
        InductorConfigFix,
        EnvFix,
        StanceFix,
        DisableModuleFix,
        AblationSpec,
        RegionalCompileSpec,
        PortableCacheSpec,
    }
    # what measures a cold compile never starts from the main analysis's cache: the remedies, and
    # the ways compared on their cold compile (modes, training ways, shape settings)
    assert {cls for cls, s in by_class.items() if s.fresh_cache} == {
        RegionalCompileSpec,
        PortableCacheSpec,
        ModeSpec,
        TrainWaySpec,
        DynamicSpec,
    }
    # what needs nothing at process start and is not compared cold runs in the warm process
    assert {cls for cls, s in by_class.items() if s.shares_process} == {
        ConfigFix,
        ConfigSetFix,
        InductorConfigFix,
        StanceFix,
        AblationSpec,
    }
    assert not any(s.shares_process and s.fresh_cache for s in by_class.values())
    assert by_class[EnvFix].child_env == MALLOC
    assert all(s.child_env is None for cls, s in by_class.items() if cls is not EnvFix)
    assert {s.section for s in by_class.values()} == {
        "modes",
        "training",
        "dynamic",
        "regions",
        "fixes",
        "ablation",
        "remedies",
    }


def test_a_partial_old_dict_fills_the_defaults():
    spec = Spec.from_dict({"kind": "fix", "fix": {"kind": "env", "name": "malloc_thresholds"}})
    assert spec == EnvFix("malloc_thresholds") and spec.value is True and spec.addresses == []
    assert Spec.from_dict({"kind": "regions", "depth": 1}) == RegionsSpec(1, automatic=False)


@pytest.mark.parametrize(
    "d, message",
    [
        ({"kind": "nope"}, "unknown experiment kind 'nope'"),
        (
            {"kind": "fix", "fix": {"kind": "nope", "name": "x"}},
            "unknown experiment kind 'fix' ('nope')",
        ),
        ({"kind": "fix"}, "unknown experiment kind 'fix' in spec {'kind': 'fix'}"),
        ({"mode": "default"}, "unknown experiment kind None"),
        ({"kind": "mode"}, "ModeSpec spec {'kind': 'mode'} lacks mode"),
    ],
)
def test_an_unknown_or_incomplete_spec_fails_clearly(d, message):
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        Spec.from_dict(d)


def test_the_error_lists_the_known_kinds_and_a_subclass_reads_only_its_own():
    with pytest.raises(
        ValueError, match="known kinds are 'ablation', 'dynamic', 'fix' \\('config'\\)"
    ):
        Spec.from_dict({"kind": "nope"})
    with pytest.raises(ValueError, match="is a AblationSpec, not a FixSpec"):
        FixSpec.from_dict({"kind": "ablation", "backend": "eager"})


def test_abstract_bases_cannot_be_made():
    for cls in (Spec, FixSpec):
        with pytest.raises(TypeError):
            cls(name="x") if cls is FixSpec else cls()


def test_every_spec_class_has_a_runner():
    from tcdoctor.experiments import strategies

    for cls in concrete_spec_classes():
        assert any(c in strategies.RUNNERS for c in cls.__mro__), cls


def test_specs_import_no_torch():
    """The parent (launcher, progress) asks specs; it must not import torch."""
    import subprocess
    import sys

    from conftest import ROOT

    code = "import sys, tcdoctor.experiments.specs; print(any(m.startswith('torch') for m in sys.modules))"
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert p.returncode == 0 and p.stdout.strip() == "False", p.stderr
    assert specs.PHASE_PREFIX == "strategy:"
