"""The measurements' own sections, described once (report/layout.py): speed (eager vs compiled,
per process), compile time, guards, memory, numerics, the profiler's top operators, and the
advice. render/outline.py places them (the formats that draw each, where it folds, the chart above
it, its "not measured (why)" line); the terminal and the Markdown show their figures in the
key-figure table (render/figures.py) and draw none of these but the advice (the Markdown).

Every figure is written by units.py. Pitfall: a figure a report did not record is an empty cell,
never the text 'None' (a saved report of an older schema lacks some).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .. import units
from ..report.layout import Note, Row, Section, Table
from ..report.model import Report
from ..report.processes.rows import ProcessRow
from ..report.sections import CompileTime, Guards, Memory, Numerics, Profile, Runtime, Verdict
from ..report.sections.outputs import mutates_text
from .strategies import cudagraphs_text

ADVICE_SHOWN = 200  # a page of hundreds of breaks stays usable; the JSON has every item


def _text(value: Any) -> str:
    """A recorded value as text; '' for one not recorded."""
    return "" if value is None else str(value)


def _spread(a: float | None, b: float | None) -> str:
    return f"{units.seconds(a)} – {units.seconds(b)}"


def _process_row(p: ProcessRow) -> list[str]:
    """One timing process: its environment, speedup, medians, faults, regime, load and why."""
    why = _text(p.why)
    why += f" Excluded: {p.excluded}." if p.excluded else ""
    why += f" Not decided on: {p.probe}." if p.probe else ""
    return [
        _text(p.process),
        _text(p.env),
        units.ratio(p.speedup, p.speedup_ci),
        f"{units.seconds(p.eager_median_s)} / {units.seconds(p.compiled_median_s)}",
        f"{_text(p.eager_faults_per_call)} / {_text(p.compiled_faults_per_call)}",
        _text(p.regime),
        units.load(p),
        why,
    ]


PROCESS_HEADERS = (
    "process",
    "environment",
    "speedup (95% CI)",
    "eager / compiled median",
    "faults per call eager / compiled",
    "allocator regime",
    "load seen",
    "why this process",
)


def _across(rt: Runtime) -> str:
    """How the processes were combined: the decision interval, the sequence, the regimes."""
    out = ""
    if rt.prediction_interval:
        ci = units.ci(rt.speedup_ci, rt.ci_level)
        out += f"Decision interval {ci}; {units.another_run(rt.prediction_interval)}. "
    out += f"{units.stopped(rt.sequence)}. " if rt.sequence else ""
    out += f"Across processes: {rt.across_method}."
    if rt.regimes:
        out += f" Allocator regimes: {units.regimes(rt.regimes, rt.ci_level)}."
    return out


SPEED = "Speed: eager vs compiled"


def speed_section(rt: Runtime) -> Section:
    """Each side's median, IQR and p10–p90, each timing process (when there were several), how
    they were combined and how they were timed; empty when nothing was timed."""
    if not rt.samples:
        return Section(SPEED)
    sides = [
        [
            k,
            units.seconds(s.median_s),
            _spread(s.p25_s, s.p75_s),
            _spread(s.p10_s, s.p90_s),
            _text(s.samples),
        ]
        for k, s in (("eager", rt.eager), ("compiled", rt.compiled))
    ]
    tables = [Table(("", "median", "IQR", "p10–p90", "samples"), sides)]
    notes: list[Note] = []
    several = bool(rt.processes and len(rt.processes) > 1)
    if several:
        tables.append(Table(PROCESS_HEADERS, [_process_row(p) for p in rt.processes or []]))
        notes.append(Note(_across(rt), how=True))
    during = rt.recompiles_during_timing
    return Section(
        SPEED,
        tables=tuple(tables),
        notes=tuple(notes),
        method=(
            f"(each process; the eager/compiled rows: {rt.sides_method}) "
            if several and rt.sides_method
            else "(each process; the eager/compiled rows are the cold process's) "
            if several
            else ""
        )
        + f"{rt.method}. Speedup = median(eager)/median(compiled); CI: {rt.ci_method}. "
        f"Budget {rt.budget_s} s."
        + (f" {during} compile(s) happened during timing." if during else ""),
    )


def compile_section(c: CompileTime) -> Section:
    """The first call cold and warm (with their cache counters), the cold call's phases, the
    native compile jobs and the variants' recompiles."""
    cold, warm = c.cold_cache or {}, c.warm_cache or {}
    warm_how = (
        f"not measured: {c.warm_not_measured}"
        if c.warm_not_measured
        else f"{_text(c.warm_method)}; fx-graph cache hits {_text(warm.get('fxgraph_cache_hit'))}, "
        f"autograd cache hits {_text(warm.get('autograd_cache_hit'))}"
    )
    rows = [
        Row(
            "first call, cold cache",
            units.seconds(c.cold_s),
            "empty TORCHINDUCTOR_CACHE_DIR; fx-graph cache hits "
            f"{_text(cold.get('fxgraph_cache_hit'))}, misses {_text(cold.get('fxgraph_cache_miss'))}",
        ),
        Row("first call, warm cache", units.seconds(c.warm_s), warm_how),
        *(
            Row(k, units.seconds(v), "CompilationMetrics (cold)")
            for k, v in (c.phases or {}).items()
        ),
        Row(
            "native compile jobs (gcc/Triton)",
            units.seconds(c.native_compile_s),
            "compile_times(): compile_file, summed over jobs; parallel jobs can add up to more "
            "than the wall time",
        ),
        *_probe_rows(c),
        *(
            (Row("CUDA graphs", cudagraphs_text(c.cudagraphs), _text(c.cudagraphs.method)),)
            if c.cudagraphs
            else ()
        ),
        Row(
            "recompiles triggered by variants",
            units.seconds(c.recompile_time_s),
            "sum of recompiled frames' compile time",
        ),
    ]
    return Section("Compile time", rows=tuple(rows))


def _probe_rows(c: CompileTime) -> tuple[Row, ...]:
    """Inductor's one-off CPU ISA probe inside the cold first call (inductor reports only), and the
    cold first call on a machine that has compiled before (less the probe's builds)."""
    probe = c.isa_probe
    if probe is None:
        return ()
    label = "of which Inductor's CPU ISA probe"
    if probe.not_measured:
        return (Row(label, units.NA, f"not measured: {probe.not_measured}"),)
    if probe.seconds is None:
        why = (
            "its cache folder was seeded with this machine's probed folder (--isa-probe "
            "none): the cold figure is a machine's that has compiled before; "
            if probe.seeded
            else "no probe was built in this compile: "
        )
        return (Row(label, "none", why + _text(probe.method)),)
    rows = [Row(label, units.seconds(probe.seconds), _text(probe.method))]
    if c.probed_cold_s is not None:
        rows.append(
            Row(
                "first call, cold cache, on a machine that has compiled before",
                units.seconds(c.probed_cold_s),
                f"the cold first call less the probe's {units.count(probe.builds)} builds "
                f"({units.seconds(probe.build_s)}, each source to its library): a cache "
                "folder Inductor probed before skips them (a developer's persistent "
                "/tmp/torchinductor_$USER); the load checks between them stay. The cold figure "
                "above is a fresh container's (CI, a new container), and the verdict's",
            )
        )
    return tuple(rows)


def guards_section(g: Guards) -> Section:
    """How many guards, their cost per call (and the profiler's cross-check when the cost came
    from removing them), and their share of a compiled call."""
    rows = [
        Row("guards (first call)", units.count(g.count), _text(g.source)),
        Row(
            "guard evaluation per call",
            units.seconds(g.overhead_s_per_call),
            _text(g.overhead_method),
        ),
    ]
    if g.by_removal:
        rows.append(
            Row(
                "profiler's figure (cross-check)",
                units.seconds(g.profiler_overhead_s_per_call),
                "'TorchDynamo Cache Lookup' events; reads high: the profiler's own cost lands "
                "inside the lookup it times",
            )
        )
    share = (
        "guard time / the with-guards median of the same samples"
        if g.by_removal
        else "guard time / compiled median"
    )
    rows.append(Row("share of a compiled call", units.percent(g.overhead_fraction, 1), share))
    summary = f"{units.count(g.count)} · overhead {units.seconds(g.overhead_s_per_call)}/call"
    return Section("Guards", summary=summary, rows=tuple(rows))


def memory_section(m: Memory) -> Section:
    """Each side's first call's peak, steady call's peak and what it holds after warm-up, the
    compilation's RSS growth, and how each was measured (probes/memory.py)."""
    call, compiling = _text(m.method), _text(m.compile_peak_method)
    first = _text(m.first_call_method)
    held = (
        _text(m.held_method)
        if m.held_method
        else "not measured" + (f": {m.held_not_measured}" if m.held_not_measured else "")
    )
    pool = (
        f"; of which CUDA graphs' private pools {units.nbytes(m.compiled_pool_bytes)}"
        if m.compiled_pool_bytes
        else ""
    )
    rows = (
        Row("eager first call peak", units.nbytes(m.eager_first_call_peak_bytes), first),
        Row("compiled first call peak", units.nbytes(m.compiled_first_call_peak_bytes), first),
        Row("eager call peak", units.nbytes(m.eager_peak_bytes), call),
        Row("compiled call peak", units.nbytes(m.compiled_peak_bytes), call),
        Row("eager holds after warm-up", units.nbytes(m.eager_held_bytes), held),
        Row("compiled holds after warm-up", units.nbytes(m.compiled_held_bytes), held + pool),
        Row(
            "footprint eager / compiled",
            units.pair(units.nbytes, m.eager_footprint_bytes, m.compiled_footprint_bytes),
            "held after warm-up + a steady call's peak: what memory growth is judged on",
        ),
        Row("during compilation", units.nbytes(m.compile_peak_bytes), compiling),
    )
    return Section("Memory", rows=rows)


NUMERICS_HEADERS = (
    "output",
    "dtype/shape",
    "max abs err",
    "max rel err",
    "cosine",
    "rule",
    "",
)


def _verdict(passed: Any) -> str:
    return "pass" if passed else "FAIL" if passed is False else ""


def numerics_section(n: Numerics) -> Section:
    """Each output compared (errors, cosine, the rule it was judged by, pass or FAIL), why there
    is no fp64 reference, and what was not compared (it never fails the check)."""
    rows = [
        [
            _text(o.path),
            f"{_text(o.dtype)} {_text(o.shape)}",
            units.sci(o.max_abs_err),
            units.sci(o.max_rel_err),
            units.sci(o.cosine),
            _text(o.rule or o.note),
            _verdict(o.passed),
        ]
        for o in n.outputs or []
    ]
    notes = [Note(f"No fp64 reference: {n.fp64_unavailable_why}")] if n.fp64_unavailable_why else []
    changes = mutates_text(n.mutates)
    if changes:
        notes.insert(
            0,
            Note(
                f"The call {changes}: each side ran on its own pristine copy of the inputs and "
                "state, and what it changed is compared as its output is"
            ),
        )
    if n.outputs:
        notes.append(Note(_text(n.method), how=True))
    if n.rng:
        notes.append(Note(f"Random numbers: {_text(n.rng.get('method'))}", how=True))
    if n.not_compared:
        skipped = ", ".join(f"{o.path} ({o.kind})" for o in n.not_compared)
        notes.append(Note(f"Not compared (never fails the check): {skipped}", how=True))
    if n.state:
        notes.append(Note(f"State: {n.state}", how=True))
    return Section(
        "Numerics",
        summary=units.numerics_status(n.passed),
        tables=(Table(NUMERICS_HEADERS, rows, code=(0,)),),
        notes=tuple(notes),
    )


def profile_sections(profile: Profile) -> list[Section]:
    """The profiler's top operators of each side (self CPU time and calls per model call); how
    they were measured under the first."""
    top = profile.top_ops or {}
    if not top:
        return []
    out = []
    for side in ("eager", "compiled"):
        rows = [
            [
                _text(o.get("name")),
                f"{o.get('self_cpu_us_per_call', 0):.1f} µs",
                f"{o.get('count_per_call', 0):.1f}",
            ]
            for o in top.get(side) or []
        ]
        table = Table(("op", "self CPU / call", "calls / call"), rows, code=(0,))
        out.append(Section(side, tables=(table,)))
    out[0] = replace(out[0], notes=(Note(_text(profile.method), how=True),))
    return out


def advice_section(v: Verdict) -> Section | None:
    """What to do, by topic, with the evidence (the first ADVICE_SHOWN; the JSON has them all)."""
    if not v.advice:
        return None
    rows = [[a.topic, a.text, a.evidence] for a in v.advice[:ADVICE_SHOWN]]
    left = len(v.advice) - ADVICE_SHOWN
    return Section(
        "Advice",
        detail=str(len(v.advice)),
        tables=(Table(("topic", "what to do", "evidence"), rows, detail=(0, 2)),),
        notes=(Note(f"{left} more in the JSON report.", how=True),) if left > 0 else (),
    )


def sections(report: Report) -> dict[str, Any]:
    """Every section above by its name in the HTML template."""
    return {
        "speed": speed_section(report.runtime),
        "compile": compile_section(report.compile),
        "guards": guards_section(report.guards),
        "memory": memory_section(report.memory),
        "numerics": numerics_section(report.numerics),
        "profile": profile_sections(report.profile),
        "advice": advice_section(report.verdict),
    }
