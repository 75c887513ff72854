"""A sweep's overview: one row per target, a summary with the torch.compile dashboard's definitions,
shards, merging, and what changed against an earlier sweep. Torch-free, like all of report/.

Method. Each row is read from the target's own saved report (`row_from_report`, given the report
loaded back from its JSON file), never measured again; a target without a report (a bad target,
`build()` raised) is a row with `analyze`'s exit code and its one-line reason. The summary follows
the PyTorch torch.compile performance dashboard's definitions (`METHOD` says them in words):

- pass rate: rows analysed without an error (exit code 0, a complete report) ÷ all rows;
- geometric-mean speedup: over the rows whose speedup was measured (the model compiled and was timed),
  each row's ratio of medians (eager ÷ compiled);
- median cold compile: the median of the measured cold-cache first compiled calls;
- memory compression ratio: eager peak ÷ compiled peak per row (both measured and > 0), geometric mean;
- verdict counts: rows per decision ("no verdict" for a row without one, and for a target whose
  analysis ended before any figure was measured, e.g. a timeout in the first call: its report's
  decision is the rules' default on no evidence, not a finding).

Pitfalls. A geometric mean over few rows says little, so the count it is taken over is given beside
it. Rows of a merged sweep come from different machines when the shards ran on different machines;
`merge` names every difference (torch version, device, options) in one line each.

Changes against a baseline (`compare`): graph breaks are matched by (file name, line, reason), so a
sweep run from another checkout path still matches; a speedup change is reported only where the two
95% CIs do not overlap; a cold compile change only beyond `COMPILE_CHANGE` (both relative and absolute,
since a 0.2 s compile moves by 30% from noise alone).
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .. import units
from ..errors import EXIT_OK, ReportError
from .check import CheckResult
from .encoding import dumps
from .model import Report
from .sections import Record, slower_than_eager

SCHEMA = "tcdoctor-sweep"
SWEEP_SCHEMA_VERSION = 1
RECORD_NAME = "row.json"  # each target's record in DIR/<slug>/, written atomically when it ends
COMPILE_CHANGE = (0.25, 0.5)  # a cold compile change is reported beyond 25% and 0.5 s

METHOD = (
    "Summary figures as the PyTorch torch.compile performance dashboard defines them: pass rate = "
    "targets analysed without an error (exit code 0, a complete report) ÷ all targets; speedup = "
    "geometric mean of each model's eager/compiled ratio of medians, over the models that compiled and "
    "were timed; cold compile = median of the cold-cache first compiled calls; memory compression "
    "ratio = eager peak ÷ compiled peak per model, geometric mean over the models where both were "
    "measured; verdict counts = models per decision. Every figure of a row is read from that target's "
    "own saved JSON report."
)


def slug(target: str) -> str:
    """The folder name of a target's reports: `models/resnet.py:build` -> `models__resnet.py--build`."""
    path, _, func = target.rpartition(":")
    safe = lambda s: "".join(c if c.isalnum() or c in "._-" else "_" for c in s)  # noqa: E731
    return safe(path.replace(os.sep, "__").replace("/", "__")) + "--" + safe(func)


@dataclass
class SweepRow(Record):
    """One target of a sweep: how its analysis ended and its headline figures, from its own report."""

    DERIVED = ("status", "memory_compression")
    OMIT_NONE = ("changes",)

    target: str = ""
    slug: str = ""
    exit_code: int | None = None  # as `analyze` would have returned it; None: missing from a merge
    reason: str | None = None  # why the report is not complete (None when it is)
    verdict: str | None = None
    graph_breaks: int | None = None
    breaks: list[dict] = field(default_factory=list)  # {"file", "line", "reason"} per unique break
    recompiles: int | None = None
    speedup: float | None = None
    speedup_ci: list[float] | None = None
    cold_compile_s: float | None = None
    warm_compile_s: float | None = None
    break_even_calls: int | None = None
    eager_peak_bytes: int | None = None
    compiled_peak_bytes: int | None = None
    numerics: bool | None = None  # the numerics check passed
    duration_s: float | None = None  # wall time of this target's analysis
    report: str | None = None  # its HTML report, relative to the sweep folder
    json: str | None = None  # its JSON report, relative to the sweep folder
    torch: str | None = None
    device: str | None = None
    changes: list[dict] | None = None  # against a baseline sweep (`compare`)

    @property
    def status(self) -> str:
        """complete (exit 0), incomplete (a report with errors), failed (no report), missing (merge)."""
        if self.exit_code is None:
            return "missing"
        if self.exit_code == EXIT_OK:
            return "complete"
        return "incomplete" if self.json else "failed"

    @property
    def complete(self) -> bool:
        return self.exit_code == EXIT_OK

    @property
    def measured(self) -> bool:
        """Any figure of the row was measured (a target that timed out before any was not)."""
        figures = (
            self.graph_breaks, self.recompiles, self.speedup, self.cold_compile_s,
            self.warm_compile_s, self.eager_peak_bytes, self.compiled_peak_bytes, self.numerics,
        )  # fmt: skip
        return any(f is not None for f in figures)

    @property
    def shown_verdict(self) -> str | None:
        """The verdict, where something was measured to give it on (else None: "no verdict"; a
        report's verdict on nothing measured is its rule's default, not a finding)."""
        return self.verdict if self.measured else None

    @property
    def memory_compression(self) -> float | None:
        """Eager peak ÷ compiled peak (the dashboard's compression ratio; > 1: compiled uses less)."""
        e, c = self.eager_peak_bytes, self.compiled_peak_bytes
        return e / c if e and c and e > 0 and c > 0 else None

    @property
    def slower_than_eager(self) -> bool:
        return slower_than_eager(self.speedup_ci[1] if self.speedup_ci else None)

    @property
    def break_keys(self) -> set[tuple]:
        return {_break_key(b) for b in self.breaks}


def _break_key(b: dict) -> tuple:
    return (os.path.basename(str(b.get("file") or "?")), b.get("line"), b.get("reason"))


def _geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


@dataclass
class Sweep(Record):
    """A sweep's overview (DIR/sweep.json): its rows and, derived from them, the summary."""

    DERIVED = ("summary",)
    OMIT_NONE = ("shard", "baseline")

    schema: str = SCHEMA
    schema_version: int = SWEEP_SCHEMA_VERSION
    tool: dict[str, Any] = field(default_factory=dict)
    torch: str | None = None  # the torch installed where the sweep ran
    options: dict[str, Any] = field(default_factory=dict)
    expected_calls: int | None = None
    shard: str | None = None  # "K/N"
    targets: list[str] = field(default_factory=list)  # every target of the whole sweep (all shards)
    rows: list[SweepRow] = field(default_factory=list)
    created: str | None = None
    wall_s: float | None = None
    baseline: str | None = None  # the baseline sweep the rows' changes are against
    removed: list[str] = field(default_factory=list)  # in the baseline, not in this sweep
    warnings: list[str] = field(default_factory=list)  # a merge's findings, one line each

    # ------------------------------------------------------------------ summary figures

    @property
    def pass_rate(self) -> float | None:
        return sum(r.complete for r in self.rows) / len(self.rows) if self.rows else None

    @property
    def timed(self) -> list[SweepRow]:
        return [r for r in self.rows if r.speedup is not None and r.speedup > 0]

    @property
    def geomean_speedup(self) -> float | None:
        return _geomean([r.speedup for r in self.timed])

    @property
    def median_cold_compile_s(self) -> float | None:
        xs = [r.cold_compile_s for r in self.rows if r.cold_compile_s is not None]
        return statistics.median(xs) if xs else None

    @property
    def memory_compression(self) -> float | None:
        return _geomean([r.memory_compression for r in self.rows])

    @property
    def verdict_counts(self) -> dict[str, int]:
        return dict(Counter(r.shown_verdict or "no verdict" for r in self.rows))

    @property
    def status_counts(self) -> dict[str, int]:
        return dict(Counter(r.status for r in self.rows))

    @property
    def summary(self) -> dict[str, Any]:
        mem = [r for r in self.rows if r.memory_compression is not None]
        cold = [r for r in self.rows if r.cold_compile_s is not None]
        return {
            "targets": len(self.rows),
            "passed": sum(r.complete for r in self.rows),
            "pass_rate": self.pass_rate,
            "geomean_speedup": self.geomean_speedup,
            "speedup_over": len(self.timed),
            "median_cold_compile_s": self.median_cold_compile_s,
            "cold_compile_over": len(cold),
            "memory_compression": self.memory_compression,
            "memory_over": len(mem),
            "verdicts": self.verdict_counts,
            "statuses": self.status_counts,
            "slower_than_eager": [r.target for r in self.rows if r.slower_than_eager],
            "method": METHOD,
        }

    @property
    def complete(self) -> bool:
        """Every target produced a complete report (the sweep's exit code 0)."""
        return all(r.complete for r in self.rows)

    def summary_lines(self) -> list[str]:
        """The summary in words, as every format shows it."""
        s = self.summary
        verdicts = ", ".join(
            f"{units.decision_text(k) if k != 'no verdict' else k}: {n}"
            for k, n in sorted(s["verdicts"].items())
        )
        return [
            f"pass rate {units.percent(s['pass_rate'])} ({s['passed']} of {s['targets']} "
            "analysed without an error)",
            f"geometric-mean speedup {units.ratio(s['geomean_speedup'])} "
            f"(over {s['speedup_over']} model(s) that compiled)",
            f"median cold compile {units.seconds(s['median_cold_compile_s'])} "
            f"(over {s['cold_compile_over']})",
            f"memory compression ratio {units.ratio(s['memory_compression'])} "
            f"(eager peak ÷ compiled peak, geometric mean over {s['memory_over']})",
            f"verdicts: {verdicts or 'none'}",
        ]

    # ------------------------------------------------------------------ files

    def to_json(self) -> str:
        return dumps(self.to_dict(), indent=2)

    def save(self, path: str) -> None:
        atomic_write(path, self.to_json())

    @classmethod
    def load(cls, path: str) -> Sweep:
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            raise ReportError(f"no sweep overview at {path}") from None
        except (OSError, ValueError) as exc:
            raise ReportError(f"cannot read sweep overview {path}: {exc}") from None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ReportError(f"{path} is not a tcdoctor sweep overview (no schema {SCHEMA!r})")
        if data.get("schema_version", 0) > SWEEP_SCHEMA_VERSION:
            raise ReportError(f"{path} has sweep schema_version {data['schema_version']}")
        try:
            return cls.from_dict(data)
        except (TypeError, AttributeError, ValueError) as exc:
            raise ReportError(f"{path} does not have a sweep overview's shape ({exc})") from None


def atomic_write(path: str, text: str) -> None:
    """Write via a temporary file and a rename: a reader (or a kill -9) never sees half a file."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


# ---------------------------------------------------------------------------- rows


def _reason(report: Report) -> str | None:
    if not report.errors:
        return None
    first = report.errors[0]
    more = f" (+{len(report.errors) - 1} more in the report)" if len(report.errors) > 1 else ""
    return f"{first.get('phase')}: {first.get('message')}{more}"


def row_from_report(
    target: str, report: Report, exit_code: int, duration_s: float | None, folder: str
) -> SweepRow:
    """A target's row from its saved report (loaded back from the JSON file), links under `folder`."""
    rt, v = report.runtime, report.verdict
    row = SweepRow(
        target=target,
        slug=folder,
        exit_code=exit_code,
        reason=_reason(report) if exit_code != EXIT_OK else None,
        verdict=v.decision,
        graph_breaks=report.graph_breaks.count,
        breaks=[
            {"file": b.file, "line": b.line, "reason": b.reason} for b in report.graph_breaks.unique
        ],
        recompiles=report.recompiles.count,
        speedup=rt.speedup,
        speedup_ci=list(rt.speedup_ci) if rt.speedup_ci else None,
        cold_compile_s=report.compile.cold_s,
        warm_compile_s=report.compile.warm_s,
        break_even_calls=v.break_even_calls,
        eager_peak_bytes=report.memory.eager_peak_bytes,
        compiled_peak_bytes=report.memory.compiled_peak_bytes,
        numerics=report.numerics.passed,
        duration_s=duration_s,
        report=f"{folder}/report.html",
        json=f"{folder}/report.json",
        torch=report.environment.get("torch"),
        device=_device(report.environment),
    )
    row.verdict = row.shown_verdict  # a row says only what was measured
    return row


def _device(env: dict) -> str | None:
    """'cpu, x86_64, 2 CPUs' or 'cuda, NVIDIA H100, 16 CPUs': what a merge compares across shards."""
    if not env.get("device"):
        return None
    parts = [env["device"], env.get("device_name")]
    parts.append(f"{env['cpu_count']} CPUs" if env.get("cpu_count") else None)
    return ", ".join(str(p) for p in parts if p)


def failed_row(target: str, exit_code: int, reason: str, duration_s: float | None) -> SweepRow:
    """A target that produced no report: `analyze`'s exit code and its one line."""
    return SweepRow(
        target=target, slug=slug(target), exit_code=exit_code, reason=reason, duration_s=duration_s
    )


# ---------------------------------------------------------------------------- shards


def parse_shard(text: str) -> tuple[int, int]:
    """'K/N' with 1 ≤ K ≤ N; ValueError with the reason otherwise."""
    k, sep, n = text.partition("/")
    if not sep or not k.strip().isdigit() or not n.strip().isdigit():
        raise ValueError(f"--shard must look like K/N (e.g. 2/4), got {text!r}")
    ki, ni = int(k), int(n)
    if not 1 <= ki <= ni:
        raise ValueError(f"--shard K/N needs 1 ≤ K ≤ N, got {text!r}")
    return ki, ni


def shard_targets(
    targets: list[str], k: int, n: int, durations: dict[str, float] | None = None
) -> list[str]:
    """The K-th of N disjoint shares of `targets` (1-based), in the targets' own order.

    Without durations: every N-th target from the K-th (round robin over the given order). With
    durations (a previous sweep's, by target): longest first, each to the shard with the least total
    so far (ties: the lower shard, then the target name), a target not in it counted at the median
    of the known ones. Deterministic: every shard computes the same assignment from the same list.
    """
    if not durations:
        return [t for i, t in enumerate(targets) if i % n == k - 1]
    known = [d for t, d in durations.items() if t in targets and d is not None]
    default = statistics.median(known) if known else 1.0
    cost = {t: durations.get(t, default) or default for t in targets}
    loads = [0.0] * n
    mine = set()
    for t in sorted(targets, key=lambda t: (-cost[t], t)):
        j = min(range(n), key=lambda j: (loads[j], j))
        loads[j] += cost[t]
        if j == k - 1:
            mine.add(t)
    return [t for t in targets if t in mine]


# ---------------------------------------------------------------------------- merge


def merge(shards: list[tuple[str, Sweep]]) -> Sweep:
    """Join shard overviews (name, sweep) into one; every inconsistency is a line in `warnings`:
    a target missing (kept as a row with status 'missing') or appearing twice (the first kept), and
    shards that differ in torch version, device, options or target list."""
    warnings: list[str] = []
    targets: list[str] = []
    for _, sw in shards:
        targets += [t for t in sw.targets if t not in targets]
    rows: dict[str, tuple[str, SweepRow]] = {}
    for name, sw in shards:
        for row in sw.rows:
            if row.target in rows:
                warnings.append(
                    f"target {row.target} appears twice (in {rows[row.target][0]} and {name}); "
                    f"kept {rows[row.target][0]}'s row"
                )
                continue
            rows[row.target] = (name, row)
            if row.target not in targets:
                targets.append(row.target)
    for t in targets:
        if t not in rows:
            warnings.append(f"target {t} is missing: no shard has its row")
    warnings += _differences(shards)
    first = shards[0][1] if shards else Sweep()
    merged_rows = [
        rows[t][1]
        if t in rows
        else SweepRow(target=t, slug=slug(t), reason="missing: no shard produced its row")
        for t in targets
    ]
    walls = [sw.wall_s for _, sw in shards if sw.wall_s is not None]
    return Sweep(
        tool=first.tool,
        torch=first.torch,
        options=first.options,
        expected_calls=first.expected_calls,
        targets=targets,
        rows=merged_rows,
        wall_s=max(walls) if walls else None,
        warnings=warnings,
    )


def _differences(shards: list[tuple[str, Sweep]]) -> list[str]:
    out = []

    def differ(what: str, value_of) -> None:
        values = {}
        for name, sw in shards:
            values.setdefault(json.dumps(value_of(sw), sort_keys=True, default=str), []).append(
                name
            )
        if len(values) > 1:
            out.append(
                f"shards differ in {what}: "
                + "; ".join(f"{v} ({', '.join(names)})" for v, names in values.items())
            )

    differ("torch version", lambda sw: sw.torch)
    differ("device", lambda sw: sorted({r.device for r in sw.rows if r.device}))
    differ("tcdoctor version", lambda sw: sw.tool.get("version"))
    keys = sorted({k for _, sw in shards for k in sw.options})
    for key in keys:
        differ(f"option {key}", lambda sw, key=key: sw.options.get(key))
    differ("expected calls", lambda sw: sw.expected_calls)
    differ("target list", lambda sw: sw.targets)
    return out


# ---------------------------------------------------------------------------- baseline


def _change(kind: str, text: str) -> dict:
    return {"kind": kind, "text": text}


def compare(new: SweepRow, old: SweepRow | None) -> list[dict]:
    """What changed for one target since the baseline (`METHOD_CHANGES` says how each is judged)."""
    if old is None:
        return [_change("new_target", "not in the baseline")]
    out = []
    if new.complete != old.complete:
        out.append(
            _change("fixed", f"complete now (was exit {old.exit_code}: {old.reason})")
            if new.complete
            else _change(
                "failed", f"exit {new.exit_code} now (was complete): {new.reason or new.status}"
            )
        )
    if new.graph_breaks is not None and old.graph_breaks is not None:
        nk, ok = new.break_keys, old.break_keys
        for f, line, reason in sorted(nk - ok, key=str):
            out.append(_change("new_break", f"new graph break at {f}:{line}: {reason}"))
        for f, line, reason in sorted(ok - nk, key=str):
            out.append(_change("fixed_break", f"graph break fixed at {f}:{line}: {reason}"))
    if (
        new.recompiles is not None
        and old.recompiles is not None
        and new.recompiles != old.recompiles
    ):
        out.append(_change("recompiles", f"recompiles {old.recompiles} → {new.recompiles}"))
    if new.speedup_ci and old.speedup_ci:
        if new.speedup_ci[0] > old.speedup_ci[1] or new.speedup_ci[1] < old.speedup_ci[0]:
            word = "faster" if new.speedup_ci[0] > old.speedup_ci[1] else "slower"
            out.append(
                _change(
                    f"speedup_{word}",
                    f"speedup {units.ratio(old.speedup, old.speedup_ci)} → "
                    f"{units.ratio(new.speedup, new.speedup_ci)} ({word}: the CIs do not overlap)",
                )
            )
    if new.slower_than_eager and not old.slower_than_eager:
        out.append(_change("newly_slower_than_eager", "now slower than eager (CI wholly below 1×)"))
    a, b = old.cold_compile_s, new.cold_compile_s
    rel, absolute = COMPILE_CHANGE
    if a is not None and b is not None and abs(b - a) > max(absolute, rel * a):
        out.append(_change("compile", f"cold compile {units.seconds(a)} → {units.seconds(b)}"))
    a_v, b_v = old.shown_verdict, new.shown_verdict
    if a_v and b_v and a_v != b_v:
        out.append(
            _change("verdict", f"verdict {units.decision_text(a_v)} → {units.decision_text(b_v)}")
        )
    return out


METHOD_CHANGES = (
    "Changes against the baseline sweep: graph breaks matched by file name, line and reason; "
    "recompile counts; a speedup change only where the two 95% CIs do not overlap; a cold compile "
    f"change beyond {COMPILE_CHANGE[0]:.0%} and {COMPILE_CHANGE[1]:g} s; the pass/fail status and the verdict."
)


def with_baseline(sweep: Sweep, baseline: Sweep, name: str) -> Sweep:
    """The sweep with each row's changes against `baseline` (and the targets it no longer has)."""
    old = {r.target: r for r in baseline.rows}
    for row in sweep.rows:
        row.changes = compare(row, old.get(row.target))
    sweep.baseline = name
    current = {r.target for r in sweep.rows}
    sweep.removed = [t for t in old if t not in current]
    return sweep


# ---------------------------------------------------------------------------- gate


def check(
    sweep: Sweep,
    min_pass_rate: float | None = None,
    no_new_slower_than_eager: bool = False,
) -> list[CheckResult]:
    """`tcdoctor check --sweep`: each threshold a `CheckResult` (as `check` judges one report), each
    target behind a failure one detail line.

    "Newly slower than eager" reads the rows' changes against the baseline; a sweep without a
    baseline counts every model slower than eager as new (and says so)."""
    out = []
    if min_pass_rate is not None:
        rate = sweep.pass_rate
        figure, limit = units.percent(rate), f"≥ {units.percent(min_pass_rate)}"
        out.append(
            CheckResult(
                "pass rate",
                figure,
                limit,
                rate is not None and rate >= min_pass_rate,
                f"{figure} of {len(sweep.rows)} target(s) ({limit} required)"
                + "".join(f"; {r.target}: {r.status}" for r in sweep.rows if not r.complete),
                details=tuple(
                    f"{r.target}: {r.status} (exit {r.exit_code}): {r.reason}"
                    for r in sweep.rows
                    if not r.complete
                ),
            )
        )
    if no_new_slower_than_eager:
        if sweep.baseline is None:
            slow = [r.target for r in sweep.rows if r.slower_than_eager]
            how = " (no baseline: every model slower than eager counts as new)"
        else:
            slow = [
                r.target
                for r in sweep.rows
                if any(
                    c["kind"] in ("newly_slower_than_eager", "new_target") for c in r.changes or []
                )
                and r.slower_than_eager
            ]
            how = f" (against {sweep.baseline})"
        out.append(
            CheckResult(
                "no model newly slower than eager",
                f"{len(slow)} model(s)",
                "none",
                not slow,
                (", ".join(slow) + " slower than eager" if slow else "none") + how,
                details=tuple(slow),
            )
        )
    return out
