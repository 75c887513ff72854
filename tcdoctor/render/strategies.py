"""The compile strategies tried beside the main analysis, described once (report/layout.py) for
every format: the modes, the training ways, the shape settings and the regions, each a table
with the recommendation under it, and the strategies that failed or were not measured.
Every figure is written by units.py; a row's speed with its decision interval (`vs_eager`).
"""

from __future__ import annotations

from .. import units
from ..report.layout import Note, Section, Table, Text
from ..report.model import Report
from ..report.sections import Regions, StrategyRow
from ..report.sections.strategies import CudaGraphs


def cudagraphs_text(g: CudaGraphs | None) -> str:
    """CUDA graphs captured against skipped, with PyTorch's reasons (probes/cudagraphs.py):
    'CUDA graphs: 3 of 4 graph(s) captured, 1 skipped («skipping cudagraphs due to …»)'."""
    if not g:
        return units.NA
    count = "not measured how many" if g.captured is None else str(g.captured)
    text = f"CUDA graphs: {count} of {g.graphs or 0} graph(s) captured"
    if not g.skipped:
        return text
    reasons = "; ".join(f"«{r.reason}»" for r in g.reasons or [])
    return f"{text}, {g.skipped} skipped ({reasons})"


TIMED_HEADERS = (
    "",
    "first call",
    "first-call memory",
    "median / call",
    "memory held",
    "vs eager",
    "peak memory",
    "graph breaks",
    "numerics",
    "note",
)
MEMORY_HOW = (
    "first-call memory: the first call's peak (the compile's included); memory held: what the "
    "side still holds after warm-up, from before its first call (CUDA graphs' pools, workspaces, "
    "optimizer state, caches); peak memory: a steady call's peak above that (probes/memory.py)"
)
TRAINING_HOW = (
    "eager: as written · model: torch.compile(model) · step: the whole step compiled · "
    "optimizer: only optimizer.step compiled. Each way on a fresh copy of the model and "
    "optimizer, timed paired against an eager copy."
)


def _numerics(passed: bool | None) -> str:
    return {True: "pass", False: "FAIL"}.get(passed, "—")  # type: ignore[arg-type]


def _named(name: str | None, source: object) -> Text:
    """A row's name, and (not in the terminal) where it comes from."""
    name = name or units.NA
    return Text(f"{name} ({source})", name) if source else Text(name)


def _timed(rows: list[StrategyRow]) -> Table:
    """Modes or training ways: each row timed paired against eager."""
    return Table(
        TIMED_HEADERS,
        [
            [
                _named(r.name, r.source),
                units.first_call(r.first_call_s, None if r.baseline else r.first_call_cache),
                units.nbytes(r.first_call_peak_bytes),
                units.seconds(r.median_s),
                units.nbytes(r.held_bytes),
                r.vs_eager(),  # with its decision interval, where the report made one
                units.nbytes(r.peak_bytes),
                "—" if r.baseline else units.count(r.graph_breaks),
                _numerics(r.numerics_passed),
                r.note or (cudagraphs_text(r.cudagraphs) if r.cudagraphs else ""),
            ]
            for r in rows
        ],
        detail=(6, 7),  # steady peak, graph breaks: the terminal stays narrow
    )


def _dynamic(rows: list[StrategyRow]) -> Table:
    """One row per shape setting, one column per input shape (its compiled median, its speed)."""
    shapes = rows[0].shapes or []
    return Table(
        (
            "",
            "compiles",
            "compile time",
            "recompile limit",
            *(str(s.get("inputs")) for s in shapes),
        ),
        [
            [
                _named(r.name, (r.extra or {}).get("compile_kwargs")),
                units.count(r.compiles),
                units.seconds(r.compile_s) + (f", {r.cold_start}" if r.cold_start else ""),
                "HIT" if r.limit_hit else "ok",
                *(
                    f"{units.seconds(s.get('median_s'))} ({units.ratio(s.get('speedup'))} vs eager)"
                    for s in r.shapes or []
                ),
            ]
            for r in rows
        ],
    )


def _regions(reg: Regions) -> Table:
    def fullgraph(r) -> str:
        if r.fullgraph:
            return "yes"
        return f"NO: {r.why}" if r.fullgraph is False else (r.note or "-")

    return Table(
        ("region", "module", "calls/forward", "fullgraph", "eager", "compiled", "speedup"),
        [
            [
                r.name,
                r.module,
                units.count(r.calls_per_forward),
                fullgraph(r),
                units.seconds(r.eager_median_s),
                units.seconds(r.median_s),
                r.vs_eager(),  # with its decision interval, where the report made one
            ]
            for r in reg.regions
        ],
        code=(0,),
        detail=(2,),  # calls/forward: the terminal stays narrow
    )


def sections(report: Report) -> list[Section]:
    """Each kind of strategy tried, with its recommendation; then those that did not finish."""
    st, recs = report.strategies, report.verdict.recommendations or {}

    def one(title: str, table: Table, key: str, how: str = "") -> Section:
        rec = (recs.get(key) or {}).get("text")
        notes = ((Note(f"→ {rec}"),) if rec else ()) + ((Note(how, how=True),) if how else ())
        return Section(title, tables=(table,), notes=notes)

    out = []
    if st.modes:
        out.append(one("Modes", _timed(st.modes), "mode", MEMORY_HOW))
    if st.training:
        sec = one("Training step", _timed(st.training), "training", TRAINING_HOW + " " + MEMORY_HOW)
        form = (Note(f"compiled whole: {st.step_form}"),) if st.step_form else ()
        out.append(Section(sec.title, tables=sec.tables, notes=form + sec.notes))
    if st.dynamic:
        how = (st.dynamic[0].extra or {}).get("method") or ""
        out.append(one("Dynamic shapes", _dynamic(st.dynamic), "dynamic", how))
    reg = st.regions
    if reg:
        auto = ", tried because the model breaks a lot" if reg.automatic else ""
        title = f"Regions (depth {reg.depth}{auto})"
        out.append(one(title, _regions(reg), "regions", reg.method or ""))
    lines = [f"strategy {f['strategy']} failed: {f['message']}" for f in st.failed]
    lines += [f"strategy {f['strategy']}: not measured ({f['why']})" for f in st.not_run]
    if lines:
        out.append(Section("Strategies not measured", notes=tuple(Note(x) for x in lines)))
    return out
