"""The cache_artifacts phase: the cold compile's artifacts, saved for the portable-cache remedy.

Runs in the cold child right after the compile phase, so nothing is compiled again: the remedy's
own child later loads these artifacts (compile_remedies.py). Skipped, with the reason, when the
remedy is not wanted (`compile_remedies.wanted`) or the child has no inductor cache dir of its own.
"""

from __future__ import annotations

import os

from ..probes.context import PhaseContext
from ..report.phases import Skip
from . import compile_remedies


def phase_cache_artifacts(ctx: PhaseContext) -> dict:
    """ctx: the run.runner.PhaseRunner."""
    ctx.need_compiled()
    first = (ctx.results.get("compile") or {}).get("first_call_s")
    why = compile_remedies.wanted(ctx.options, first)
    cache_dir = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if why or not cache_dir:
        raise Skip(f"not needed: {why or 'no inductor cache dir of its own'}")
    return compile_remedies.save_artifacts(os.path.dirname(os.path.abspath(cache_dir)))
