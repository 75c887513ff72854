"""tcdoctor's own code adds no graph, break or guard: its counts equal PyTorch's for the same code by hand.

Each case runs the real CLI (the main analysis: `graphs` from the graph_breaks phase, `graph_breaks`,
the compile phase's frames and guards) and, in a fresh process with no tcdoctor code on the compiled
path, the same step or forward written by hand and compiled whole, read from PyTorch's own
graph-break log, `counters` and CompilationMetrics. The step by hand is the closure PyTorch's recipes
write (tests/targets/closure_step.py), with Adam and with SGD; the report states that form
(`strategies.step_form`), and the user's own `train_step` as given. Before the fix, tcdoctor's standard step nested
the step one frame deeper than the hand-written one, and Dynamo logged the first break (`zero_grad`)
twice: 5 breaks for PyTorch's 4 on samples/train_adam.py.
"""

import json
import os
import subprocess
import sys
import textwrap

import conftest
import pytest
from conftest import ONE_PROCESS, SAMPLES

FLAGS = [
    "--backend",
    "eager",
    "--no-fixes",
    "--no-training-ways",
    "--no-dynamic",
    "--no-submodules",
    *ONE_PROCESS,
    "--budget",
    "0.3",
    "--threads",
    "1",
    "-q",
    "--html",
    "",
    "--json",
    "r.json",
]

TARGETS = f"""
import dataclasses, sys
import torch
from torch import nn
sys.path.insert(0, {SAMPLES!r})
import train_adam
import tcdoctor


def plain():
    return train_adam.build()


def bf16():
    return dataclasses.replace(train_adam.build(), autocast=torch.bfloat16)


def sgd():
    s = train_adam.build()
    return dataclasses.replace(s, optimizer=torch.optim.SGD(s.model.parameters(), lr=0.01))


def my_step(model, opt, inputs, targets):
    opt.zero_grad(set_to_none=True)
    loss = nn.functional.mse_loss(model(*inputs), targets)
    loss.backward()
    opt.step()
    return loss.detach()


def custom():
    s = train_adam.build()
    return tcdoctor.TrainStep(s.model, s.inputs, targets=s.targets, optimizer=s.optimizer, train_step=my_step)


class Keywords(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.lin = nn.Embedding(100, 32), nn.Linear(32, 32)

    def forward(self, input_ids, attention_mask=None):
        h = self.lin(self.emb(input_ids))
        print("a print breaks the graph")
        return (h * attention_mask[..., None]).sum(-1)


def keywords():
    ids = torch.randint(0, 100, (2, 8))
    return Keywords().eval(), (), {{"input_ids": ids, "attention_mask": torch.ones(2, 8)}}
"""

# By hand, in a fresh process: the target's objects, the step written out, compiled whole.
REFERENCE = """
import importlib.util, json, os, sys
import torch
import real_reference
from real_reference import capture_graph_breaks, dynamo_figures

path, name, how = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.dirname(path))
sys.path.append(os.path.join(os.path.dirname(real_reference.__file__), "targets"))
from closure_step import recipe_step
spec = importlib.util.spec_from_file_location("target", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
torch.manual_seed(1337)
built = getattr(mod, name)()
records = capture_graph_breaks()

if how == "infer":
    model, args, kwargs = built if len(built) == 3 else (*built, {})
    args = args if isinstance(args, tuple) else (args,)
    with torch.no_grad():
        torch.compile(model, backend="eager")(*args, **kwargs)
elif how == "custom":
    torch.compile(mod.my_step, backend="eager")(built.model, built.optimizer, built.inputs, built.targets)
else:  # the closure PyTorch's recipes write (tests/targets/closure_step.py)
    step = recipe_step(built.model, built.optimizer, built.loss_fn, built.targets, built.autocast)
    torch.compile(step, backend="eager")(*built.inputs)

print(json.dumps(dynamo_figures(records)))
"""


@pytest.fixture(scope="module")
def targets(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("counts")
    (tmp / "targets.py").write_text(textwrap.dedent(TARGETS))
    return tmp


# the reference scripts import tests/real_reference.py (PyTorch's own records, read one way)
REFERENCE_ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([os.path.join(conftest.ROOT, "tests"), conftest.ROOT]),
}


def by_hand(path: str, name: str, how: str, cwd) -> dict:
    p = subprocess.run(
        [sys.executable, "-c", REFERENCE, path, name, how],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
        env=REFERENCE_ENV,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def tcdoctor_counts(target: str, cwd) -> dict:
    rc, out, err = conftest.run_cli(cwd, "analyze", target, *FLAGS)
    assert rc == 0, (out, err[-3000:])
    rep = json.loads((cwd / "r.json").read_text())
    gb = rep["graph_breaks"]
    return {
        "records": gb["count"],
        "kinds": sorted(f["reason"] for f in gb["unique"] for _ in range(f["occurrences"])),
        "graph_break_counter": gb["dynamo_counters_graph_break"],
        "graphs": rep["graphs"]["count"],
        "frames": rep["compile"]["frames_compiled"],
        "guards": rep["guards"]["count"],
        "step_form": rep["strategies"].get("step_form"),
    }


CASES = [  # (target function, how it is written by hand, the breaks PyTorch logs for it)
    ("plain", "step", 4),  # zero_grad, backward, optimizer's _use_grad twice
    ("bf16", "step", 4),  # the same, the forward and loss under autocast
    ("sgd", "step", 4),  # the same step with SGD
    ("custom", "custom", 4),  # the user's own train_step, compiled as the user would
    ("keywords", "infer", 1),  # model(**kwargs): the print
]


@pytest.mark.parametrize("name,how,breaks", CASES, ids=[c[0] for c in CASES])
def test_counts_equal_the_same_code_compiled_by_hand(targets, tmp_path, name, how, breaks):
    path = str(targets / "targets.py")
    ref = by_hand(path, name, how, tmp_path)
    assert ref["records"] == ref["graph_break_counter"] == breaks, ref
    got = tcdoctor_counts(f"{path}:{name}", tmp_path)
    for key in ("records", "kinds", "graph_break_counter", "graphs", "frames"):
        assert got[key] == ref[key], (key, got, ref)
    form = {"step": "step(*inputs, **kwargs) closing over", "custom": "your own my_step("}.get(how)
    assert (got["step_form"] or "").startswith(form or "") and (form is None) == (
        got["step_form"] is None
    ), got
    if how != "step":  # nothing of tcdoctor's around the model or the user's step: the same guards
        assert got["guards"] == ref["guards"], (got, ref)
    else:  # the closure takes the inputs as `*inputs, **kwargs` (by hand: `step(x)`), and Dynamo
        # guards their structure: at most TYPE_MATCH + LENGTH_CHECK, TYPE_MATCH + DICT_LENGTH (measured
        # with torch 2.13: 2 more, 3 under autocast); nothing more
        assert 0 <= got["guards"] - ref["guards"] <= 4, (got, ref)


def test_two_breaks_sample_equals_torch_compile_by_hand(tmp_path):
    path = os.path.join(SAMPLES, "two_breaks.py")
    ref = by_hand(path, "build", "infer", tmp_path)
    got = tcdoctor_counts(f"{path}:build", tmp_path)
    assert (ref["records"], ref["graphs"]) == (2, 3), ref
    for key in ("records", "kinds", "graph_break_counter", "graphs", "frames", "guards"):
        assert got[key] == ref[key], (key, got, ref)


# The training ways as strategies.run_train compiles them (training.subjects), against the same way by
# hand: the whole step, torch.compile(model) in an eager step, opt.step alone (the recipe's function).
WAY = """
import json, os, sys
import torch
sys.path.insert(0, {samples!r})
import train_adam
import real_reference
from real_reference import capture_graph_breaks, dynamo_figures
sys.path.append(os.path.join(os.path.dirname(real_reference.__file__), "targets"))
from closure_step import recipe_step

who, way = sys.argv[1], sys.argv[2]
records = capture_graph_breaks()
if who == "tcdoctor":
    from tcdoctor.experiments.training import subjects

    _, run = subjects(train_adam.build, way, "eager", None)
    run(train_adam.build().inputs[0])  # build() seeds its RNG: the same inputs as every copy's
else:
    s = train_adam.build()
    model, opt, loss_fn, (x,), y = s.model, s.optimizer, s.loss_fn, s.inputs, s.targets
    forward = torch.compile(model, backend="eager") if way == "model" else model

    def opt_step():
        opt.step()

    def eager_step(x):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(forward(x), y)
        loss.backward()
        compiled_opt_step() if way == "optimizer" else opt.step()
        return loss.detach()

    compiled_opt_step = torch.compile(opt_step, backend="eager")
    step = recipe_step(model, opt, loss_fn, y)  # the closure PyTorch's recipes write
    (torch.compile(step, backend="eager") if way == "step" else eager_step)(x)
print(json.dumps(dynamo_figures(records)))
"""


@pytest.mark.parametrize("way", ["step", "model", "optimizer"])
def test_each_training_way_compiles_as_it_does_by_hand(tmp_path, way):
    script = WAY.format(samples=SAMPLES)
    out = {}
    for who in ("tcdoctor", "hand"):
        p = subprocess.run(
            [sys.executable, "-c", script, who, way],
            capture_output=True,
            text=True,
            timeout=180,
            cwd=tmp_path,
            env=REFERENCE_ENV,
        )
        assert p.returncode == 0, p.stderr[-3000:]
        out[who] = json.loads(p.stdout.strip().splitlines()[-1])
    got, ref = out["tcdoctor"], out["hand"]
    assert ref["graphs"] >= 1 and ref["records"] == (
        0 if way == "model" else 2 + 2 * (way == "step")
    )
    for key in ("records", "graphs", "frames"):
        assert got[key] == ref[key], (key, got, ref)
    extra = 4 if way == "step" else 0  # see test_counts_equal_the_same_code_compiled_by_hand
    assert 0 <= got["guards"] - ref["guards"] <= extra, (got, ref)
