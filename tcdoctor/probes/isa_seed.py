"""Inductor's CPU ISA probe paid once per machine and torch version by tcdoctor's own children: the
machine's probed folder, kept from the cold analysis process, copied into every other empty cache
folder an analysis starts (the experiments' children, and under the test suite the cold one too).

Why: the first process that compiles C++ into an empty inductor cache folder builds one small test
library per vector instruction set and feature (probes/isa_probe.py: 6.2 s of builds on this
2-core machine). A fresh container pays that once, and the cold analysis process measures it; but
the remedy, mode, training-way and shape children each start an empty folder of their own and paid
it again, for nothing the report needed: their first calls are compared with each other and with
the cold one, and the probe is the same machine constant in each.

Method. Inductor names a check's source and library by a hash of the check's code, the compiler's
version, the ISA flags and torch's version, writes the source only when it is missing, and builds
the library only when it is missing (`VecISA.check_build`, torch 2.13); it then loads each library
in a short process of its own in every new process (`_probe_load`). So a folder that holds the
libraries (and their sources, so that nothing is written anew) skips the builds and still pays the
load checks, exactly as a folder probed before does: measured on this machine around
`pick_vec_isa()` in a fresh process, an empty folder 7.16 s and 7.19 s, the probed folder itself
1.01 s, a copy of its sources and libraries 1.01 s and 1.01 s (its libraries alone: 1.02 s, but the
sources are then written anew and would read as builds). The probed folder (`folder()`, under
`$XDG_CACHE_HOME/tcdoctor/isa-probe`, one per torch version, architecture, CPU flags and C++
compiler) is kept by the cold analysis process right after its first call (`keep`: nothing inside
a timed figure), from the builds it paid itself, once per machine; the parent copies it into each
empty folder it prepares (`seed`), file times kept, and notes in the folder what it started as and
when (`MARK`), so the builds a process made there itself are told from what was copied in
(`paid`). Who pays is `TCDOCTOR_ISA_PROBE` (`who_pays`): "cold" (the default: only the
cold analysis process, which stays what a fresh container pays and measures the probe), "none"
(the cold one is seeded too: the test suite, whose analyses measure other things) or "every"
(nothing is seeded: every empty folder pays, as before issue 52).

Pitfalls. A seed that does not match (another compiler behind the same path, a torch rebuilt with
the same version) is not used by Inductor, which builds again: the child checks its folder
afterwards and its row then says it paid (run/child.py). A seeded first call is what a machine
that has compiled before pays, not a fresh container: each row says which (`units.MACHINE_PROBED_CACHE`),
and where rows are compared with the cold one, the cold process's builds are added back
(`StrategyRow.fresh_first_call_s`), so seeding changes what the analysis costs, not what it
concludes. Torch-free at import: the parent reads it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import tempfile
import time
from typing import Any

from ..errors import UsageError
from . import isa_probe

ENV = "TCDOCTOR_ISA_PROBE"
# who pays Inductor's CPU ISA probe in an analysis: only the cold process (the default), no process
# (the cold one seeded too: the test suite), every process with an empty folder (nothing seeded)
WHO_PAYS = ("cold", "none", "every")
MANIFEST = "seed.json"  # in the probed folder: what it holds and where it came from
MARK = "tcdoctor-cache-start.json"  # in a cache folder the parent prepared: its start and when


def who_pays() -> str:
    """`TCDOCTOR_ISA_PROBE`: "cold" (unset), "none" or "every"; a UsageError for anything else."""
    value = os.environ.get(ENV, "").strip() or "cold"
    if value not in WHO_PAYS:
        raise UsageError(f"{ENV} takes {', '.join(WHO_PAYS)}, not {value!r}")
    return value


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


def mark(cache_dir: str, start: str, seeded: list[str] | None = None) -> None:
    """Note in `cache_dir` what it started as (`start`, the row's `cache_start`) and when, and the
    files seeded into it: what `paid` tells a process's own builds from."""
    os.makedirs(cache_dir, exist_ok=True)
    note = {"start": start, "at": time.time(), "seeded": seeded or []}
    with open(os.path.join(cache_dir, MARK), "w", encoding="utf-8") as fh:
        json.dump(note, fh)


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


def paid(cache_dir: str) -> list[isa_probe.Build]:
    """The probe builds a process made in `cache_dir` itself: those written after the parent
    prepared it (files seeded or copied in keep their older times), every one in a folder the
    parent did not prepare (the cold one)."""
    return isa_probe.builds(cache_dir, (started(cache_dir) or 0.0) + isa_probe.SLACK_S)


def seed(cache_dir: str, start: str, base: str | None = None) -> dict[str, Any] | None:
    """Copy the machine's probed folder (under `base`) into `cache_dir`, file times kept, and mark
    it (`start`: what the row will say it started as); its manifest, or None when this machine has
    no probed folder for this torch yet (nothing copied, nothing marked)."""
    source = folder(base)
    found = manifest(source)
    if found is None:
        return None
    copied = []
    for rel in found["files"]:
        src, dst = os.path.join(source, rel), os.path.join(cache_dir, rel)
        try:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst)
        except OSError:
            continue  # a file gone from the seed: Inductor builds that check, and the row says so
        copied.append(rel)
    if not copied:
        return None
    mark(cache_dir, start, copied)
    return found


def keep(cache_dir: str | None, since: float, base: str | None = None) -> str | None:
    """Keep the probe's builds this process paid in `cache_dir` (since `since`) as the machine's
    probed folder, when there is none yet: copied to a temporary folder beside it, then renamed
    into place, so two processes never leave half a folder (the second one's is dropped). Runs in a
    child with torch, after the first call. The folder made, or None (one exists, no build, or
    the folder cannot be written: never an error, the analysis goes on)."""
    target = folder(base)
    if not cache_dir or os.path.isdir(target):
        return None
    found = isa_probe.builds(cache_dir, since)
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
                    "build_s": isa_probe.build_seconds(found),
                    "files": files,
                },
                fh,
            )
        os.rename(tmp, target)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # another process kept it first, or no room
        return None
    return target
