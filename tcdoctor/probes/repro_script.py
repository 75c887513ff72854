"""`tcdoctor-repro.py`: one compiled graph and the call it diverges on, as a script a user runs alone
with their own torch and attaches to an issue on PyTorch's tracker (issue 64), and the issue's text.

Method. The graph is the FX graph Dynamo handed the backend. Dynamo passes each Python float as a
0-d float64 tensor that the graph turns back into a float (`.item()`); the script's graph takes the
float itself (`as_floats`), so Dynamo sees what the user's function saw. Its source is written by
PyTorch's own minifier code (`torch._dynamo.debug_utils.NNModuleToString`), the class every
PyTorch repro script defines; tensors the graph holds as attributes are saved with the inputs and
loaded back. The recorded inputs are `torch.save`d beside the script. The script calls the graph
eagerly, then compiled: first with the Python scalars of the function's earlier calls (`EARLIER`:
from their graphs' inputs and, where Dynamo had made a scalar a constant, from the guard that fixed
it, `L['t'] == 0.0`), so Dynamo specialises, recompiles and makes scalars dynamic as it did in the
program (automatic dynamic), and a compiler state those compiles leave (Inductor's caches) is
there as it was; then on the recorded call, the one compared. Each backend runs after
`torch._dynamo.reset()`. It prints, for Inductor and aot_eager, the largest difference from eager
and whether it is within `allclose` at the dtype's tolerance (probes/numerics.TOL); `--fp64` adds
Inductor on the inputs cast to float64 (against eager in float64), `--print-json` one JSON line.

Pitfalls: a graph compiled again from its code may be specialised differently than inside the
user's program (other guards, other recompiles): the script is run by tcdoctor in a fresh process
and the report says whether it shows the divergence, never assumes it. A graph with submodules
that PyTorch's converter cannot write is not written ("not measured (why)").
"""

from __future__ import annotations

import copy
import platform
from typing import Any

import torch

from .numerics import TOL

INPUTS_NAME = "tcdoctor-repro-inputs.pt"
SCRIPT_NAME = "tcdoctor-repro.py"


def as_floats(gm: Any, scalars: list[bool]) -> tuple[Any, list[bool]]:
    """A copy of `gm` whose scalar inputs used only through `.item()` take the Python value;
    and which inputs are now Python floats/ints."""
    gm = copy.deepcopy(gm)
    ph = [n for n in gm.graph.nodes if n.op == "placeholder"]
    python = []
    for node, scalar in zip(ph, scalars):
        users = list(node.users)
        if scalar and users and all(u.op == "call_method" and u.target == "item" for u in users):
            for u in users:
                u.replace_all_uses_with(node)
                gm.graph.erase_node(u)
            python.append(True)
        else:
            python.append(False)
    gm.graph.lint()
    gm.recompile()
    return gm, python


def module_source(gm: Any) -> str:
    """The graph as `class Repro(torch.nn.Module)`, written by PyTorch's minifier converter."""
    from torch._dynamo.debug_utils import NNModuleToString

    if not NNModuleToString.can_convert_to_string(gm):
        raise ValueError("it holds submodules PyTorch's repro writer cannot write")
    return NNModuleToString.convert(gm)


def attrs(gm: Any) -> dict[str, torch.Tensor]:
    """The tensors the graph reads as attributes (get_attr), by dotted name."""
    out = {}
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            obj: Any = gm
            for part in str(n.target).split("."):
                obj = getattr(obj, part, None)
            if isinstance(obj, torch.Tensor):
                out[str(n.target)] = obj.detach().clone()
    return out


def save_inputs(path: str, args: list, python: list[bool], gm: Any) -> list[dict]:
    """Save the call's inputs (floats as Python floats) and the graph's attribute tensors; one row
    per tensor saved: name, shape, dtype, bytes."""
    saved = [a.item() if p and isinstance(a, torch.Tensor) else a for a, p in zip(args, python)]
    held = attrs(gm)
    torch.save({"args": saved, "attrs": held}, path)
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    rows = [
        {
            "name": name,
            "shape": list(a.shape),
            "dtype": str(a.dtype).replace("torch.", ""),
            "bytes": a.numel() * a.element_size(),
        }
        for name, a in [*zip(names, saved), *held.items()]
        if isinstance(a, torch.Tensor)
    ]
    return rows


SCRIPT = '''"""Reproducer written by tcdoctor {version}: a graph torch.compile miscompiles, alone.

{what}

Run it with the torch you have: python {script}
  (--fp64 also runs Inductor in float64; --print-json prints one JSON line)
It calls the graph eagerly, then compiled with Inductor and with aot_eager: first with the Python
scalars of the function's earlier calls (so Dynamo specialises and recompiles as it did in the
program), then on the recorded call (inputs in {inputs}, beside this file), and prints how
far each is from eager on that call.
"""

import argparse
import json
import os

import torch
from torch import device  # noqa: F401 - the graph's code may name devices
from torch.nn import *  # noqa: F401,F403 - as PyTorch's own repro scripts

{source}

HERE = os.path.dirname(os.path.abspath(__file__))
# the Python scalars of the function's earlier calls, by input position; the tensors are the
# recorded call's (only the scalars' values decide how Dynamo specialises and recompiles)
EARLIER = {earlier!r}
TOL = {tol!r}  # allclose's rtol and atol by dtype, as tcdoctor's numerics check


def load(fp64):
    saved = torch.load(os.path.join(HERE, "{inputs}"), weights_only=True)
    mod = Repro()
    for name, t in saved["attrs"].items():
        *path, last = name.split(".")
        owner = mod
        for p in path:
            owner = getattr(owner, p)
        setattr(owner, last, t)
    args = saved["args"]
    if fp64:
        mod = mod.double()
        args = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
    return mod, args


def check(backend, fp64=False):
    torch._dynamo.reset()
    mod, args = load(fp64)
    with torch.no_grad():
        expected = mod(*args)
        compiled = torch.compile(mod, backend=backend)
        for earlier in EARLIER:  # the function's earlier calls: Dynamo specialises as it did
            primed = list(args)
            for i, v in earlier.items():
                primed[i] = v if not isinstance(args[i], torch.Tensor) else torch.tensor(v, dtype=args[i].dtype)
            compiled(*primed)
        got = compiled(*args)
    worst = {{"backend": backend, "fp64": fp64, "max_abs_err": 0.0, "allclose": True, "outputs": []}}
    for i, (e, g) in enumerate(zip(expected, got)):
        if not isinstance(e, torch.Tensor) or not e.is_floating_point():
            continue
        err = (g.double() - e.double()).abs().max().item() if e.numel() else 0.0
        tol = TOL.get(str(e.dtype).replace("torch.", ""), 1e-4)
        close = bool(torch.allclose(g, e, rtol=tol, atol=tol, equal_nan=True))
        worst["allclose"] = worst["allclose"] and close
        worst["outputs"].append({{"output": i, "max_abs_err": err, "allclose": close}})
        if err >= worst["max_abs_err"]:
            worst.update(max_abs_err=err, output=i, tol=tol)
            if e.numel() == 1:
                worst.update(eager=e.item(), compiled=g.item())
    return worst


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fp64", action="store_true", help="also Inductor in float64")
    p.add_argument("--print-json", action="store_true", help="one JSON line")
    a = p.parse_args()
    runs = [check("inductor"), check("aot_eager")] + ([check("inductor", fp64=True)] if a.fp64 else [])
    if a.print_json:
        print(json.dumps({{"torch": torch.__version__, "runs": runs}}))
        return
    print("torch", torch.__version__)
    for r in runs:
        side = r["backend"] + (" (float64)" if r["fp64"] else "")
        verdict = "agrees with eager" if r["allclose"] else "DIFFERS from eager"
        detail = ""
        if "eager" in r:
            detail = f" (eager {{r['eager']:.6g}}, compiled {{r['compiled']:.6g}})"
        print(f"{{side:20}} {{verdict}}: max abs error {{r['max_abs_err']:.3g}} on output {{r.get('output', 0)}}{{detail}}")


if __name__ == "__main__":
    main()
'''


def script_text(source: str, earlier: list[dict], what: str, version: str) -> str:
    """The script: the graph's class, the recorded call's loader, the comparison."""
    return SCRIPT.format(
        version=version,
        what=what,
        script=SCRIPT_NAME,
        inputs=INPUTS_NAME,
        source=source.strip(),
        earlier=earlier,
        tol={str(k).replace("torch.", ""): v for k, v in TOL.items()},
    )


def issue_text(found: dict, site: dict, runs: list[dict], command: str, version: str) -> str:
    """A pre-filled issue for PyTorch's tracker: what differs and by how much, the versions, how
    to run the attached script."""
    by = {(r.get("backend"), bool(r.get("fp64"))): r for r in runs}
    ind, aot = by.get(("inductor", False), {}), by.get(("aot_eager", False), {})
    ind64 = by.get(("inductor", True))
    lines = [
        "### 🐛 Describe the bug",
        "",
        f"`torch.compile` with Inductor returns different values from eager for one graph of "
        f"`{site.get('function')}` (compile id {found.get('compile_id')}"
        + (f", specialised on {', '.join(site.get('guards') or [])}" if site.get("guards") else "")
        + "), while `aot_eager` "
        + ("matches eager." if aot.get("allclose") else "differs too."),
        "",
        f"- Inductor: max abs error {ind.get('max_abs_err', float('nan')):.3g} against eager"
        + (
            f" (eager {ind['eager']:.6g}, Inductor {ind['compiled']:.6g})"
            if "eager" in ind and "compiled" in ind
            else ""
        ),
        f"- aot_eager: max abs error {aot.get('max_abs_err', float('nan')):.3g}",
    ]
    if ind64 is not None:
        lines.append(
            f"- Inductor in float64: max abs error {ind64.get('max_abs_err', float('nan')):.3g} "
            "against eager in float64"
        )
    scal = ", ".join(f"{k} = {v!r}" for k, v in (found.get("scalars") or {}).items())
    if found.get("earlier_calls"):
        lines.append(
            f"- before it, the function was called {found['earlier_calls']} times (the script "
            "replays their Python scalars first, so Dynamo specialises and recompiles as it did)"
        )
    lines += [
        f"- the call: {scal or 'no Python scalars'}; tensors "
        + ", ".join(f"{k} {v}" for k, v in list((found.get("shapes") or {}).items())[:6]),
        "",
        f"Reproducer: `{SCRIPT_NAME}` with `{INPUTS_NAME}` beside it (the recorded call; "
        f"`python {SCRIPT_NAME}` prints both backends against eager).",
        "",
        f"Found by tcdoctor {version}: `{command}`",
        "",
        "### Versions",
        "",
        f"torch {torch.__version__}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}",
    ]
    return "\n".join(lines) + "\n"
