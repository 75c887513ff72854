"""The "Cutting the cold start" table's text, shared by the renderers: the whole model cold and
with a warm local cache (the main analysis), beside each remedy tried in a fresh process
(compile.remedies), with the lines under it (what was not tried and why, the other settings, how
it was measured), described once (report/layout.py) for every format; every figure is written by
units.py.

Which cold: the whole model's cold row is a fresh container's (Inductor's CPU ISA probe built,
measured: compile.isa_probe); where the probe's builds were read, a second row gives it on a machine
that has compiled before (`CompileTime.probed_cold_s`). A remedy's process started from this
machine's probed folder (run/isa_seed.py) says so in its first-call cell, with its fresh
container's figure beside it (the probe's builds added back); break-even and the chart take the
fresh container's, the footing of the cold row, the verdict and `check --max-compile-seconds`.
"""

from __future__ import annotations

from .. import units
from ..report.layout import Note, Section, Table
from ..report.model import Report
from ..report.rules import break_even
from ..report.sections import RemedyRow

TITLE = "Cutting the cold start"
HEADERS = ("way", "first call", "of which load", "speed vs eager", "break-even", "what you write")


def shown(report: Report) -> bool:
    """The table, for a run that tried remedies (or was asked to); other runs get `skipped_line`."""
    rem = report.compile.remedies
    asked = (report.options or {}).get("compile_remedies") is True
    return rem is not None and bool(rem.rows or rem.failed or asked)


def skipped_line(report: Report) -> str | None:
    """One line for a run that considered remedies and tried none (why, from the plan)."""
    rem = report.compile.remedies
    if rem is None or shown(report) or not rem.not_tried:
        return None
    return f"Cold-start remedies not tried: {rem.not_tried[0].get('why')}."


def _calls(be: dict | None) -> str:
    return units.calls(be["calls"]) if be else "never"


def bars(report: Report) -> list[tuple[str, float]]:
    """(label, first call seconds) for the chart: cold, warm, then each remedy measured."""
    c = report.compile
    out = [("cold (whole model)", c.cold_s), ("warm local cache", c.warm_s)]
    out += [(_short(r), r.startup_s) for r in (c.remedies.rows if c.remedies else [])]
    return [(label, s) for label, s in out if s is not None]


def _short(row: RemedyRow) -> str:
    """A chart label that fits beside its bar."""
    if row.name == "regional":
        return f"regional ({row.blocks} × {row.block})"
    return {"portable_cache": "portable cache (load + first call)"}.get(row.name or "", row.title)


def section(report: Report) -> Section | None:
    """The table of a run that tried remedies (or was asked to), and the lines under it."""
    if not shown(report):
        return None
    return Section(TITLE, tables=(Table(HEADERS, rows(report), code=(5,)),), notes=_notes(report))


def rows(report: Report) -> list[list[str]]:
    """One row per way: the main analysis's cold (a fresh container's, and on a machine that has
    compiled before where the probe's builds were read) and warm first calls, then each remedy's."""
    c, rt = report.compile, report.runtime
    speed = units.ratio(rt.speedup, rt.speedup_ci, level=rt.ci_level)
    eager, compiled = rt.eager.median_s, rt.compiled.median_s
    probed = c.probed_cold_s
    which = " (fresh container)" if probed is not None else ""
    if c.isa_probe and c.isa_probe.seeded:  # --isa-probe none: the cold folder seeded too
        which = " (machine probed)"
    out = [
        [
            "whole model, empty cache" + which,
            units.seconds(c.cold_s),
            "",
            speed,
            _calls(break_even(c.cold_s, eager, compiled)),
            "torch.compile(model)",
        ],
        *(
            [
                [
                    "whole model, empty cache, machine probed",
                    units.seconds(probed),
                    "",
                    speed,
                    _calls(break_even(probed, eager, compiled)),
                    "torch.compile(model) where Inductor has probed the CPU before",
                ]
            ]
            if probed is not None
            else []
        ),
        [
            "whole model, warm local cache",
            units.seconds(c.warm_s) if c.warm_s is not None else units.NA,
            "",
            speed,
            _calls(break_even(c.warm_s, eager, compiled)),
            "TORCHINDUCTOR_CACHE_DIR on persistent storage",
        ],
    ]
    for r in c.remedies.rows if c.remedies else []:
        out.append(
            [
                r.title,
                first_call(r),
                units.seconds(r.load_s) if r.load_s is not None else "",
                r.vs_eager(),  # with its decision interval, where the report made one
                _calls(break_even(r.startup_s, r.eager_median_s, r.median_s)),
                r.line or units.NA,
            ]
        )
    return out


def first_call(row: RemedyRow) -> str:
    """A remedy's first result: as its process paid it, and where that process started from this
    machine's probed folder, 'machine probed' with a fresh container's figure beside it."""
    if row.cold_start != "machine probed" or row.probed_startup_s is None:
        return units.seconds(row.startup_s)
    fresh = (
        f" ({units.seconds(row.startup_s)} in a fresh container)"
        if row.isa_probe_s is not None
        else ""
    )
    return f"{units.seconds(row.probed_startup_s)}, machine probed{fresh}"


HOW = (
    "how: each remedy in a fresh process whose inductor cache dir starts empty; first call "
    "(plus the artifacts' load, timed alone) then eager vs compiled timed paired, numerics "
    "vs eager; warm = the main analysis's second process on the same cache dir"
)


def probe_note(report: Report) -> str | None:
    """Which cold each row is, when the remedies' processes started from the machine's probed
    folder: their figures beside the whole model's machine-probed row; break-even of a fresh
    container's first call (the probe's builds added back) and why."""
    rem = report.compile.remedies
    seeded = [r for r in (rem.rows if rem else []) if r.cold_start == "machine probed"]
    if not seeded:
        return None
    build = seeded[0].isa_probe_s
    if build is None:  # the cold process did not pay the probe either (--isa-probe none)
        return (
            f"{len(seeded)} remedy process(es) started from this machine's probed folder "
            "(Inductor's CPU ISA probe not built again), as the whole model's cold process did: "
            "every first call here is a machine's that has compiled before."
        )
    return (
        f"{len(seeded)} remedy process(es) started from this machine's probed folder: Inductor's "
        f"CPU ISA probe not built again ({units.seconds(build)} of builds in the cold process), "
        "as on a machine that has compiled before; compare their first calls with the whole "
        "model's machine-probed row. Break-even is taken of a fresh container's first call (the "
        "probe's builds added back), as for the cold row: what a CI job, a new container or "
        "server pays, and what the verdict and check --max-compile-seconds judge."
    )


def _notes(report: Report) -> tuple[Note, ...]:
    """What was not tried and why, failures, the settings named, and how the rows were measured
    (a `how` line: the terminal, which shows figures, leaves it out)."""
    rem = report.compile.remedies
    if rem is None:
        return ()
    out = [f"not tried: {n.get('remedy')}: {n.get('why')}" for n in rem.not_tried]
    out += [f"failed: {f.get('strategy')}: {f.get('message')}" for f in rem.failed]
    out += [f"{r.title}: {r.note}" for r in rem.rows if r.note]
    art = rem.artifacts or {}
    if art.get("bytes") is not None:
        out.append(
            f"cache artifacts: {units.nbytes(art['bytes'])}, saved in "
            f"{units.seconds(art.get('save_s'))} after the cold first call (not in any timed figure)"
        )
    out += [f"other setting {s.get('setting')}: {s.get('why')}" for s in rem.settings]
    which = probe_note(report)
    out += [which] if which else []
    return (*(Note(line) for line in out), *((Note(HOW, how=True),) if rem.rows else ()))
