"""The ahead-of-time part (probes/aot.py): export and build the AOTInductor package in one fresh
process, then load and serve it in another (`AOT_BUILD_SHARE` of the part's time to the build).
The build process puts the `aot` dict as it stands without a served package; the serve process
puts the whole one (probes/aot.py `finish` joins them in the child).

Torch-free at import: the parent imports it; `build` and `serve_package` run in the processes.
"""

from __future__ import annotations

import os
import time
from typing import Any

from ..spec import ServeSpec
from ..stages import Where
from .part import Part, Serving
from .replay import replayed

AOT_NOT_BUILT = "the AOT part is not built yet"
AOT_BUILD_SHARE = 0.7  # of the aot part's time: export and the C++ build; the rest loads and serves


def aot_wanted(options: Any) -> str | None:
    """None when the ahead-of-time part runs; otherwise why not. It needs probes/aot.py (found
    without importing it: the parent imports no torch) and builds with Inductor, so it runs with
    the Inductor backend only (a test's aot_eager analysis builds no C++)."""
    import importlib.util

    if importlib.util.find_spec("tcdoctor.probes.aot") is None:
        return AOT_NOT_BUILT
    if options.backend != "inductor":
        return (
            f"--backend {options.backend}: the AOTInductor package is built with Inductor "
            "(a C++ build); it is tried with --backend inductor"
        )
    return None


def _when(run: Serving) -> str | None:
    return replayed(run) or aot_wanted(run.options)


def _plan(run: Serving) -> None:
    """Build, then (where a package was built) serve it in a fresh process; a serve process that
    failed leaves the build's dict standing, with its failure as the `serve` entry's why."""
    end = time.monotonic() + run.share(PART)
    folder = os.path.join(run.workdir, "serve-aot")
    os.makedirs(folder, exist_ok=True)
    share = (end - time.monotonic()) * AOT_BUILD_SHARE
    built = run.go(PART, share, aot={"out_dir": folder}) or {}
    aot = built.get("unserved")
    if (built.get("built") or {}).get("package_path"):
        handed = {"built": built["built"]}
        served = run.go(PART, end - time.monotonic(), "aot_serve", aot=handed) or {}
        if served.get("aot"):
            aot = served["aot"]
        elif aot is not None:
            why = run.not_measured.pop("aot_serve", None) or "the serving process did not report"
            aot = {**aot, "not_measured": {**aot.get("not_measured", {}), "serve": why}}
    run.results["aot"] = aot


def build(ctx: Any, spec: ServeSpec, spawn: dict) -> None:
    """The build process: export and build the package (and put the `aot` dict as it stands
    unserved)."""
    from ...probes import aot

    built = aot.run(
        ctx.fresh(),
        ctx.requests(),
        out_dir=(spec.aot or {})["out_dir"],
        deadline=ctx.deadline,
        sink=ctx.sink,
    )
    ctx.put("built", built)
    ctx.put("unserved", aot.finish(built, None))


def serve_package(ctx: Any, spec: ServeSpec, spawn: dict) -> None:
    """The serve process: load the package built and serve the traffic through it (the whole
    `aot` dict)."""
    from ...probes import aot

    built = (spec.aot or {})["built"]
    served = aot.load_and_serve(
        built["package_path"],
        ctx.requests(),
        call=ctx.call,
        sync=ctx.sync,
        deadline=ctx.deadline,
        reference_path=built.get("reference_path"),
        n_requests=ctx.n,
        device=ctx.device,
        sink=ctx.sink,
    )
    ctx.put("aot", aot.finish(built, served))


PART = Part(
    "aot",
    Where.CHILDREN,
    _plan,
    needs=("replay",),
    when=_when,
    weight=2.0,
    serves={"aot": build, "aot_serve": serve_package},
)
