"""A restart, as a server restarts: the time to the first served request in a fresh process that
starts from the cache an earlier process filled, and which of PyTorch's caches hit.

Method. The proof process (probes/warmup.py) is started from a COPY of the replay process's cache
folder (TORCHINDUCTOR_CACHE_DIR; never the original). Its clock starts at its spawn: the parent
notes `time.time()` just before it starts the process (`ServeSpec.started_unix`), so the figures
include the interpreter's start, `import torch` (`import_s`), the target's build() (`build_s`) and
the first warm-up request (its compile with a warm cache): `first_request_s` is the spawn to the
first request's answer, what a client of a restarted server waits.

Caches, in PyTorch's own counters over the warm-up (`CacheWatch`): `counters["inductor"]
["fxgraph_cache_hit"/"_miss"/"_bypass"]` (the FX graph cache: Inductor's compiled graphs, which
hold the kernels' C++ or Triton code), `counters["aot_autograd"]["autograd_cache_hit"/"_miss"/
"_bypass"]` (AOTAutograd's cache, whose entries point at FX graph cache entries), and the
CompilationMetrics entries' `inductor_fx_local_cache_hit_count`/`_miss_count` and
`aotautograd_local_cache_hit_count`/`_miss_count`. Why a cache bypassed, in PyTorch's words: the
INFO records "Bypassing FX Graph Cache because '...'" (torch._inductor.codecache) and "Bypassing
autograd cache due to: ..." (torch._functorch._aot_autograd.autograd_cache), collected from those
two loggers during the warm-up. A miss has no reason in PyTorch's records (its key differs: the
code, a config, the inputs' properties); it is reported as a miss with its count.

Pitfalls: Dynamo keeps no cache across processes: every frame is traced again in a fresh process,
and that is tracing, not a cache miss (`traced_frames` says how many). The aot_eager and eager
backends use neither cache (counters stay at 0: said so, not called a miss). On CPU an FX graph
cache hit still loads (and may rebuild) the kernels' C++ library.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Iterator

from . import dynamo_state

CACHE_LOGGERS = ("torch._inductor.codecache", "torch._functorch._aot_autograd.autograd_cache")
COUNTERS = {
    "fx_graph": ("inductor", "fxgraph_cache_"),
    "aot_autograd": ("aot_autograd", "autograd_cache_"),
}
METRIC_FIELDS = {
    "fx_graph": ("inductor_fx_local_cache_hit_count", "inductor_fx_local_cache_miss_count"),
    "aot_autograd": ("aotautograd_local_cache_hit_count", "aotautograd_local_cache_miss_count"),
}
_REASON_PREFIXES = ("Bypassing FX Graph Cache because", "Bypassing autograd cache due to")


class _Reasons(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad record must not break the warm-up
            return
        if msg.startswith(_REASON_PREFIXES) and msg not in self.lines:
            self.lines.append(msg.splitlines()[0][:300])


@dataclass
class CacheWatch:
    """What `cache_watch` read over its block: `caches` ({fx_graph: {hit, miss, bypass},
    aot_autograd: {...}}, PyTorch's counters), `metrics` (the CompilationMetrics entries' local
    cache counts), the bypass `reasons` in PyTorch's words, the frames Dynamo traced."""

    caches: dict[str, dict[str, int]] = field(default_factory=dict)
    metrics: dict[str, dict[str, int]] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    traced_frames: int = 0

    def compiled(self, cache: str) -> int:
        """What `cache` compiled again: its misses and bypasses."""
        return self.caches[cache]["miss"] + self.caches[cache]["bypass"]


@contextlib.contextmanager
def cache_watch() -> Iterator[CacheWatch]:
    """PyTorch's cache counters and bypass reasons over the block: yields a `CacheWatch` filled
    on exit."""
    before = {k: dynamo_state.counters_of(group) for k, (group, _) in COUNTERS.items()}
    mark = dynamo_state.Mark()
    handler = _Reasons()
    loggers = [logging.getLogger(name) for name in CACHE_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.INFO)
    out = CacheWatch()
    try:
        yield out
    finally:
        for lg, level in zip(loggers, levels):
            lg.removeHandler(handler)
            lg.setLevel(level)
        entries = mark.since()
        out.caches, out.metrics = _figures(before, entries)
        out.reasons, out.traced_frames = handler.lines, len(entries)


def _figures(before: dict, entries: list) -> tuple[dict, dict]:
    caches = {}
    for key, (group, prefix) in COUNTERS.items():
        now = dynamo_state.counters_of(group)
        caches[key] = {
            what: int(now.get(prefix + what, 0)) - int(before[key].get(prefix + what, 0))
            for what in ("hit", "miss", "bypass")
        }
    metrics = {
        key: {
            "hit": sum(getattr(m, hit, None) or 0 for m in entries),
            "miss": sum(getattr(m, miss, None) or 0 for m in entries),
        }
        for key, (hit, miss) in METRIC_FIELDS.items()
    }
    return caches, metrics


def cache_words(caches: dict, backend: str) -> list[str]:
    """The caches that hit and missed, in the report's words."""
    out = []
    for key, name in (("fx_graph", "FX graph cache"), ("aot_autograd", "AOTAutograd cache")):
        c = caches.get(key) or {}
        if not any(c.values()):
            continue
        out.append(
            f"{name}: {c.get('hit', 0)} hit, {c.get('miss', 0)} miss, {c.get('bypass', 0)} bypass"
        )
    if not out:
        out.append(f"backend {backend!r} used neither the FX graph nor the AOTAutograd cache")
    return out


def restart_record(
    spawn: dict[str, float | None], watch: CacheWatch, first_request: float | None, backend: str
) -> dict:
    """The restart record: times from the spawn (`spawn`: import_s, build_s, started_unix),
    the caches (`watch`, from cache_watch) and whether anything compiled again."""
    started = spawn.get("started_unix")
    compiled_again = {
        "traced_frames": watch.traced_frames,
        "inductor_compiled": watch.compiled("fx_graph"),
        "aot_autograd_compiled": watch.compiled("aot_autograd"),
    }
    return {
        "first_request_s": (first_request - started) if first_request and started else None,
        "import_s": spawn.get("import_s"),
        "build_s": spawn.get("build_s"),
        "caches": watch.caches,
        "metrics": watch.metrics,
        "hit": cache_words(watch.caches, backend),
        "reasons": watch.reasons,
        "compiled_again": compiled_again,
        "method": "a fresh process started from a copy of the replay process's cache folder: "
        "from its spawn (the parent's clock just before the start) to the first warm-up request's "
        "answer; caches in PyTorch's counters over the warm-up (fxgraph_cache_*, "
        "autograd_cache_*), bypass reasons from PyTorch's INFO records; Dynamo traces every frame "
        "again in a fresh process (traced_frames): tracing, not a cache miss",
    }


def now_unix() -> float:
    return time.time()
