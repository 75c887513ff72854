"""The serving and generation figures of `tcdoctor diff` (issues 60, 61): for a report with a
traffic replay (the serving section), each side's p50/p99, the requests it served, the compiles
during traffic, the warm-up's p99, the AOT package's and each shape strategy's figures and the
verdict's operating model; for a Generation (`Serving.generation`), TTFT and ITL p50/p99 per side,
tokens/s, the compiles during generation, the tokens equal to eager's, each cache strategy's
interval, and the generation's own judgement (its decision and its paired interval, handed in by
commands/diff.py from verdict/generation.py `judged`, as the regressions are).

Method: every figure is read from the typed section records, the same attribute the report draws
(render/serving.py, render/generation.py) and the sweep reads (report/sweep.py): one figure per
fact, never re-derived here. A comparison the report carries as an interval (a strategy against
its reference, the generation's compiled / eager) is shown with the report's own words
(`units.paired`: faster, slower, inside the noise), before and after; two point figures of two
reports get a figure and its change (`delta`), never "faster": the two reports ran in different
processes at different moments, and no interval between them exists.

Pitfalls: a Generation's serving section carries the generation and no traffic replay, so it is
not a serving section here; a section in one report only is said in one line (`SectionDiff.only`,
worded by render/diff.py) and has no rows. The rows are drawn by render/diff.py (`sections`) in
every format, and written to the diff's JSON (`Diff.to_json`, "sections").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

from .. import units
from .model import Report
from .sections.generation import GenerationSection
from .sections.percentiles import served
from .sections.serving import ServedSide, Serving

# each figure: its label, where a report has it (None: not measured), how units.py writes it
Figure = tuple[str, Callable[[Report], Any], Callable[[Any], str]]

SERVING, GENERATION = "serving", "generation"


def serving(r: Report) -> Serving | None:
    """The report's traffic replay: its serving section, unless it carries a Generation."""
    s = r.serving
    return s if s is not None and s.generation is None else None


def generation(r: Report) -> GenerationSection | None:
    return r.serving.generation if r.serving is not None else None


def _side(r: Report, side: str) -> ServedSide | None:
    """One side of the report's replay ("eager" or "compiled"; None: not replayed)."""
    s = serving(r)
    return getattr(s.replay, side) if s is not None and s.replay is not None else None


def _replayed(side: str, attr: str) -> Callable[[Report], Any]:
    return lambda r: _attr(_side(r, side), attr)


def _attr(x: Any, name: str) -> Any:
    return getattr(x, name) if x is not None else None


def _served(side: ServedSide | None) -> tuple[int, int] | None:
    """(requests served, requests replayed) of one side."""
    return served(side.latencies_s) if side is not None else None


def _of(v: tuple[int, int] | None) -> str:
    return units.of(*v) if v is not None else units.NA


def _warmed_p99(r: Report) -> float | None:
    s = serving(r)
    proof = s.warmup.proof if s is not None and s.warmup is not None else None
    return proof.p99_s if proof is not None else None


def _model(r: Report) -> str | None:
    om = r.verdict.serving
    return om.model if om is not None and om.model else None


SERVING_FIGURES: list[Figure] = [
    ("p50 eager", _replayed("eager", "p50_s"), units.seconds),
    ("p99 eager", _replayed("eager", "p99_s"), units.seconds),
    ("p50 compiled (cold start)", _replayed("compiled", "p50_s"), units.seconds),
    ("p99 compiled (cold start)", _replayed("compiled", "p99_s"), units.seconds),
    ("p99 compiled after the warm-up", _warmed_p99, units.seconds),
    ("requests served eager", lambda r: _served(_side(r, "eager")), _of),
    ("requests served compiled", lambda r: _served(_side(r, "compiled")), _of),
    ("compiles during traffic", lambda r: _attr(serving(r), "traffic_compiles"), units.count),
    ("operating model", _model, units.count),
]


def _gen(side: str, attr: str) -> Callable[[Report], Any]:
    return lambda r: _attr(_attr(generation(r), side), attr)


def _tokens_equal(r: Report) -> tuple[int, int] | None:
    t = _attr(generation(r), "tokens")
    return None if t is None or t.equal is None or t.compared is None else (t.equal, t.compared)


GENERATION_FIGURES: list[Figure] = [
    *[
        (f"{name} {q} {label}", _gen(side, f"{attr}_{q}_s"), units.seconds)
        for name, attr in (("TTFT", "ttft"), ("ITL", "itl"))
        for side, label in (("eager", "eager"), ("compiled", "compiled (cold start)"))
        for q in ("p50", "p99")
    ],
    ("tokens/s eager", _gen("eager", "tokens_per_s"), units.tokens_rate),
    ("tokens/s compiled (cold start)", _gen("compiled", "tokens_per_s"), units.tokens_rate),
    ("tokens/s compiled steady", _gen("steady", "tokens_per_s"), units.tokens_rate),
    ("compiles during generation", lambda r: _attr(generation(r), "traffic_compiles"), units.count),
    ("tokens equal to eager's", _tokens_equal, _of),
]


def _strategy_figures(a: Report, b: Report, section: Callable[[Report], Any]) -> list[Figure]:
    """Each strategy of either report by name: its p99 (the shape strategies') and its interval
    against the reference in the report's own words."""
    names = list(dict.fromkeys(s.name for r in (a, b) for s in section(r).strategies))

    def strategy(name: str) -> Callable[[Report], Any]:
        return lambda r: next((s for s in section(r).strategies if s.name == name), None)

    out: list[Figure] = []
    for name in names:
        get = strategy(name)
        if section is serving:  # the generation's cache strategies: their interval only
            out.append(
                (f"strategy {name} p99", lambda r, g=get: _attr(g(r), "p99_s"), units.seconds)
            )
        out.append(
            (
                f"strategy {name} vs reference",
                lambda r, g=get: _attr(g(r), "interval"),
                units.paired,
            )
        )
    return out


def _aot_figures() -> list[Figure]:
    """The AOT package's p50/p99 (left out where neither report served one)."""
    return [
        (f"AOT package {q}", lambda r, q=q: _attr(_aot(r), f"{q}_s"), units.seconds)
        for q in ("p50", "p99")
    ]


def _aot(r: Report) -> Any:
    s = serving(r)
    return s.aot if s is not None and s.aot is not None and s.aot.served else None


def delta(va: Any, vb: Any, show: Callable[[Any], str]) -> str:
    """'+1 (+50%)': the change of a number, written as the figure is; '' for anything else (a
    part of a whole: the change of its part)."""
    if all(isinstance(v, tuple) for v in (va, vb)):
        va, vb = va[0], vb[0]
        show = units.count
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (va, vb))
    if not numbers:
        return ""
    d = vb - va
    return ("+" if d >= 0 else "-") + show(abs(d)) + (f" ({(vb / va - 1):+.0%})" if va else "")


def rows(
    a: Report, b: Report, entries: Sequence[Figure], optional: bool = False
) -> list[dict[str, str]]:
    """Each entry before and after, and its change, as text; `optional`: an entry neither report
    has is left out (a strategy not run, the reference's own interval)."""
    out = []
    for label, figure, show in entries:
        va, vb = figure(a), figure(b)
        if optional and va is None and vb is None:
            continue
        out.append(
            {"figure": label, "before": show(va), "after": show(vb), "delta": delta(va, vb, show)}
        )
    return out


@dataclass(frozen=True)
class SectionDiff:
    """One section of two reports compared: its rows (both have it), or `only` ("before" or
    "after": the one report that has it, and no rows)."""

    name: str
    rows: list[dict[str, str]]
    only: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"section": self.name, "only": self.only, "figures": self.rows}


def _judged_rows(judged: Sequence[Any]) -> list[dict[str, str]]:
    """The generation's own judgement of each report (verdict/generation.py `Judged`): its
    decision (None: not compared, the single forward call decides) and its interval."""
    ja, jb = judged
    if ja is None or jb is None:
        return []

    def decision(j: Any) -> str:
        return str(j.decision) if j.decision is not None else "not compared"

    return [
        {
            "figure": "generation's decision",
            "before": decision(ja),
            "after": decision(jb),
            "delta": "",
        },
        {
            "figure": "compiled steady / eager request time",
            "before": units.paired(ja.interval),
            "after": units.paired(jb.interval),
            "delta": "",
        },
    ]


def sections(a: Report, b: Report, judged: Sequence[Any] = (None, None)) -> list[SectionDiff]:
    """The serving and the generation sections of `a` and `b` compared, each where either report
    has it; `judged`: each report's generation judgement, where given."""
    out = []
    for name, has, fixed in (
        (SERVING, serving, SERVING_FIGURES),
        (GENERATION, generation, GENERATION_FIGURES),
    ):
        ha, hb = has(a) is not None, has(b) is not None
        if not (ha or hb):
            continue
        if ha != hb:
            out.append(SectionDiff(name, [], "before" if ha else "after"))
            continue
        more = [*_strategy_figures(a, b, has), *(_aot_figures() if name == SERVING else [])]
        found = rows(a, b, fixed) + rows(a, b, more, optional=True)
        found += _judged_rows(judged) if name == GENERATION else []
        out.append(SectionDiff(name, found))
    return out
