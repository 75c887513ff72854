"""The outlines: every section of every output, named once, in the one order every format follows,
with the formats that draw it, where it folds and the chart the HTML draws above it. The renderers
(terminal.py, markdown.py, html.py with templates/report.html.j2 and page.html.j2) only iterate
them: none names a section, so a figure added to a phase's record reaches every format that draws
its section through that section's builder alone (tests/test_adding_a_figure.py plants one).

A report's outline is `outline(report)`; the other outputs are pages (`Page`: a title, the lines
under it, its sections): a sweep's overview (`sweep_page`: render/sweep.py's sections, its columns
declared once there), a diff (`diff_page`: render/diff.py's, its figures declared once in
report/diff.py) and a gate's checks for the step summary (`checks_page`). Adding a section is one
builder and one `Placed` here; a chart, its geometry in render/charts.py, its macro in
templates/charts.html.j2 and the `chart=` of the section it stands above; a key-figure tile, one
`Row` in render/figures.py `tiles`.

Each section is built from its phase's whole record (or the report) by its builder
(report/layout.py's `Section`: render/figures.py, breaks.py, patches.py, measured.py,
compile_table.py, remedy_table.py, break_even.py, strategies.py, graphs.py, ranks.py, trace.py,
environment.py, or a phase's own `Phase.layout`). What a renderer adds is its own frame: the
heading and the verdict, the errors and the Markdown's footer. The HTML's key-figure tiles are a
section the outline places (`tiles=True`), drawn above the folds.

Folding, where a format folds:
- the HTML draws every section inside a `<details>` (`Fold`): one of its own, named by its heading
  (and then drawn without an `<h2>`), or one shared with the sections beside it under a summary of
  the fold's own ("Tried: …", "Compile strategies"), each of them with its `<h2>`; the fold is open,
  closed, or open when its first section has rows to show;
- the Markdown folds the advice into `<details>` whole, and the graph-break rows past its `top`
  (the other long tables it cuts, as the terminal does at its `limit`: "… and N more").

Pitfalls: a fold is one object shared by the sections it holds: two folds that look alike are
still two (`eq=False`); a section the HTML shows with nothing in it (no recompile, no profile) is
placed for the HTML only, so its fold still says "not measured (why)" or its count; the charts are
the HTML's only (render/charts.py computes their geometry, templates/charts.html.j2 draws them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .. import units
from ..report import phases
from ..report.layout import Note, Row, Section
from ..report.model import Report
from ..report.sections import CompileTime
from . import (
    break_even,
    breaks,
    charts,
    checks,
    compile_table,
    diff,
    environment,
    figures,
    generation,
    graphs,
    measured,
    patches,
    ranks,
    remedy_table,
    serving,
    strategies,
    sweep,
    trace,
)

if TYPE_CHECKING:
    from ..checks.outcome import CheckResult
    from ..report.diff import Diff
    from ..report.sweep import Sweep

TERMINAL, MARKDOWN, HTML = "terminal", "markdown", "html"
EVERY = frozenset({TERMINAL, MARKDOWN, HTML})
FILES = frozenset({MARKDOWN, HTML})  # the report files; the terminal has these as key figures
HTML_ONLY = frozenset({HTML})


@dataclass(frozen=True, eq=False)
class Fold:
    """The HTML `<details>` one section, or a run of them, is drawn in.

    `summary`: the fold's own heading ("" when its first section's heading names it); `open`:
    open or closed, None for open when its first section has rows to show; `not_measured`: why
    its phase did not finish, said at its top; `how`: a line under its sections."""

    summary: str = ""
    open: bool | None = None
    not_measured: str | None = None
    how: str = ""


@dataclass(frozen=True)
class Chart:
    """An HTML chart above a section: the macro of templates/charts.html.j2 that draws it and its
    geometry (render/charts.py)."""

    kind: str
    geometry: dict[str, Any]


def _chart(kind: str, geometry: dict[str, Any] | None) -> Chart | None:
    """A chart, or none when render/charts.py found nothing to draw."""
    return Chart(kind, geometry) if geometry else None


@dataclass(frozen=True)
class Placed:
    """One section where the outline puts it.

    `name`: what it is (stable, for tests and readers); `formats`: the formats that draw it;
    `fold`: its HTML `<details>`; `titled`: False for a section drawn without its heading (the key
    figures under the verdict, the one line on remedies not tried); `cut`: the formats that draw
    only the first `limit` / `top` rows of its tables that can say '… and N more'; `markdown`:
    "rest" folds those other rows into `<details>` instead, "whole" folds the section; `chart`:
    what the HTML draws above it; `tiles`: the HTML draws its rows as the key-figure tiles above
    its folds, not in one; `links`: the Markdown draws its cells' links too (a page written beside
    the files it links, as the sweep's overview: a report's Markdown is pasted, so its links
    would point nowhere and it prints them as text)."""

    name: str
    section: Section
    formats: frozenset[str]
    fold: Fold = field(default_factory=Fold)
    titled: bool = True
    cut: frozenset[str] = frozenset()
    markdown: Literal["", "rest", "whole"] = ""
    chart: Chart | None = None
    tiles: bool = False
    links: bool = False


@dataclass(frozen=True)
class Folded:
    """A fold and the sections in it, as the HTML draws them: `named`, its first section's
    heading is the fold's summary (that section draws no `<h2>`)."""

    summary: str
    open: bool
    not_measured: str | None
    how: str
    parts: tuple[Placed, ...]
    named: bool


def outline(report: Report, base_dir: str | None = None) -> list[Placed]:
    """Every section of the report, in the order every format shows them; `base_dir`: the folder
    the HTML is written to (its local links are relative to it)."""
    return [
        *_tiles(report),
        *_key_figures(report),
        *_advice(report),
        *_breaks(report),
        *_recompiles(report),
        *_tried(report),
        *_speed(report),
        *_compile(report),
        *_break_even(report),
        *_strategies(report),
        *_serving(report, base_dir),
        *_guards(report),
        *_memory(report),
        *_phases(report),
        *_numerics(report),
        *_profile(report),
        *_ranks(report),
        *_trace(report, base_dir),
        *_environment(report),
    ]


def drawn(placed: Sequence[Placed], fmt: str) -> list[Placed]:
    """The sections one format draws, in order."""
    return [p for p in placed if fmt in p.formats]


def tiles(placed: Sequence[Placed]) -> list[Row]:
    """The HTML's key-figure tiles, in order."""
    return [r for p in drawn(placed, HTML) if p.tiles for r in p.section.rows]


def folds(placed: Sequence[Placed]) -> list[Folded]:
    """The HTML's sections grouped into their folds, in order (the tiles stand above them)."""
    out: list[Folded] = []
    parts: list[Placed] = []
    for p in [*(p for p in drawn(placed, HTML) if not p.tiles), None]:
        if parts and (p is None or p.fold is not parts[0].fold):
            out.append(_folded(parts))
            parts = []
        if p is not None:
            parts.append(p)
    return out


def _folded(parts: list[Placed]) -> Folded:
    fold, first = parts[0].fold, parts[0].section
    rows = bool(first.rows or any(t.rows for t in first.tables))
    return Folded(
        summary=fold.summary or first.heading,
        open=rows if fold.open is None else fold.open,
        not_measured=fold.not_measured,
        how=fold.how,
        parts=tuple(parts),
        named=not fold.summary,
    )


def _own(
    name: str,
    sec: Section | None,
    formats: frozenset[str],
    open: bool | None = None,
    not_measured: str | None = None,
    **placed: Any,
) -> list[Placed]:
    """A section in a fold of its own, open or closed (None: open when it has rows), saying why
    its phase did not finish; none when there is no section."""
    fold = Fold(open=open, not_measured=not_measured)
    return [] if sec is None else [Placed(name, sec, formats, fold, **placed)]


def _tiles(report: Report) -> list[Placed]:
    """The HTML's key figures at a glance, above its folds."""
    return [Placed("tiles", figures.tiles(report), HTML_ONLY, titled=False, tiles=True)]


def _key_figures(report: Report) -> list[Placed]:
    """Under the verdict in the terminal and the Markdown; closed in the HTML (its tiles above)."""
    return _own("key_figures", figures.section(report), EVERY, open=False, titled=False)


def _advice(report: Report) -> list[Placed]:
    return _own("advice", measured.advice_section(report.verdict), FILES, markdown="whole")


def _breaks(report: Report) -> list[Placed]:
    """The breaks (the terminal and the Markdown only when there is one), the graphs beside them."""
    gb = report.graph_breaks
    fold = Fold(open=bool(gb.unique), not_measured=gb.not_measured)
    formats = EVERY if breaks.shown(report) else HTML_ONLY
    out = [
        Placed(
            "breaks",
            breaks.section(report),
            formats,
            fold,
            cut=frozenset({TERMINAL, MARKDOWN}),
            markdown="rest",
        )
    ]
    per_graph = graphs.section(report.graphs)
    if per_graph is not None:
        out.append(Placed("graphs", per_graph, FILES, fold, cut=frozenset({MARKDOWN})))
    return out


def _recompiles(report: Report) -> list[Placed]:
    """Each recompile; with none, the HTML's fold alone (its count, or why not measured)."""
    rc = report.recompiles
    sec = breaks.recompiles_section(rc)
    fold = Fold(open=bool(rc.events), not_measured=rc.not_measured)
    if sec is None:
        empty = Section(breaks.RECOMPILES, detail=units.count(rc.count))
        return [Placed("recompiles", empty, HTML_ONLY, fold)]
    return [Placed("recompiles", sec, EVERY, fold, cut=frozenset({TERMINAL}))]


def _tried(report: Report) -> list[Placed]:
    """The fixes tried without a source edit, each source patch, which layer: one fold."""
    sections = patches.sections(report)
    layer = " · which layer" if report.ablation else ""
    fold = Fold(f"Tried: {len(report.fixes or [])} fix(es) applied in fresh processes{layer}", True)
    return [Placed("tried", s, EVERY, fold) for s in sections]


def _speed(report: Report) -> list[Placed]:
    rt = report.runtime
    chart = charts.boxplot({"eager": rt.eager, "compiled": rt.compiled}) if rt.samples else None
    return _own(
        "speed",
        measured.speed_section(rt),
        HTML_ONLY,
        open=True,
        not_measured=rt.not_measured,
        chart=_chart("boxplot", chart),
    )


def _compile(report: Report) -> list[Placed]:
    """Compile time (the HTML's), the frames' table and the cold start's remedies: one fold."""
    c = report.compile
    fold = Fold(open=True, not_measured=c.not_measured)
    out = [
        Placed(
            "compile",
            measured.compile_section(c),
            HTML_ONLY,
            fold,
            chart=_chart("stacked_phases", charts.stacked_phases(_phase_bars(c))),
        )
    ]
    frames = compile_table.section(c.graphs, c.isa_probe)
    if frames is not None:
        out.append(
            Placed("compile_frames", frames, EVERY, fold, cut=frozenset({TERMINAL, MARKDOWN}))
        )
    skipped = remedy_table.skipped_line(report)
    if skipped:
        line = Section(remedy_table.TITLE, notes=(Note(skipped),))
        out.append(Placed("remedies", line, EVERY, fold, titled=False))
    elif (remedies := remedy_table.section(report)) is not None:
        chart = _chart("first_calls", charts.first_calls(remedy_table.bars(report)))
        out.append(Placed("remedies", remedies, EVERY, fold, chart=chart))
    return out


def _phase_bars(c: CompileTime) -> dict[str, dict[str, float]]:
    """The cold and warm first calls' compile phases, and the time outside the compiler."""
    bars = {}
    for label, parts, total in (("cold", c.phases, c.cold_s), ("warm", c.warm_phases, c.warm_s)):
        if not parts or total is None:
            continue
        keys = ["dynamo_s", "aot_autograd_s", "inductor_lowering_s", "codegen_and_cpp_or_triton_s"]
        row = {k: max(0.0, parts[k]) for k in keys if parts.get(k) is not None}
        row["outside_compiler_s"] = max(0.0, total - sum(row.values()))
        bars[label] = row
    return bars


def _break_even(report: Report) -> list[Placed]:
    """The calls to repay compiling, with the cumulative-time chart when compiling pays back."""
    rt, be = report.runtime, report.verdict.break_even or {}
    chart = None
    if be.get("cold"):
        costs = {"cold cache": report.compile.cold_s}
        if be.get("warm"):
            costs["warm cache"] = report.compile.warm_s
        calls = max(10, 2 * be["cold"]["calls"])
        chart = charts.break_even(rt.eager.median_s, rt.compiled.median_s, costs, calls)
    sec = break_even.section(report)
    return _own("break_even", sec, FILES, open=True, chart=_chart("break_even", chart))


STRATEGIES_HOW = (
    "Each strategy ran in its own fresh process with an empty inductor cache (so compile times are "
    'cold); rows marked "main analysis" are reused, not compiled again.'
)
STRATEGIES_CACHE_HOW = (
    "Each strategy ran in its own fresh process; modes, training ways and shape settings with an "
    "empty inductor cache (so their compile times are cold, as a user's fresh process pays them), "
    "the others with a copy of the main analysis's cache (graphs they leave unchanged are cache "
    'hits; their first call says so). Rows marked "main analysis" are reused, not compiled again.'
)


def _strategies(report: Report) -> list[Placed]:
    """Each kind of strategy tried (modes and training ways with their chart): one fold."""
    st = report.strategies
    cached = any(r.cache_start for r in (*st.modes, *st.training, *st.dynamic))
    fold = Fold("Compile strategies", True, how=STRATEGIES_CACHE_HOW if cached else STRATEGIES_HOW)
    timed = {"Modes": st.modes, "Training step": st.training}  # the benchmark article's table
    out = []
    for sec in strategies.sections(report):
        chart = _chart("modes", charts.modes(timed.get(sec.title) or []))
        out.append(Placed("strategies", sec, EVERY, fold, chart=chart))
    return out


def _serving(report: Report, base_dir: str | None) -> list[Placed]:
    """The traffic replayed (render/serving.py): its key figures and the operating model (every
    format), the latency table under its chart (the files), the compiles during traffic and the
    strategies (every format, long tables cut), the warm-up, restart, host, AOT and what was not
    measured (the files): one fold, open. None without a serving section."""
    s = report.serving
    if s is None:
        return []
    fold = Fold(serving.fold_title(s), True)
    cut = frozenset({TERMINAL, MARKDOWN})
    if s.generation is not None:  # a Generation: its parts replace the forward ones (issue 60)
        fold = Fold(f"{generation.TITLE}: {s.generation.prompts} prompts served by generate", True)
        return [
            Placed("generation", sec, EVERY, fold, cut=cut) for sec in generation.sections(report)
        ]
    out = [Placed("serving", serving.section(report), EVERY, fold)]  # type: ignore[arg-type]
    if (sec := serving.model_section(report)) is not None:
        out.append(Placed("serving_model", sec, EVERY, fold))
    if (sec := serving.latency_section(report)) is not None:
        out.append(Placed("serving_latency", sec, FILES, fold, chart=_latency_chart(s)))
    if (sec := serving.compiles_section(report)) is not None:
        out.append(Placed("serving_compiles", sec, EVERY, fold, cut=cut))
    if (sec := serving.strategies_section(report)) is not None:
        out.append(Placed("serving_strategies", sec, EVERY, fold))
    out += [Placed("serving_part", sec, FILES, fold) for sec in serving.details(report, base_dir)]
    if (sec := serving.not_measured_section(report)) is not None:
        out.append(Placed("serving_not_measured", sec, FILES, fold))
    return out


def _latency_chart(s: Any) -> Chart | None:
    """Latency over requests: eager, compiled, compiled after the warm-up; compile stalls and
    the eager fallback's requests marked."""
    replay, proof = s.replay, (s.warmup.proof if s.warmup else None)
    series = {}
    if replay and replay.eager:
        series["eager"] = replay.eager.latencies_s
    side = replay.compiled if replay else None
    if side is not None:
        series["compiled"] = side.latencies_s
    if proof is not None and proof.latencies_s:
        series["after warm-up"] = proof.latencies_s
    stalls: dict[int, str] = {}
    for c in side.compiles if side else []:
        if c.request is not None:
            said = f"{units.seconds(c.seconds)} {c.kind}" + (f": {c.reason}" if c.reason else "")
            stalls[c.request] = stalls.get(c.request, f"request {c.request}") + f"; {said}"
    fallback = side.fallback_requests if side else []
    return _chart("latency", charts.latency(series, stalls, fallback)) if series else None


def _guards(report: Report) -> list[Placed]:
    return _own("guards", measured.guards_section(report.guards), HTML_ONLY, open=False)


def _memory(report: Report) -> list[Placed]:
    m = report.memory
    return _own(
        "memory", measured.memory_section(m), HTML_ONLY, open=False, not_measured=m.not_measured
    )


def _phases(report: Report) -> list[Placed]:
    """The sections phases lay out themselves (`Phase.layout`): memory growth, drift, a new probe's."""
    return [p for sec in phases.layouts(report) for p in _own("phase", sec, EVERY)]


def _numerics(report: Report) -> list[Placed]:
    n = report.numerics
    sec = measured.numerics_section(n)
    return _own("numerics", sec, HTML_ONLY, open=n.passed is False, not_measured=n.not_measured)


def _profile(report: Report) -> list[Placed]:
    """Each side's top operators: one fold, closed; with none, the fold says why."""
    fold = Fold("Top operators", False, not_measured=report.profile.not_measured)
    sections = measured.profile_sections(report.profile)
    if not sections:
        return [Placed("profile", Section(fold.summary), HTML_ONLY, fold, titled=False)]
    return [Placed("profile", s, HTML_ONLY, fold) for s in sections]


def _ranks(report: Report) -> list[Placed]:
    return _own("ranks", ranks.section(report.distributed), EVERY)


def _trace(report: Report, base_dir: str | None) -> list[Placed]:
    return _own("trace", trace.section(report.torch_trace, base_dir), EVERY)


def _environment(report: Report) -> list[Placed]:
    """The HTML's; the terminal's first line and the Markdown's footer name the environment."""
    return _own("environment", environment.section(report), HTML_ONLY, open=False)


# ---------------------------------------------------------------------------- pages


@dataclass(frozen=True)
class Page:
    """An output that is not a report (a sweep's overview, a diff, a gate's checks), as every
    format draws it: its title (the terminal's first line, the Markdown's `##` heading, the
    HTML's <title> and <h1>), the lines under it, and its sections where the outline puts them."""

    title: str
    lead: tuple[str, ...] = ()
    placed: tuple[Placed, ...] = ()


def sweep_page(overview: Sweep) -> Page:
    """A sweep's overview: the targets (each linking its report), the summary, the notes, the
    speedup chart (the HTML's) and how it was measured (the files')."""
    chart = _chart("speedups", charts.speedups(overview.rows))
    return Page(
        sweep.title(overview),
        placed=(
            Placed("targets", sweep.targets(overview), EVERY, links=True),
            Placed("summary", sweep.summary(overview), EVERY),
            *_own("notes", sweep.sweep_notes(overview), EVERY),
            *([Placed("speedups", sweep.speedups(), HTML_ONLY, chart=chart)] if chart else []),
            Placed("how", sweep.how(overview), FILES, markdown="whole"),
        ),
    )


def diff_page(d: Diff) -> Page:
    """A diff: the key figures before and after, the serving and generation figures, the breaks
    fixed and introduced, the regressions."""
    return Page(
        diff.title(d),
        diff.lead(d),
        placed=(
            Placed("diff_figures", diff.figures(d), EVERY, titled=False),
            *[Placed(f"diff_{name}", sec, EVERY) for name, sec in diff.sections(d)],
            Placed("fixed", diff.breaks(diff.FIXED, d.fixed), EVERY),
            Placed("introduced", diff.breaks(diff.INTRODUCED, d.introduced), EVERY),
            *_own("regressions", diff.regressions(d), EVERY),
        ),
    )


def checks_page(results: Sequence[CheckResult], note: str | None = None) -> Page:
    """A gate's checks as the step summary heads them: one table, the note under it."""
    from ..checks.outcome import count_line

    table = checks.section(results, note)
    return Page(
        f"tcdoctor check: {count_line(list(results))}",
        placed=(Placed("checks", table, EVERY, titled=False),),
    )
