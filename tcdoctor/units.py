"""Units and formatting: the one way each figure is written (a duration, a size, a speedup with its
confidence interval, a numerics status, a decision), used by the verdict, `check`, `diff`, the
progress lines and every renderer (the HTML template through Jinja filters of the same names).

Also the one dotted getter over the children's wire-format dicts (`get(event, "error.message")`).
The lowest layer: imports nothing of tcdoctor's and reads no report record: it formats figures and
plain dicts; a record's own wording of its fields (`GraphBreak.site_text`, `GraphBreak.gain_text`,
`FixRow.summary`) is a property of the record (report/sections/), built from these.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from .outcomes import Decision

NA = "not measured"

DECISION_TEXT = {
    Decision.COMPILE: "Compile it",
    Decision.COMPILE_AFTER_FIXES: "Compile it after these fixes",
    Decision.DONT_COMPILE: "Don't compile it (yet)",
    Decision.CANT_TELL: "Can't tell yet",
}


def get(data: Any, dotted: str, default: Any = None) -> Any:
    """data["a"]["b"] for "a.b"; default when a key is missing or a level is not a dict."""
    cur = data
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return default
        cur = cur[part]
    return cur


def seconds(s: Any) -> str:
    if s is None or isinstance(s, str):
        return NA if s is None else s
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def nbytes(b: Any) -> str:
    if b is None:
        return NA
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(b) < 1024 or unit == "GiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1024
    return str(b)


def ci(bounds: Any, level: float | None = None) -> str:
    """'95% CI 1.49–1.56' ('98.2% CI …' at another level, e.g. the headline's Pocock level when
    processes were added one look at a time); empty when the interval (or either bound) is missing."""
    if not bounds or None in bounds:
        return ""
    named = f"{level * 100:.3g}" if level and round(level, 4) != 0.95 else "95"
    return f"{named}% CI {bounds[0]:.2f}–{bounds[1]:.2f}"


def ratio(x: Any, bounds: Any = None, word: str = "", level: float | None = None) -> str:
    """'1.52×', '1.52× (95% CI 1.49–1.56)', with word: '1.52× faster (95% CI 1.49–1.56)'."""
    if x is None:
        return NA
    s = f"{x:.2f}×" + (f" {word}" if word else "")
    interval = ci(bounds, level)
    return s + (f" ({interval})" if interval else "")


def processes(rows: Any) -> str:
    """Each timed process's own speedup: 'cold 1.52×, warm 1.61×, third 0.99× (excluded:
    disturbed), fourth 1.71× (glibc thresholds pinned: a probe, not decided on)' ('' with one
    process or none); an excluded process says the first words of why ('disturbed', 'timed unlike
    the timing-only processes')."""
    if not rows or len(rows) < 2:
        return ""
    return ", ".join(
        f"{r.process} {ratio(r.speedup)}"
        + (" (glibc thresholds pinned: a probe, not decided on)" if r.probe else "")
        + (f" (excluded: {str(r.excluded).split(':')[0].split(' (')[0]})" if r.excluded else "")
        for r in rows
    )


def probes(rows: Any) -> str:
    """'with glibc's thresholds pinned, where the heap does not fault (fifth, a probe, not decided
    on): 1.54× (95% CI 1.50–1.58)' for each probe process ('' when none)."""
    return "; ".join(
        f"with glibc's thresholds pinned, where the heap "
        f"{'page-faults' if r.regime == 'page-faulting' else 'does not fault'} "
        f"({r.process}, a probe, not decided on): {ratio(r.speedup, r.speedup_ci)}"
        for r in rows or []
        if r.probe
    )


def another_run(bounds: Any) -> str:
    """'another run may see 1.40–1.65×' (the prediction interval), '' when missing."""
    return f"another run may see {span(bounds)}" if span(bounds) else ""


def stopped(seq: Any) -> str:
    """'4 process(es) timed: stopped once the interval decided (cap 6, --processes)'."""
    if not seq:
        return ""
    why = {
        "decided": "stopped once the interval decided",
        "cap": "the cap was reached undecided",
        "budget": "the time budget ran out undecided",
        "futile": "stopped: more processes would not decide",
    }.get(seq.stopped or "", str(seq.stopped))
    return f"{seq.timed} process(es) timed: {why} (cap {seq.cap}, --processes)"


def load(row: Any) -> str:
    """'others used up to 1.0 core(s); 12 pair(s) rerun, 3 still loaded' for one process's load."""
    ld = row.load if row else None  # a ProcessRow's PairLoad (report/processes/rows.py)
    if not ld:
        return ""
    return (
        f"others used up to {ld.other_cores_max or 0.0:.1f} core(s); "
        f"{ld.retimed_pairs or 0} pair(s) rerun, {ld.loaded_pairs or 0} still loaded"
    )


def span(bounds: Any) -> str:
    """'1.40–1.65×'; empty when missing."""
    if not bounds or bounds[0] is None or bounds[1] is None:
        return ""
    return f"{bounds[0]:.2f}–{bounds[1]:.2f}×"


_HEAP = {"page-faulting": "when the heap page-faults", "not page-faulting": "when it does not"}


def regimes(groups: Any, level: float | None = None) -> str:
    """Both allocator regimes' speedups: '3.10× when the heap page-faults (cold, warm; 95% CI
    …), 1.70× when it does not (third; 95% CI …)'."""
    return ", ".join(
        f"{ratio(g.speedup)} {_HEAP.get(g.regime, g.regime)} ("
        + ", ".join(g.processes)
        + (f"; {ci(g.speedup_ci, level)}" if g.is_decided else "; one process, its own interval")
        + ")"
        for g in groups or []
    )


def file_line(file: Any, line: Any) -> str:
    """'nms_loop.py:36': a source position as the report names it (the file's base name, POSIX or
    Windows separators; '?' for what is missing)."""
    return f"{str(file or '?').replace(chr(92), '/').rsplit('/', 1)[-1]}:{line or '?'}"


def pair(show: Callable[[Any], str], a: Any, b: Any) -> str:
    """Two figures of one kind side by side: 'eager / compiled', 'cold / warm' -> '1.2 ms / 0.8 ms'."""
    return f"{show(a)} / {show(b)}"


def held_pair(eager: Any, compiled: Any, pool: Any = None) -> str:
    """What each side holds after warm-up, 'eager / compiled', with CUDA graphs' pools named
    inside the compiled figure: '1.2 GiB / 1.9 GiB (CUDA graphs' pools 880.0 MiB)'."""
    text = pair(nbytes, eager, compiled)
    return text + (f" (CUDA graphs' pools {nbytes(pool)})" if pool else "")


def percent(x: Any, digits: int = 0) -> str:
    """A share: 0.35 -> '35%' (digits=1: '35.0%'); under 1% one significant digit: 0.0034 -> '0.3%'
    (never '0%' for a share that is not zero)."""
    if x is None:
        return NA
    if 0 < abs(x) < 0.01:
        return f"{float(f'{x * 100:.1g}'):g}%"
    return f"{x:.{digits}%}"


def percent_span(pair: Any) -> str:
    """'54–85%' for a (low, high) pair of shares (one figure when both ends read the same)."""
    a, b = percent(pair[0]), percent(pair[1])
    return a if a == b else f"{a[:-1]}–{b}"


def count(n: Any) -> str:
    return NA if n is None else str(n)


def of(part: Any, whole: Any) -> str:
    """A part of a whole, as counted: 8 of 8 -> '8/8' (either unknown: not measured)."""
    return NA if part is None or whole is None else f"{part}/{whole}"


def grouped(n: Any) -> str:
    """An integer with thousands separators: 100000 -> '100,000'."""
    return NA if n is None else f"{n:,}"


def calls(n: Any) -> str:
    """A number of calls: '5,844 calls'."""
    return NA if n is None else f"{n:,} calls"


def mean_count(x: Any) -> str:
    """A count averaged over calls, to two decimals: 1.0 -> '1', 4/3 -> '1.33', 1000.0 -> '1000';
    under 0.01 one significant digit (0.001 -> '0.001': never '0' for a count that is not zero)."""
    if x is None:
        return NA
    if 0 < abs(x) < 0.01:
        return f"{x:.1g}"
    return f"{x:.2f}".rstrip("0").rstrip(".")


def sci(x: Any) -> str:
    return NA if x is None else (x if isinstance(x, str) else f"{x:.3g}")


def numerics_status(passed: Any) -> str:
    """The numerics check's outcome: 'pass', 'FAIL' or 'not measured'."""
    if passed is None:
        return NA
    return "pass" if passed else "FAIL"


def decision_text(decision: Any) -> str:
    """The verdict as a heading: 'Compile it', …, "Can't tell yet" (cant-tell: the speed undecided
    at this precision); 'no verdict' when there is none."""
    return DECISION_TEXT.get(decision, decision or "no verdict")


# a tried experiment's `cache_start` when it ran in the warm process (run/child.py): its first call
# compiled in a process whose Inductor had already started, so "cold" there is no fresh process's
WARM_PROCESS_CACHE = "the main analysis's cache, in the warm process after its own measurements"
# an experiment's `cache_start` when its empty cache folder was seeded with this machine's probed
# folder (run/isa_seed.py): its first call is a cold one on a machine that has compiled before
# (Inductor's CPU ISA probe not built again), not a fresh container's
MACHINE_PROBED_CACHE = (
    "empty but for Inductor's CPU ISA probe, seeded from this machine's probed folder"
)


def cache_state(cache: dict | None) -> str | None:
    """How a first call's Inductor compiles met the FX graph cache: 'cold', 'warm (3 of 3 graphs
    from the cache)', 'partly warm (1 of 2 graphs from the cache)'; None when it compiled no
    Inductor graph (eager / aot_eager backends) or the counts are missing."""
    hits, misses = ((cache or {}).get(k) or 0 for k in ("fxgraph_cache_hit", "fxgraph_cache_miss"))
    if not hits and not misses:
        return None
    if not hits:
        return "cold"
    return f"{'warm' if not misses else 'partly warm'} ({hits} of {hits + misses} graphs from the cache)"


def threads(env: dict) -> str:
    """'2 thread(s) (torch's default in a fresh process)': the figure and where it came from."""
    source = env.get("threads_source")
    return f"{env.get('threads', '?')} thread(s)" + (f" ({source})" if source else "")


def first_call(seconds_: float | None, state: str | None) -> str:
    """A first call's time, with its cache state when some of it came from a cache ('3.1 s, warm (…)')."""
    return seconds(seconds_) + (f", {state}" if state and state != "cold" else "")


def relative_link(path: str | None, base_dir: str | None) -> str | None:
    """A link to a local file relative to the HTML report's folder (the report stays self-contained)."""
    if not path:
        return None
    try:
        return os.path.relpath(path, base_dir or os.getcwd())
    except ValueError:  # another drive on Windows
        return path


def rate(x: Any) -> str:
    """Requests per second: 616.9 -> '617 requests/s' (3 significant figures below 100)."""
    if x is None:
        return NA
    return f"{x:,.0f} requests/s" if x >= 100 else f"{x:.3g} requests/s"


def tokens_rate(x: Any) -> str:
    """Tokens per second: 1234.5 -> '1,234 tokens/s' (3 significant figures below 100)."""
    if x is None:
        return NA
    return f"{x:,.0f} tokens/s" if x >= 100 else f"{x:.3g} tokens/s"


def indices(xs: Any, limit: int = 8) -> str:
    """Request indices: '3, 7, 9' or '3, 7, 9, 12, … (40 in all)' past `limit`; 'none' for none."""
    xs = list(xs or [])
    if not xs:
        return "none"
    shown = ", ".join(str(x) for x in xs[:limit])
    return shown if len(xs) <= limit else f"{shown}, … ({len(xs)} in all)"


def paired(iv: Any) -> str:
    """A paired interval of the serving section (report/processes/paired.Interval: its ratio of
    median times, its bounds, what it decides): '0.82× the time (95% CI 0.75–0.90, widened by the spread between processes):
    faster'."""
    if not iv:
        return NA
    across = ", widened by the spread between processes" if iv.processes == 2 else ""
    bounds = ci([iv.low, iv.high], iv.level)
    inner = f" ({bounds}{across})" if bounds else ""
    return f"{ratio(iv.ratio)} the time{inner}: {iv.decides or 'not decided'}"
