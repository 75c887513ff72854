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
before (a persistent `/tmp/torchinductor_$USER`, or one seeded from it: run/isa_seed.py) pays
the load checks and not the builds: measured here on 2 cores, an empty folder 7.16 s around
`pick_vec_isa()`, a seeded one 1.01 s (the same as the probed folder itself), `build_s` 6.15 s.

This machine's probed folder (`folder()`, under `$XDG_CACHE_HOME/tcdoctor/isa-probe`, one per torch
version, architecture, CPU flags and C++ compiler) is kept by the cold analysis process right after
its first call (`keep`: nothing inside a timed figure), from the builds it paid itself, once per
machine; the parent copies it into the other empty folders it prepares (run/isa_seed.py) and notes
in each what it started as and when (`MARK`), so that the builds a process made there itself are
told from what was copied in (`paid`), and a folder seeded says so (`seeded`).

Pitfalls: the check sources are PyTorch's private attributes: when they are gone the figure is "not
measured" with why; a compile that built no C++ (a GPU model, `TORCHINDUCTOR_VEC_ISA_OK` set, a
cache folder already probed or seeded) left no probe files of its own and paid nothing: the figure
says "none" (and "seeded" where tcdoctor seeded the folder). File times from another clock (a
network file system) would misplace the span: the figure assumes the cache folder is local.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import tempfile
import time
from typing import Any, NamedTuple

# file systems that keep whole seconds: a file written in the first call's first second counts
SLACK_S = 1.0
MANIFEST = "seed.json"  # in the probed folder: what it holds and where it came from
MARK = "tcdoctor-cache-start.json"  # in a cache folder the parent prepared: its start and when
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


# -- this machine's probed folder, and what a cache folder started as ------------------------------


def root() -> str:
    """Where the probed folders live: `$XDG_CACHE_HOME/tcdoctor/isa-probe` (~/.cache by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tcdoctor", "isa-probe")


def _torch_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch")
    except PackageNotFoundError:
        return "none"


def _cpu_flags() -> str:
    """The CPU's feature flags (Linux's /proc/cpuinfo), else what `platform` says of it."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(("flags", "Features")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _compiler() -> str:
    """The C++ compiler Inductor calls (`$CXX`, else g++), by path, size and time: another compiler
    is another folder (Inductor's hashes would not match its libraries anyway)."""
    name = os.environ.get("CXX") or "g++"
    path = shutil.which(name) or name
    try:
        st = os.stat(os.path.realpath(path))
        return f"{path}:{st.st_size}:{int(st.st_mtime)}"
    except OSError:
        return path


def folder(base: str | None = None) -> str:
    """This machine's probed folder for the installed torch: one per torch version, architecture,
    CPU flags and C++ compiler, under `base` (default `root()`)."""
    torch_version = _torch_version()
    digest = hashlib.sha256(
        "\n".join((torch_version, platform.machine(), _cpu_flags(), _compiler())).encode()
    ).hexdigest()[:16]
    name = f"torch-{torch_version}-{platform.machine()}-{digest}".replace(os.sep, "_")
    return os.path.join(base or root(), name)


def manifest(seed_folder: str) -> dict[str, Any] | None:
    """The probed folder's manifest (its files, builds, build seconds), None when it has none."""
    try:
        with open(os.path.join(seed_folder, MANIFEST), encoding="utf-8") as fh:
            found = json.load(fh)
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and found.get("files") else None


def _note(cache_dir: str) -> dict[str, Any]:
    try:
        with open(os.path.join(cache_dir, MARK), encoding="utf-8") as fh:
            found = json.load(fh)
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def started(cache_dir: str) -> float | None:
    """When the parent prepared `cache_dir` (None: it did not, as for the cold one)."""
    at = _note(cache_dir).get("at")
    return float(at) if isinstance(at, (int, float)) else None


def seeded(cache_dir: str) -> bool:
    """Whether `cache_dir` was seeded from the machine's probed folder."""
    return bool(_note(cache_dir).get("seeded"))


def paid(cache_dir: str) -> list[Build]:
    """The probe builds a process made in `cache_dir` itself: those written after the parent
    prepared it (files seeded or copied in keep their older times), every one in a folder the
    parent did not prepare (the cold one)."""
    return builds(cache_dir, (started(cache_dir) or 0.0) + SLACK_S)


def keep(cache_dir: str | None, since: float, base: str | None = None) -> str | None:
    """Keep the probe's builds this process paid in `cache_dir` (since `since`) as the machine's
    probed folder, when there is none yet: copied to a temporary folder beside it, then renamed
    into place, so two processes never leave half a folder (the second one's is dropped). Runs in a
    child with torch, after the first call. The folder made, or None (one exists, no build, or
    the folder cannot be written: never an error, the analysis goes on)."""
    target = folder(base)
    if not cache_dir or os.path.isdir(target):
        return None
    found = builds(cache_dir, since)
    if not found:
        return None
    try:  # a home folder that cannot be written keeps nothing: the analysis goes on as before
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".making-", dir=os.path.dirname(target))
    except OSError:
        return None
    try:
        files = []
        for b in found:
            for path in (b.source, b.library):
                rel = os.path.relpath(path, cache_dir)
                os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
                shutil.copy2(path, os.path.join(tmp, rel))
                files.append(rel)
        import torch

        with open(os.path.join(tmp, MANIFEST), "w", encoding="utf-8") as fh:
            json.dump(
                {
                    "torch": torch.__version__,
                    "made": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "builds": len(found),
                    "build_s": build_seconds(found),
                    "files": files,
                },
                fh,
            )
        os.rename(tmp, target)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # another process kept it first, or no room
        return None
    return target
