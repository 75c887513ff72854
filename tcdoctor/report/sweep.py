"""A sweep's overview: one row per target and a summary with the torch.compile dashboard's
definitions (the model; shards, merging and the comparison with an earlier sweep are the driver's,
in tcdoctor/sweep/). Torch-free, like all of report/.

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
sweep/merge.py names every difference (torch version, device, options) in one line each.

The sweep's checks (`check --sweep`: its pass rate, models newly slower than eager) are judged by
checks/sweep.py.

Changes against a baseline (sweep/compare.py, in each row's `changes`): graph breaks are matched
by (file name, line, reason), so a sweep run from another checkout path still matches; a speedup
change is reported only where the two 95% CIs do not overlap; a cold compile change only beyond
`COMPILE_CHANGE` (both relative and absolute, since a 0.2 s compile moves by 30% from noise alone).
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
from .encoding import Document
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
class Versions(Record):
    """What a result was produced with (a Ray sweep records the worker's and the driver's):
    Python, tcdoctor, torch (its package metadata) and the CUDA torch was built with (None: a CPU
    build)."""

    python: str | None = None
    tcdoctor: str | None = None
    torch: str | None = None
    cuda: str | None = None

    FIELDS = ("python", "tcdoctor", "torch", "cuda")


@dataclass
class Placement(Record):
    """Where a Ray sweep's target was analysed: the node (host name, IP, Ray's node id), the
    GPUs Ray gave the task (its CUDA_VISIBLE_DEVICES), the CPUs it held (the analysis's
    --threads), the worker's pid and the niceness the analysis ran at (sweep/node.py `run_at`)."""

    OMIT_NONE = ("nice",)

    node: str | None = None
    node_ip: str | None = None
    node_id: str | None = None
    gpus: list[str] = field(default_factory=list)
    cpus: float | None = None
    pid: int | None = None
    nice: int | None = None

    @property
    def text(self) -> str:
        """'host (127.0.0.1), GPU 0' as the overview's column writes it."""
        where = f"{self.node} ({self.node_ip})" if self.node_ip else str(self.node)
        return where + (f", GPU {','.join(self.gpus)}" if self.gpus else "")


@dataclass
class SweepRow(Record):
    """One target of a sweep: how its analysis ended and its headline figures, from its own report."""

    DERIVED = ("status", "memory_compression")
    OMIT_NONE = (
        "changes", "p99_s", "traffic_compiles", "ran_on", "versions", "ttft_p50_s", "itl_p99_s",
        "tokens_per_s", "generation_compiles", "tokens_equal", "tokens_compared",
        "timed_under_load",
    )  # fmt: skip

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
    p99_s: float | None = None  # the compiled p99 under the traffic replayed (serving section)
    traffic_compiles: int | None = None  # the compiles during that traffic
    # a tcdoctor.Generation's (report/sections/generation.py): the compiled side served from a
    # cold start (its compiles in the figures, as `check --max-ttft-ms` judges), tokens/s steady
    ttft_p50_s: float | None = None
    itl_p99_s: float | None = None
    tokens_per_s: float | None = None
    generation_compiles: int | None = None
    tokens_equal: int | None = None  # requests whose greedy tokens equal eager's, of
    tokens_compared: int | None = None
    ran_on: Placement | None = None  # a Ray sweep's: the node (and GPUs) that analysed it
    versions: Versions | None = None  # a Ray sweep's: what the worker analysed it with
    # its speedup was timed under sustained load (the report's `runtime.load.sustained`: other
    # programs, a sweep's other analyses on the node among them, took the cores its timing
    # needed), so it decides no side; None otherwise (absent from the JSON)
    timed_under_load: bool | None = None

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
class Sweep(Document):
    """A sweep's overview (DIR/sweep.json): its rows and, derived from them, the summary."""

    DERIVED = ("summary",)
    OMIT_NONE = ("shard", "baseline", "cluster", "driver", "driver_nice")

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
    cluster: str | None = None  # a Ray sweep's cluster: its address, or "local" (started for it)
    driver: Versions | None = None  # a Ray sweep's driver: what the workers' versions must equal
    driver_nice: int | None = None  # a Ray sweep's driver's niceness: what its analyses ran at

    @property
    def version_mismatches(self) -> list[str]:
        """One line per version a worker analysed with that is not the driver's (a sweep that
        mixes versions compares unlike things), naming the targets; none without a driver."""
        if self.driver is None:
            return []
        lines = []
        for name in Versions.FIELDS:
            want = getattr(self.driver, name)
            by_value: dict[str, list[str]] = {}
            for r in self.rows:
                got = getattr(r.versions, name) if r.versions else want
                if got != want:
                    by_value.setdefault(str(got), []).append(r.target)
            lines += [
                f"{name} {got} (the driver has {want}) analysed {', '.join(ts)}"
                for got, ts in by_value.items()
            ]
        return lines

    @property
    def niceness_notes(self) -> list[str]:
        """One line per niceness a target was analysed at above the driver's (Ray's workers run at
        15 unless the cluster is started with RAY_worker_niceness, and lowering it needs root):
        any busy process on that node preempted its timing."""
        if self.driver_nice is None:
            return []
        by_value: dict[int, list[str]] = {}
        for r in self.rows:
            nice = r.ran_on.nice if r.ran_on else None
            if nice is not None and nice > self.driver_nice:
                by_value.setdefault(nice, []).append(r.target)
        return [
            f"{', '.join(ts)} analysed at niceness {nice} (the driver runs at {self.driver_nice}): "
            "a busy process on the node preempted its timing; start the cluster's nodes with "
            "RAY_worker_niceness=0, or run the sweep as a user allowed to lower it"
            for nice, ts in sorted(by_value.items())
        ]

    @property
    def load_notes(self) -> list[str]:
        """One line naming the targets whose speedup was timed under sustained load
        (`SweepRow.timed_under_load`): it decides no side (a verdict resting on it can't tell), and
        in a sweep the load is often its own other analyses sharing a node with no core to spare
        (two one-CPU Ray nodes on a 2-core machine: every analysis timed beside another, so which
        verdicts decided depended on which targets ran together). A Generation's verdict rests on
        its own paired replay, not on this speedup."""
        loaded = [r.target for r in self.rows if r.timed_under_load]
        if not loaded:
            return []
        return [
            f"{units.count(len(loaded))} of {units.count(len(self.rows))} target(s) had their "
            f"speedup timed under load ({', '.join(loaded)}): other programs, this sweep's other "
            "analyses on the same node among them, took the cores the timing needed, so it "
            "decides no side (a verdict resting on it can't tell); analyse them again with fewer "
            "analyses per node (a node with a core to spare per analysis), or alone"
        ]

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


# ---------------------------------------------------------------------------- rows


def _reason(report: Report) -> str | None:
    if not report.errors:
        return None
    first = report.errors[0]
    more = f" (+{len(report.errors) - 1} more in the report)" if len(report.errors) > 1 else ""
    return f"{first.phase}: {first.message}{more}"


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
        p99_s=report.serving.p99_s if report.serving else None,
        traffic_compiles=report.serving.traffic_compiles if report.serving else None,
        **_generation(report),
        timed_under_load=True if rt.load is not None and rt.load.sustained else None,
    )
    row.verdict = row.shown_verdict  # a row says only what was measured
    return row


def _generation(report: Report) -> dict[str, Any]:
    """A Generation's overview figures (none for any other target: its row's JSON as it was)."""
    g = report.serving.generation if report.serving is not None else None
    if g is None:
        return {}
    c, t = g.compiled, g.tokens
    return {
        "ttft_p50_s": c.ttft_p50_s if c else None,
        "itl_p99_s": c.itl_p99_s if c else None,
        "tokens_per_s": g.steady.tokens_per_s if g.steady else None,
        "generation_compiles": g.traffic_compiles,
        "tokens_equal": t.equal if t else None,
        "tokens_compared": t.compared if t else None,
    }


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


# ---------------------------------------------------------------------------- baseline


METHOD_CHANGES = (
    "Changes against the baseline sweep: graph breaks matched by file name, line and reason; "
    "recompile counts; a speedup change only where the two 95% CIs do not overlap; a cold compile "
    f"change beyond {COMPILE_CHANGE[0]:.0%} and {COMPILE_CHANGE[1]:g} s; the pass/fail status and the verdict."
)
