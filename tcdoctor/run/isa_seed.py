"""Inductor's CPU ISA probe paid once per machine and torch version by tcdoctor's own children: the
parent copies this machine's probed folder (probes/isa_probe.py `folder`, kept by a cold analysis
process) into the empty cache folders it prepares: the experiments' children, and the cold one too
when `Options.isa_probe` is "none".

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
sources are then written anew and would read as builds). The cold analysis process keeps the
probed folder (probes/isa_probe.py `keep`); the parent copies it into each empty folder it prepares
(`seed`), file times kept, and notes in the folder what it started as and when (`mark`), so the
builds a process made there itself are told from what was copied in (`isa_probe.paid`). Who pays
is `Options.isa_probe` (`--isa-probe`, its default from `$TCDOCTOR_ISA_PROBE`): "cold" (the default:
only the cold analysis process, which stays what a fresh container pays and measures the probe),
"none" (the cold one is seeded too: every first call is a machine's that has compiled before, and
the cold row says so) or "every" (nothing is seeded: every empty folder pays, as before issue 52).

Pitfalls. A seed that does not match (another compiler behind the same path, a torch rebuilt with
the same version) is not used by Inductor, which builds again: the child checks its folder
afterwards and its row then says it paid (run/child.py). A seeded first call is what a machine
that has compiled before pays, not a fresh container: each row says which (`units.MACHINE_PROBED_CACHE`),
and where rows are compared with the cold one, the cold process's builds are added back
(`StrategyRow.fresh_first_call_s`), so seeding changes what the analysis costs, not what it
concludes. Torch-free: the parent runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from typing import Any

from ..options import Options
from ..probes import isa_probe
from ..units import MACHINE_PROBED_CACHE


def seed_from(options: Options) -> str | None:
    """Where the experiments' empty folders are seeded from (this machine's probed folders,
    `isa_probe.root()`), None when every empty folder pays the probe (`isa_probe="every"`)."""
    return None if options.isa_probe == "every" else isa_probe.root()


def seed_cold(cache_dir: str, options: Options) -> None:
    """Seed the cold (or in-process) analysis's empty folder too when `isa_probe` is "none"."""
    if options.isa_probe == "none":
        seed(cache_dir, MACHINE_PROBED_CACHE)


def mark(cache_dir: str, start: str, seeded: list[str] | None = None) -> None:
    """Note in `cache_dir` what it started as (`start`, the row's `cache_start`) and when, and the
    files seeded into it: what `isa_probe.paid` tells a process's own builds from."""
    os.makedirs(cache_dir, exist_ok=True)
    note = {"start": start, "at": time.time(), "seeded": seeded or []}
    with open(os.path.join(cache_dir, isa_probe.MARK), "w", encoding="utf-8") as fh:
        json.dump(note, fh)


def seed(cache_dir: str, start: str, base: str | None = None) -> dict[str, Any] | None:
    """Copy the machine's probed folder (under `base`) into `cache_dir`, file times kept, and mark
    it (`start`: what the row will say it started as); its manifest, or None when this machine has
    no probed folder for this torch yet (nothing copied, nothing marked)."""
    source = isa_probe.folder(base)
    found = isa_probe.manifest(source)
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


def start_folder(
    path: str, seed_from: str | None, copy_of: str | None = None, copied: str = ""
) -> str:
    """Prepare the cache folder `path` a child starts with, and say how it starts (its row's
    `cache_start`): a copy of `copy_of` where that folder exists (marked `copied`: the main
    analysis's cache for an experiment, the replay's for the serving proof), else an empty folder
    seeded with this machine's probed folder when `seed_from` names where those live and there is
    one (`MACHINE_PROBED_CACHE`), else an empty one (not made here). Never the original: a copy leaves the figures
    of the process that filled it its own."""
    if copy_of and os.path.isdir(copy_of):
        shutil.copytree(copy_of, path, symlinks=True, dirs_exist_ok=True)
        mark(path, copied)
        return copied
    if seed_from and seed(path, MACHINE_PROBED_CACHE, seed_from):
        return MACHINE_PROBED_CACHE
    return "empty"  # made by the child's first compile
