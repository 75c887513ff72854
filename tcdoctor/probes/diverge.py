"""Which compiled graph, and which of its calls, first returns outputs that differ from eager's
(issue 64), in the process that runs this file:

    python -m tcdoctor.probes.diverge path/to/model.py:build --out DIR [--backend inductor]

Method. The target is built as `analyze` builds it and compiled as the user compiles it, with the
analysis's backend wrapped (`Recorder`): every graph Dynamo hands the backend is compiled by that
backend, unchanged, and its compiled callable is wrapped. The workload is called once, as the
numerics phase calls it (RNG reset first). On each call of each compiled graph the wrapper clones
the real inputs at the graph's boundary (tensors, and the Python floats and ints Dynamo passes as
0-d tensors), runs the compiled graph on the originals (the program goes on exactly as compiled),
then the same FX graph eagerly and in float64 on the clones, and judges every output as the
numerics phase judges the model's (`numerics.compare_leaf`: the harness's rule, tolerance by
dtype). The first call that fails names the graph (its compile id; its function, file and line from
CompilationMetrics; its specialisations from the guards of its cache entry, e.g. `L['t'] == 0.0`)
and the call (its number, the shapes of its tensors, the values of its scalars). Its inputs are
saved and the graph's code is written as `tcdoctor-repro.py` (probes/repro_script.py), which
this process then runs in a fresh process of its own with `--fp64 --print-json`: Inductor, aot_eager and
Inductor in float64 on the same call, as a user running the script would see them. The last stdout
line is the JSON result.

Pitfalls. Comparing stops at the first diverging call (later graphs are fed inputs that already
differ, and every call compared costs an eager and a float64 rerun); at most MAX_CALLS calls are
compared. A graph that changes its inputs in place is rerun on clones, so each side starts from the
same values. A graph whose outputs are not tensors is compared on its tensors only. Dynamo hands
floats to the graph as 0-d float64 tensors: those are the "scalars" named. The eager rerun draws
its own random numbers: under --fallback-random the RNG state is restored before it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree

from ..report.numerics_row import NumericsRow
from . import repro_script
from .numerics import compare_leaf, to_fp64

MAX_CALLS = 2000  # compiled calls compared at most, in all graphs
MAX_SAVE_BYTES = 256 * 2**20  # the diverging call's inputs are saved up to this size
SCRIPT_RESERVE_S = 120.0  # of the budget, kept for running the reproducer (two Inductor compiles)


@dataclass
class Graph:
    """One compiled graph: its compile id, its FX graph, its inputs' names and sources."""

    compile_id: str
    gm: Any
    names: list[str]
    sources: list[str | None]  # the user's name of each input (`dt`, `self.f.l1.weight`), if known
    scalars: list[bool]  # inputs that are Python floats/ints Dynamo passes as 0-d tensors
    calls: int = 0


@dataclass
class Divergence:
    """The first call whose compiled outputs fail the numerics rule against eager's."""

    compile_id: str
    call: int  # the graph's own call number, from 1
    call_overall: int  # among all compiled calls, from 1
    shapes: dict[str, list[int]]
    scalars: dict[str, float | int | bool]
    outputs: list[NumericsRow]  # numerics.compare_leaf rows of the failing outputs
    calls_before: list[dict] = field(default_factory=list)  # this graph's earlier calls (agreed)
    # the same function's earlier calls, any graph: (compile id, {source: scalar value})
    frame_before: list[tuple[str, dict]] = field(default_factory=list)


def _source_name(node: Any) -> str | None:
    ga = node.meta.get("grapharg")
    src = getattr(ga, "source", None)
    try:
        return src.name if src is not None else None
    except Exception:  # noqa: BLE001 - a source kind without a name
        return None


def _is_scalar(node: Any) -> bool:
    return bool(getattr(node.meta.get("grapharg"), "pass_arg_as_tensor", False))


def _clone(x: Any) -> Any:
    return x.detach().clone() if isinstance(x, torch.Tensor) else x


def _leaves(out: Any) -> list[tuple[str, Any]]:
    flat, _ = pytree.tree_flatten(out)
    return [(f"output {i}", v) for i, v in enumerate(flat)]


class Recorder:
    """A backend that compiles each graph with `inner` and compares each call with eager's.

    `tol_dtype`: the autocast dtype (the numerics tolerance); `deadline`: time.monotonic() after
    which calls run compiled only."""

    def __init__(self, inner: Callable, tol_dtype: Any, deadline: float):
        self.inner, self.tol_dtype, self.deadline = inner, tol_dtype, deadline
        self.graphs: dict[str, Graph] = {}
        self.found: Divergence | None = None
        self.inputs: list[Any] | None = None  # the diverging call's inputs (clones)
        self.compared = 0
        self.stopped: str | None = None  # why comparing stopped before the run ended
        self.history: dict[str, list[dict]] = {}
        self.frames: dict[str, list[tuple[str, dict]]] = {}  # frame id -> its calls' scalars

    def __call__(self, gm: Any, example_inputs: list) -> Callable:
        from torch._guards import CompileContext

        cid = str(CompileContext.current_compile_id())
        ph = [n for n in gm.graph.nodes if n.op == "placeholder"]
        g = Graph(
            cid,
            gm,
            [n.name for n in ph],
            [_source_name(n) for n in ph],
            [_is_scalar(n) for n in ph],
        )
        compiled = self.inner(gm, example_inputs)

        def run(*args: Any) -> Any:
            if self.found is not None or self.stopped is not None:
                return compiled(*args)
            if self.compared >= MAX_CALLS or time.monotonic() > self.deadline:
                self.stopped = (
                    f"{self.compared} calls compared, the most it compares"
                    if self.compared >= MAX_CALLS
                    else f"its time budget ran out after {self.compared} calls"
                )
                return compiled(*args)
            self.graphs[cid] = g
            clones = [_clone(a) for a in args]
            rng = torch.get_rng_state()
            out = compiled(*args)
            after = torch.get_rng_state()
            torch.set_rng_state(rng)
            self._compare(g, clones, out)
            torch.set_rng_state(after)
            return out

        return run

    def _compare(self, g: Graph, clones: list, out: Any) -> None:
        g.calls += 1
        self.compared += 1
        eager = run_graph(g.gm, clones)
        try:
            ref = run_graph(g.gm, to_fp64([_clone(c) for c in clones]), fp64=True)
        except Exception:  # noqa: BLE001 - the graph has no float64 form: judged without one
            ref = None
        rows = judge_outputs(eager, out, ref, self.tol_dtype)
        call = describe_call(g, clones)
        frame = self.frames.setdefault(g.compile_id.split("/")[0], [])
        frame.append((g.compile_id, call["scalars"]))
        failed = [r for r in rows if r.passed is False]
        if not failed:
            worst = max((r.max_abs_err or 0.0 for r in rows), default=0.0)
            self.history.setdefault(g.compile_id, []).append({**call, "max_abs_err": worst})
            return
        self.found = Divergence(
            g.compile_id,
            g.calls,
            self.compared,
            call["shapes"],
            call["scalars"],
            failed[:5],
            self.history.get(g.compile_id, [])[-5:],
            frame[:-1],
        )
        self.inputs = clones


def run_graph(gm: Any, args: list, fp64: bool = False) -> Any:
    """The FX graph eagerly on `args`: no_grad, and no autocast for the float64 side."""
    with torch.no_grad():
        if fp64:
            with torch.autocast("cpu", enabled=False):
                return gm(*args)
        return gm(*args)


def judge_outputs(eager: Any, compiled: Any, fp64: Any, tol_dtype: Any) -> list[NumericsRow]:
    """One numerics row per tensor output (the rule of probes/numerics.py), in output order."""
    refs = dict(_leaves(fp64)) if fp64 is not None else {}
    rows = []
    for (path, e), (_, c) in zip(_leaves(eager), _leaves(compiled)):
        if isinstance(e, torch.Tensor) and isinstance(c, torch.Tensor):
            row = compare_leaf(path, e, c.detach(), refs.get(path), tol_dtype)
            if e.numel() == 1 and e.is_floating_point():  # a scalar output: both values
                row.eager_value, row.compiled_value = e.item(), c.item()
            rows.append(row)
    return rows


def describe_call(g: Graph, args: list) -> dict:
    """{'shapes': {name: shape} of the tensors, 'scalars': {name: value} of the Python scalars}."""
    shapes, scalars = {}, {}
    for name, src, is_scalar, a in zip(g.names, g.sources, g.scalars, args):
        label = src or name
        if is_scalar and isinstance(a, torch.Tensor) and a.numel() == 1:
            scalars[label] = a.item()
        elif isinstance(a, torch.Tensor):
            shapes[label] = list(a.shape)
        elif isinstance(a, (int, float, bool)):
            scalars[label] = a
    return {"shapes": shapes, "scalars": scalars}


def graph_site(compile_id: str) -> dict:
    """Function, file, line of a compile id (CompilationMetrics), and its specialisations: the
    guards of its cache entry that fix a Python scalar's value (`L['t'] == 0.0`)."""
    from torch._dynamo.utils import get_compilation_metrics

    # the latest entry of that id: Dynamo's reset numbers frames from 0 again, and keeps the metrics
    same = [m for m in get_compilation_metrics() if str(m.compile_id) == compile_id]
    m = same[-1] if same else None
    site = {
        "function": getattr(m, "co_name", None),
        "file": getattr(m, "co_filename", None),
        "line": getattr(m, "co_firstlineno", None),
    }
    site["guards"] = specialisations(_code_parts(compile_id, site))
    return site


def _code_parts(compile_id: str, site: dict) -> list[str]:
    """The guard code of the cache entry compiled as `compile_id` ([] where torch keeps none)."""
    try:
        from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list
        from torch._dynamo.convert_frame import input_codes
    except ImportError:
        return []
    for ref in list(getattr(input_codes, "seen", [])):
        code = ref()
        if code is None or code.co_name != site["function"]:
            continue
        if code.co_filename != site["file"] or code.co_firstlineno != site["line"]:
            continue
        for entry in _debug_get_cache_entry_list(code):
            if str(getattr(entry, "compile_id", "")) == compile_id:
                return list(getattr(entry.guard_manager, "code_parts", []) or [])
    return []


def specialisations(parts: list[str]) -> list[str]:
    """The guards that fix a local's value, `L['t'] == 0.0`, or an expression of locals,
    `L['t'] + L['dt'] == 1.0` (a float Inductor specialised); not type, id or tensor checks."""
    import re

    value = re.compile(r"^L\['[^']+'\](\.\w+)* == ([-+0-9.e]+|True|False|None)$")
    expression = re.compile(r"^[-+*/() .0-9e]*L\['[^']+'\][^_]*== [-+0-9.e]+$")
    parts = [p.strip() for p in parts]
    keep = [p for p in parts if "()" not in p]  # no tensor size, stride or offset checks
    return [p for p in keep if value.match(p) or expression.match(p)][:20]


def _backend(backend: str, mode: str | None, compile_kwargs: dict) -> Callable:
    """The backend as torch.compile builds it from the analysis's name and mode."""
    if backend == "inductor":
        options = compile_kwargs.get("options")
        return torch._TorchCompileInductorWrapper(mode, options, compile_kwargs.get("dynamic"))
    from torch._dynamo.backends.registry import lookup_backend

    return lookup_backend(backend)


def record_run(target: str, backend: str, mode: str | None, deadline: float) -> tuple:
    """Build the target, compile it with the recorder, call it once: (recorder, workload)."""
    from ..target.load import load_with_rebuild
    from ..target.pristine import reset_rng_state
    from . import calls

    workload, _ = load_with_rebuild(target)
    torch._dynamo.reset()  # compile ids from 0/0, as in the user's own process
    torch._dynamo.utils.clear_compilation_metrics()
    torch._dynamo.utils.set_compilation_metrics_limit(4096)
    kwargs = {
        k: v for k, v in workload.compile_kwargs.items() if k not in ("backend", "mode", "options")
    }
    rec = Recorder(_backend(backend, mode, workload.compile_kwargs), workload.autocast, deadline)
    compiled = torch.compile(workload.model, backend=rec, **kwargs)
    device = calls.detect(workload.model, workload.call_args)
    reset_rng_state()
    calls.call(compiled, workload.call_args, workload, device)
    return rec, workload


def search(
    target: str, out: str, backend: str, mode: str | None, budget_s: float, fallback_random: bool
) -> dict:
    """The search (the module docstring): the diverging graph and call, its reproducer written to
    `out` and run there in a fresh process; a dict with `not_measured` where a step cannot run."""
    start = time.monotonic()
    if fallback_random:
        torch._inductor.config.fallback_random = True
    rec, workload = record_run(target, backend, mode, start + budget_s - SCRIPT_RESERVE_S)
    result: dict[str, Any] = {
        "calls_compared": rec.compared,
        "graphs_compared": len(rec.graphs),
        "compare_s": round(time.monotonic() - start, 2),
    }
    if rec.found is None:
        why = rec.stopped or "no compiled graph's outputs differ from eager's beyond tolerance"
        return {**result, "found": None, "why_none": why}
    found = rec.found
    g = rec.graphs[found.compile_id]
    site = graph_site(found.compile_id)
    kept = {k: v for k, v in vars(found).items() if k != "frame_before"}
    earlier = dict.fromkeys(cid for cid, _ in found.frame_before)  # the function's earlier graphs
    site["earlier"] = [{"compile_id": c, "guards": graph_site(c)["guards"]} for c in earlier]
    result.update(found={**kept, "earlier_calls": len(found.frame_before)}, site=site)
    written = write_repro(out, g, rec.inputs or [], found, site)
    result.update(written)
    if "not_measured" not in written:
        left = budget_s - (time.monotonic() - start)
        result["reruns"] = run_script(os.path.join(out, repro_script.SCRIPT_NAME), left)
    result["total_s"] = round(time.monotonic() - start, 2)
    return result


def write_repro(out: str, g: Graph, args: list, found: Divergence, site: dict) -> dict:
    """The script and the recorded inputs in `out`: their names, the tensors saved and their
    size; `not_measured` (why) where the graph cannot be written or the inputs are too large."""
    from ..version import __version__

    size = sum(a.numel() * a.element_size() for a in args if isinstance(a, torch.Tensor))
    if size > MAX_SAVE_BYTES:
        return {
            "not_measured": f"the diverging call's inputs are {size / 2**20:.0f} MiB, over the "
            f"{MAX_SAVE_BYTES // 2**20} MiB a reproducer saves"
        }
    try:
        gm, python = repro_script.as_floats(g.gm, g.scalars)
        source = repro_script.module_source(gm)
    except Exception as exc:  # noqa: BLE001 - the graph is then reported, not written
        return {"not_measured": f"the graph cannot be written as a script: {exc}"[:300]}
    os.makedirs(out, exist_ok=True)
    saved = repro_script.save_inputs(os.path.join(out, repro_script.INPUTS_NAME), args, python, gm)
    what = (
        f"Graph {found.compile_id} of {site.get('function')} ({os.path.basename(site.get('file') or '?')}"
        f":{site.get('line')}), call {found.call}: "
        + ", ".join(f"{k} = {v!r}" for k, v in found.scalars.items())
    )
    earlier = earlier_calls(g, found)
    text = repro_script.script_text(source, earlier, what, __version__)
    with open(os.path.join(out, repro_script.SCRIPT_NAME), "w") as f:
        f.write(text)
    return {"folder": out, "saved": saved, "saved_bytes": sum(r["bytes"] for r in saved)}


def run_script(path: str, left_s: float) -> dict:
    """The reproducer in a fresh process (`--fp64 --print-json`, its own Inductor cache): its runs,
    or `not_run` (why)."""
    import shutil
    import subprocess
    import tempfile

    if left_s < 20:
        return {"not_run": f"{left_s:.0f} s of the search's budget left"}
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=tempfile.mkdtemp(prefix="tcdoctor-repro-ic-"))
    t0 = time.monotonic()
    try:
        p = subprocess.run(
            [sys.executable, path, "--fp64", "--print-json"],
            capture_output=True,
            text=True,
            timeout=left_s,
            env=env,
            cwd=os.path.dirname(path),
        )
    except subprocess.TimeoutExpired:
        return {"not_run": f"it ran over the {left_s:.0f} s left of the search's budget"}
    finally:
        shutil.rmtree(env["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1][:300]
        return {"not_run": f"it failed: {tail}"}
    return {**json.loads(lines[-1]), "seconds": round(time.monotonic() - t0, 1)}


def guard_values(guards: list[str]) -> dict[str, float | int | bool]:
    """{"L['t']": 0.0} from the specialisations `L['t'] == 0.0` (the constants Dynamo fixed)."""
    import ast

    out: dict[str, Any] = {}
    for g in guards:
        left, _, right = g.partition(" == ")
        if not (left.startswith("L['") and left.endswith("']") and left.count("'") == 2):
            continue  # an expression of several locals fixes none of them alone
        try:
            value = ast.literal_eval(right.strip())
        except (ValueError, SyntaxError):
            continue
        if isinstance(value, (int, float, bool)):
            out[left.strip()] = value
    return out


def earlier_calls(g: Graph, found: Divergence) -> list[dict[int, Any]]:
    """The function's earlier calls as the diverging graph's scalar inputs, {position: value}:
    each call's scalars from its graph's inputs, completed by its graph's specialisations. A call
    missing one of them is left out."""
    want = {src: i for i, (src, sc) in enumerate(zip(g.sources, g.scalars)) if sc and src}
    guards: dict[str, dict] = {}
    out = []
    for cid, scalars in found.frame_before:
        if cid not in guards:
            guards[cid] = guard_values(graph_site(cid)["guards"])
        known = {**guards[cid], **scalars}
        if all(src in known for src in want):
            out.append({i: known[src] for src, i in want.items()})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tcdoctor.probes.diverge")
    p.add_argument("target")
    p.add_argument("--out", required=True, help="the folder the reproducer is written to")
    p.add_argument("--backend", default="inductor")
    p.add_argument("--mode", default=None)
    p.add_argument("--budget", type=float, default=300.0, help="seconds for the whole search")
    p.add_argument("--fallback-random", action="store_true")
    a = p.parse_args(argv)
    out = search(a.target, os.path.abspath(a.out), a.backend, a.mode, a.budget, a.fallback_random)
    print(json.dumps(out, default=lambda v: v.to_dict() if isinstance(v, NumericsRow) else str(v)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
