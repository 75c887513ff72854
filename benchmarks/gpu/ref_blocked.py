"""An independent speed reference written the way PyTorch's own recipes time code: a fresh process,
torch.utils.benchmark.Timer.blocked_autorange on each side (back-to-back calls of one side per
block, a sync at the block's edges on CUDA), eager and compiled alternated over ROUNDS rounds, the
median of each side's block medians. No tcdoctor measurement code (tcdoctor is imported only for its
Workload/TrainStep data holders, through the target). A training step is written as PyTorch's
recipes write it (zero_grad, forward and loss under the step's autocast, backward, step) and
compiled whole, each side on its own copy of the model and optimizer; MODE compiles with that
mode (default, reduce-overhead, ...).

Usage: [REF_THREADS=N] [ROUNDS=4] [MODE=default] python ref_blocked.py CASE.py [MIN_RUN_S]
  -> one JSON line."""

import contextlib
import copy
import importlib.util
import json
import os
import statistics
import sys
import tempfile

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp())
import torch  # noqa: E402
import torch.utils.benchmark as benchmark  # noqa: E402

path = os.path.abspath(sys.argv[1])
min_run = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
threads = int(os.environ.get("REF_THREADS", "1"))
rounds = int(os.environ.get("ROUNDS", "4"))
mode = os.environ.get("MODE", "default")
opts = {} if mode == "default" else {"mode": mode}
sys.path.insert(0, os.path.dirname(path))
torch.set_num_threads(threads)
spec = importlib.util.spec_from_file_location("case", path)
mod = importlib.util.module_from_spec(spec)
sys.modules["case"] = mod
spec.loader.exec_module(mod)
torch.manual_seed(0)
r = mod.build()
kind = type(r).__name__
grad = False
if kind == "tuple":
    fn, args = r[0], (r[1] if isinstance(r[1], tuple) else (r[1],))
    kw = r[2] if len(r) == 3 else {}
    fe = fn
    fc = torch.compile(copy.deepcopy(fn) if isinstance(fn, torch.nn.Module) else fn, **opts)

    def call_e():
        return fe(*args, **kw)

    def call_c():
        return fc(*args, **kw)

elif kind == "Workload":
    args, kw, grad = tuple(r.inputs), dict(r.kwargs), r.grad
    fe, fc = r.model, torch.compile(copy.deepcopy(r.model), **{**(r.compile_kwargs or {}), **opts})

    def call_e():
        return fe(*args, **kw)

    def call_c():
        return fc(*args, **kw)

elif kind == "TrainStep":
    grad = True
    dev = next(r.model.parameters()).device.type

    def make():
        m, o = copy.deepcopy((r.model, r.optimizer))
        if r.train_step is not None:
            return lambda: r.train_step(m, o, tuple(r.inputs), r.targets)

        def step():
            o.zero_grad(set_to_none=True)
            amp = (
                torch.autocast(dev, dtype=r.autocast)
                if r.autocast is not None
                else contextlib.nullcontext()
            )
            with amp:
                loss = r.loss_fn(m(*r.inputs, **r.kwargs), r.targets)
            loss.backward()
            o.step()
            return loss.detach()

        return step

    call_e, call_c = make(), torch.compile(make(), **opts)
else:
    raise SystemExit(f"unknown build() result {kind}")
ctx = torch.enable_grad if grad else torch.no_grad
with ctx():
    for _ in range(3):
        call_e()
    for _ in range(4):
        call_c()
    E, C = [], []
    for i in range(rounds):
        order = ((call_e, E), (call_c, C)) if i % 2 == 0 else ((call_c, C), (call_e, E))
        for f, times in order:
            timer = benchmark.Timer(stmt="f()", globals={"f": f}, num_threads=threads)
            times.append(timer.blocked_autorange(min_run_time=min_run).median)
e, c = statistics.median(E), statistics.median(C)
print(
    json.dumps(
        {
            "case": os.path.basename(path),
            "mode": mode,
            "threads": threads,
            "eager_median_s": e,
            "compiled_median_s": c,
            "speedup": round(e / c, 4),
            "rounds": rounds,
            "method": "blocked_autorange per side, alternated",
        }
    )
)
