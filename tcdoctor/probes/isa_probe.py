"""Inductor's CPU vector-ISA probe inside the cold first call: how long it took and which frame's
compile paid it, read afterwards from the files it left in the process's own (empty) cache folder.

The first time a process compiles C++ kernels into an inductor cache folder, Inductor checks which
vector instruction sets (AVX-512, AVX2, …) the compiler and CPU support by building one small
library per candidate set and feature (`torch._inductor.cpu_vec_isa`, `VecISA.check_build` of
`VecISA._avx_code` and the subclasses' `_avx512_bf16_code`, `_amx_code`, …) and loading it. On a 2-core CI machine that took 8.7–8.9 s, against about
1.4 s for a small model's own graphs: a fresh process with an empty cache (a new container, CI)
pays it once; a developer whose cache folder persists (`/tmp/torchinductor_$USER`) paid it once
and never again. It falls inside the first compiled frame's compile time (CompilationMetrics
count it there, in the codegen phase), so without this figure the frame table blames the user's
first frame for a cost of the machine.

Method: after the first call, the cache folder's `.cpp` files whose text is the probe's source are
the probe's builds; the span runs from the first such source written to the last library built
(file modification times), so it leaves out the load check of the last library (a short
subprocess) and is a lower bound. Only files written since the first call began count. Nothing
runs inside the timed call: the files are read after it.

What a machine that has compiled before skips (`build_s`): each build alone, from its source
written to its library built, summed. Inductor builds a check only when its library is missing
(`VecISA.check_build`: the source and library are named by a hash of the check's code, the
compiler's version, the ISA flags and torch's version), but it loads every library in a short
process of its own in every new process (`_probe_load`), probed folder or not. So a folder probed
before (a persistent `/tmp/torchinductor_$USER`, or one seeded from it: probes/isa_seed.py) pays
the load checks and not the builds: measured here on 2 cores, an empty folder 7.16 s around
`pick_vec_isa()`, a seeded one 1.01 s (the same as the probed folder itself), `build_s` 6.15 s.

Pitfalls: the check sources are PyTorch's private attributes: when they are gone the figure is "not
measured" with why; a compile that built no C++ (a GPU model, `TORCHINDUCTOR_VEC_ISA_OK` set, a
cache folder already probed or seeded) left no probe files of its own and paid nothing: the figure
says "none" (and "seeded" where tcdoctor seeded the folder). File times from another clock (a
network file system) would misplace the span: the figure assumes the cache folder is local.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

# file systems that keep whole seconds: a file written in the first call's first second counts
SLACK_S = 1.0
METHOD = (
    "the probe's builds in this process's empty inductor cache folder (VecISA.check_build's "
    "sources and libraries): from the first source written to the last library built, by file "
    "times, read after the first call; a lower bound (the last library's load check is left out). "
    "build_s: the builds alone (each source to its library, summed), what a folder probed before "
    "skips; its load checks are paid in every process"
)


def _sources() -> set[str]:
    """The C++ sources the ISA checks build (`VecISA._avx_code` and its subclasses' own checks:
    `_avx512_bf16_code`, `_amx_code`, …), empty when PyTorch's private names are gone."""
    try:
        from torch._inductor import cpu_vec_isa
    except ImportError:
        return set()
    base = getattr(cpu_vec_isa, "VecISA", None)
    classes = [
        c
        for c in vars(cpu_vec_isa).values()
        if isinstance(c, type) and base and issubclass(c, base)
    ]
    return {
        v
        for c in classes
        for k, v in vars(c).items()
        if k.startswith("_") and k.endswith("_code") and isinstance(v, str)
    }


class Build(NamedTuple):
    """One probe build in a cache folder: its source and library, and their file times."""

    source: str
    library: str
    written: float  # the source's modification time
    built: float  # the library's


def builds(folder: str, since: float = 0.0, sources: set[str] | None = None) -> list[Build]:
    """Each probe build in `folder` whose source was written since `since` (a source and its library
    both present; a failed build left no library). A file is read only when its size is a check
    source's: a model's kernels (up to megabytes each, hundreds in a large model) are told apart by
    one stat. `sources`: the check sources (default: this torch's, `_sources()`)."""
    sources = _sources() if sources is None else sources
    sizes = {len(s.encode()) for s in sources}
    out = []
    for root, _, names in os.walk(folder):
        for name in names:
            if not name.endswith(".cpp"):
                continue
            cpp = os.path.join(root, name)
            lib = cpp[: -len(".cpp")] + ".so"
            try:
                st = os.stat(cpp)
                if st.st_mtime < since - SLACK_S or st.st_size not in sizes:
                    continue
                with open(cpp, encoding="utf-8", errors="replace") as f:
                    if f.read() not in sources or not os.path.exists(lib):
                        continue
                out.append(Build(cpp, lib, st.st_mtime, os.path.getmtime(lib)))
            except OSError:
                continue
    return sorted(out, key=lambda b: b.written)


def _frame(metrics: list, start: float) -> str | None:
    """The compile id of the frame whose compile window (CompilationMetrics' wall-clock start and
    end) holds the probe's start; None when no window does."""
    for m in metrics:
        begin, end = getattr(m, "start_time_us", None), getattr(m, "end_time_us", None)
        if begin is not None and end is not None and begin / 1e6 <= start <= end / 1e6:
            return str(getattr(m, "compile_id", "")) or None
    return None


def measure(folder: str | None, since: float, metrics: list) -> dict[str, Any]:
    """The probe in the cold first call: {"seconds", "build_s", "builds", "frame", "method"};
    "seconds" None with "none" (no probe was built) or "not_measured" (why it cannot be read)."""
    sources = _sources()
    if not folder or not os.path.isdir(folder):
        return {"seconds": None, "not_measured": "no inductor cache folder to read"}
    if not sources:
        return {
            "seconds": None,
            "not_measured": "PyTorch's private VecISA check sources (torch._inductor.cpu_vec_isa) "
            "are gone: the probe's builds cannot be told from the model's",
        }
    found = builds(folder, since, sources)
    if not found:
        return {"seconds": None, "builds": 0, "none": True, "method": METHOD}
    start, end = found[0].written, max(b.built for b in found)
    return {
        "seconds": max(0.0, end - start),
        "build_s": build_seconds(found),
        "builds": len(found),
        "frame": _frame(metrics, start),
        "method": METHOD,
    }


def build_seconds(found: list[Build]) -> float:
    """The builds alone, each from its source written to its library built, summed: what a folder
    probed before skips (the load checks between them are paid in every process)."""
    return sum(max(0.0, b.built - b.written) for b in found)
