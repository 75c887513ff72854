"""Compile-time remedies, tried rather than advised: regional compilation and a portable cache.

Both are measured in a fresh child whose inductor cache dir starts empty (`RemedySpec.fresh_cache`),
as a new machine starts, but for Inductor's CPU ISA probe: the folder is seeded with this machine's
probed folder (run/isa_seed.py), so the child does not build the probe's checks again, as on a
machine that has compiled before; its row says so and carries the cold process's builds, which
`RemedyRow.startup_s` adds back for a fresh container's figure (the cold figure's footing). Then the
same paired measurement as every tried fix (`pair.timed_pair`: first call, eager vs compiled timed
paired with a CI, numerics, guards):

- Regional compilation: the model's repeated block (the outermost `nn.Module` class with two or
  more instances that together hold at least half of the parameters: transformer layers, UNet
  blocks) has each instance compiled with `module.compile()` instead of the whole model. Dynamo
  compiles the block's code once and the other instances reuse it (guards on their parameters as
  inputs), so the cold compile is one block's, not every layer unrolled; the code between blocks
  runs eagerly, which can cost speed on small models.
- Portable cache: right after the main analysis's cold compile, the cold child saves
  `torch.compiler.save_cache_artifacts()` to a file (nothing is compiled for it: the artifacts are
  what that compile recorded); the remedy child calls `torch.compiler.load_cache_artifacts(bytes)`
  before its first call. The load is timed on its own; what a fleet shipping the cache pays before
  the first result is the load plus that first call.

Other compile-time settings a user can flip without editing code are named in `specs.REMEDY_SETTINGS`, each with
why it is not tried here. Planning runs in the cold child (it has the model); everything here that
the parent or a renderer reads is plain data.
"""

from __future__ import annotations

import os
import time
from typing import Any

import torch

from ..options import Options
from ..probes import calls, first_call
from ..thresholds import RULES
from .pair import fresh_copies, main_pair, timed_pair
from .specs import PortableCacheSpec, RegionalCompileSpec, Spec

ARTIFACTS_FILE = "cache-artifacts.bin"  # in the analysis's work folder, beside the cache dirs
BLOCK_SHARE = 0.5  # the repeated block's instances must hold at least this share of the parameters
CACHED_BACKENDS = ("inductor",)  # backends with an on-disk compile cache to save and load
NOTHING_COMPILED = (
    "Dynamo compiled no frame: the instances ran eagerly behind its wrapper, so this row "
    "is not a remedy (not used by the verdict or check)"
)
# Verified on torch 2.13 CPU: an "inductor" artifact is the FX graph cache entry (the kernels' C++
# source); only GPU entries bundle compiled (Triton) kernels, so the loading process compiles the
# C++ kernels again inside its first call.
CPU_NOTE = (
    "on CPU the artifacts carry the kernels' C++ source, not compiled libraries: the loading "
    "process skips AOTAutograd, Inductor lowering and code generation, but compiles every C++ "
    "kernel again in its first call"
)


def wanted(options: Options, first_call_s: float | None) -> str | None:
    """None when the remedies are to be tried; otherwise why not (the report says it)."""
    if options.backend not in CACHED_BACKENDS:
        return f"backend {options.backend!r} keeps no compile cache: nothing to cut"
    if options.compile_remedies is False:
        return "--no-compile-remedies"
    if options.compile_remedies is None and (first_call_s or 0.0) < RULES.compile_seconds_warn:
        return (
            f"the cold first call ({first_call_s or 0.0:.1f} s) is under "
            f"{RULES.compile_seconds_warn:.0f} s (--compile-remedies tries them anyway)"
        )
    return None


def save_artifacts(folder: str) -> dict:
    """The artifacts this process's compiles recorded, written to `folder`/ARTIFACTS_FILE; the save
    is timed (it is kept out of every timed figure: it runs after the first call)."""
    t0 = time.perf_counter()
    saved = torch.compiler.save_cache_artifacts()
    save_s = time.perf_counter() - t0
    if not saved:
        return {"path": None, "not_measured": "save_cache_artifacts() recorded nothing"}
    data, info = saved
    path = os.path.join(folder, ARTIFACTS_FILE)
    with open(path, "wb") as fh:
        fh.write(data)
    kinds = {k: len(v) for k, v in (getattr(info, "artifacts", None) or {}).items()}
    return {
        "path": path,
        "bytes": len(data),
        "save_s": save_s,
        "artifacts": kinds,
        "method": "torch.compiler.save_cache_artifacts() right after the cold first call, in the "
        "same process (what that compile recorded; nothing compiled again)",
    }


def _owned_params(module: torch.nn.Module) -> dict[int, int]:
    """Its parameters by identity (a tied one counts once), with their element counts."""
    return {id(p): p.numel() for p in module.parameters()}


def repeated_block(model: Any) -> dict:
    """The outermost module class (with children: not a leaf like Linear) with ≥ 2 instances holding
    ≥ BLOCK_SHARE of the parameters:
    {"block", "names", "container", "share"}, or {"why"} when the model has none."""
    if not isinstance(model, torch.nn.Module):
        return {"why": f"the subject is a {type(model).__name__}, not an nn.Module"}
    total = _owned_params(model)
    if not total:
        return {"why": "the model has no parameters"}
    by_class: dict[type, list[tuple[str, torch.nn.Module]]] = {}
    containers = (torch.nn.ModuleList, torch.nn.ModuleDict)  # hold blocks, are never called
    for name, mod in model.named_modules():
        if name and not isinstance(mod, containers):
            by_class.setdefault(type(mod), []).append((name, mod))
    found = []
    for cls, mods in by_class.items():
        outer = [(n, m) for n, m in mods if not any(n.startswith(o + ".") for o, _ in mods)]
        if len(outer) < 2 or not any(True for _ in outer[0][1].children()):
            continue  # a block holds modules of its own: a lone Linear is no region to compile
        owned = {k: n for _, m in outer for k, n in _owned_params(m).items()}
        share = sum(owned.values()) / (sum(total.values()) or 1)
        if share >= BLOCK_SHARE:
            found.append((cls, [n for n, _ in outer], share))
    names_all = [n for _, names, _ in found for n in names]
    outermost = [
        f
        for f in found
        if not any(n.startswith(o + ".") for n in f[1] for o in names_all if o not in f[1])
    ]
    if not outermost:
        return {
            "why": f"no module class has two or more instances holding {BLOCK_SHARE:.0%} of the parameters"
        }
    cls, names, share = max(outermost, key=lambda f: (f[2], -len(f[1])))
    if cls.__module__.split(".")[0] == "torch":
        return {
            "why": f"the repeated block is PyTorch's own {cls.__name__}: Dynamo skips a top-level "
            "frame in torch's files, so compiling each instance alone compiles nothing"
        }
    parents = {n.rpartition(".")[0] for n in names}
    container = parents.pop() if len(parents) == 1 else None
    if container:  # one container (not the model itself), holding exactly these instances in order
        held = list(model.get_submodule(container).children())
        if [model.get_submodule(n) for n in names] != held:
            container = None
    return {"block": cls.__name__, "names": names, "container": container, "share": share}


def plan(workload: Any, options: Options, results: dict) -> tuple[list[Spec], list[dict]]:
    """The remedy children to run, and the remedies not tried with why (both go in the report)."""
    why = wanted(options, (results.get("compile") or {}).get("first_call_s"))
    if why:
        return [], [{"remedy": r, "why": why} for r in ("regional compilation", "portable cache")]
    out: list[Spec] = []
    skipped: list[dict] = []
    block = repeated_block(workload.model) if workload.kind != "train" else None
    if workload.kind == "train":
        skipped.append(
            {
                "remedy": "regional compilation",
                "why": "measured for inference workloads only: a training step also compiles "
                "its backward and optimizer, which per-block compilation leaves eager",
            }
        )
    elif "why" in block:
        skipped.append({"remedy": "regional compilation", "why": block["why"]})
    else:
        args = first_call.compile_args(options.backend, options.mode, workload.compile_kwargs)
        out.append(
            RegionalCompileSpec(
                block["block"],
                names=block["names"],
                container=block["container"],
                share=round(block["share"], 4),
                compile_args=", ".join(f"{k}={v!r}" for k, v in args.items()),
            )
        )
    art = results.get("cache_artifacts") or {}
    if art.get("path"):
        out.append(PortableCacheSpec(art["path"], artifact_bytes=art.get("bytes")))
    else:
        skipped.append(
            {
                "remedy": "portable cache",
                "why": art.get("not_measured") or "no cache artifacts were saved",
            }
        )
    return out, skipped


def run_regional(spec: RegionalCompileSpec, w: Any, o: Options) -> dict:
    """Each instance of the block compiled on a fresh copy, timed paired against an eager copy."""
    device = calls.detect(w.model, w.call_args)
    fresh = fresh_copies(w, device)
    args = first_call.compile_args(o.backend, o.mode, w.compile_kwargs)

    def make() -> tuple[Any, Any]:
        model = fresh().model
        for name in spec.names:
            model.get_submodule(name).compile(**args)
        return fresh().model, model

    row = timed_pair(make, w, "forward (regional)", o.budget_s, device, o, o.backend)
    if not row.get("frames_compiled"):
        row["note"] = NOTHING_COMPILED
    row.update(
        name="regional",
        line=spec.line,
        block=spec.block,
        blocks=len(spec.names),
        block_share=spec.share,
        method=f"each of the {len(spec.names)} {spec.block} instances compiled with .compile() "
        "on a fresh copy, first call with an empty inductor cache in a fresh process (seeded with "
        "the machine's probed CPU ISA checks where cache_start says so), then eager vs compiled "
        "timed paired",
    )
    return row


def run_portable(spec: PortableCacheSpec, w: Any, o: Options) -> dict:
    """The saved artifacts loaded into this fresh process's empty cache, then the first call."""
    with open(spec.path, "rb") as fh:
        data = fh.read()
    t0 = time.perf_counter()
    torch.compiler.load_cache_artifacts(data)
    load_s = time.perf_counter() - t0
    row = main_pair(w, o, o.backend, o.mode)
    if calls.detect(w.model, w.call_args).type == "cpu":
        row["note"] = CPU_NOTE
    row.update(
        name="portable_cache",
        line=spec.line,
        load_s=load_s,
        artifact_bytes=len(data),
        method="cache.bin = torch.compiler.save_cache_artifacts()[0] after the main analysis's "
        "cold first call; a fresh process with an empty TORCHINDUCTOR_CACHE_DIR (seeded with the "
        "machine's probed CPU ISA checks where cache_start says so) calls "
        "torch.compiler.load_cache_artifacts(bytes) (timed alone: load_s) before its first call "
        "(first_call_s); then eager vs compiled timed paired",
    )
    return row
