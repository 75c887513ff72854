"""`tcdoctor sweep`: analyse many targets one after another, as `analyze` does each, with an overview.

Method. The targets (`path.py:function`, globs such as `models/*.py:build`, `@list.txt` with one per
line) are expanded in the order given (a glob's matches sorted), duplicates dropped. Each target is
analysed by the pipeline `analyze` runs (run/pipeline.py: its own child processes, its own time
limit; the same report files, written by render/write.py, here under `DIR/<target-slug>/`), one at
a time, so no two analyses share the machine. A target that fails (bad target, `build()` raised,
timeout, crash) is a row with `analyze`'s exit code and its one-line reason; the sweep goes on.

Resume. When a target ends, its row and the key it was measured under (tcdoctor version, torch
version, the analysis options, `--expected-calls`, the target file's SHA-256) are written to
`DIR/<slug>/row.json` through a temporary file and a rename, so a `kill -9` loses only the target in
flight. A rerun skips every target whose record has the same key: a complete report, or a failure
recorded with its reason (`--retry-failed` runs failures again). The overview (`sweep.json`,
`sweep.html`, `sweep.md`) is rebuilt from the records at the end of every run.

Shards. `--shard K/N` keeps the K-th of N disjoint shares of the expanded list (round robin, or
balanced by `--durations OLD/sweep.json`: sweep/shards.py); every shard records the whole list, so
`--merge` (sweep/merge.py) can say which target is missing; `--baseline` adds each row's changes
(sweep/compare.py). The overview's model and its summary figures are report/sweep.py's. The parent
never imports torch: the installed torch's version is read from its package metadata.

Exit codes: 0 every target produced a complete report; 4 the overview was written but at least one
target did not (its row says why and which exit code `analyze` gave); 2 a usage error (no target, a
bad --shard, an unreadable list or baseline).
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import importlib.metadata
import os
import sys
import time
from datetime import datetime, timezone
from typing import Any

from .. import units
from ..checks.outcome import CheckResult
from ..checks.table import sweep_checks
from ..errors import (
    EXIT_INCOMPLETE,
    EXIT_INTERNAL,
    EXIT_OK,
    ReportError,
    TcdoctorError,
    UsageError,
)
from ..options import Options
from ..render.formats import Outputs
from ..render.write import WARMUP_NAME, write_formats, write_report, write_text
from ..report import sweep as sw
from ..report.model import Report
from ..run.pipeline import analyze, echo
from ..version import __version__
from .compare import with_baseline
from .shards import parse_shard, shard_targets


def _torch_version() -> str | None:
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


# ---------------------------------------------------------------------------- targets


def _cwds() -> list[str]:
    """The current folder as the shell shows it ($PWD, through symlinks) and as the system
    resolves it: an absolute path typed under either is under the folder the sweep runs in."""
    here = os.getcwd()
    logical = os.environ.get("PWD")
    try:
        same = bool(logical) and os.path.samefile(logical, here)
    except OSError:
        same = False
    return [logical, here] if same and logical != here else [here]


def _normal(path: str) -> str:
    """A target's path as the sweep names it: a relative path as typed (`./` dropped), an absolute
    one relative to the folder the sweep runs in when under it (a symlinked folder included, so
    `$PWD/models/m.py` is `models/m.py`), else as typed; so shards run from the same checkout on
    different machines name targets alike."""
    if not os.path.isabs(path):
        return os.path.normpath(path)
    for base in _cwds():
        rel = os.path.relpath(path, base)
        if rel != os.pardir and not rel.startswith(os.pardir + os.sep):
            return rel
    return path


def _same_file(a: str, b: str) -> bool:
    """Two names of one target (`models/m.py:build` and `../here/models/m.py:build`)."""
    (pa, _, fa), (pb, _, fb) = a.rpartition(":"), b.rpartition(":")
    return fa == fb and os.path.realpath(pa) == os.path.realpath(pb)


def _expand_one(item: str) -> list[str]:
    path, sep, func = item.rpartition(":")
    if not sep or not path or not func:
        return [item]  # not path:function: analyze's own check says so in the row
    if glob.has_magic(path):
        matches = sorted(glob.glob(path, recursive=True))
        return [f"{_normal(m)}:{func}" for m in matches if os.path.isfile(m)] or [item]
    return [f"{_normal(path)}:{func}"]


def expand(items: tuple[str, ...] | list[str]) -> list[str]:
    """Targets, globs and @lists into the sweep's list (order kept, duplicates dropped: one file
    named twice keeps its first name). A glob that matches nothing stays as given, so its row says
    'file not found'."""
    out: list[str] = []
    for item in items:
        if item.startswith("@"):
            try:
                with open(item[1:], encoding="utf-8") as fh:
                    lines = [ln.strip() for ln in fh]
            except OSError as exc:
                raise UsageError(f"cannot read target list {item[1:]}: {exc.strerror}") from None
            found = expand([ln for ln in lines if ln and not ln.startswith("#")])
        else:
            found = _expand_one(item)
        out += [t for t in found if not any(t == o or _same_file(t, o) for o in out)]
    return out


# ---------------------------------------------------------------------------- records


def _source_sha(target: str) -> str | None:
    path = target.rpartition(":")[0]
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def record_key(target: str, options: Options, expected_calls: int | None) -> dict[str, Any]:
    """What a stored result must have been measured under to be reused."""
    return {
        "tcdoctor": __version__,
        "torch": _torch_version(),
        "options": options.to_dict(),
        "expected_calls": expected_calls,
        "source_sha256": _source_sha(target),
    }


def _read_record(folder: str) -> dict | None:
    import json

    try:
        with open(os.path.join(folder, sw.RECORD_NAME), encoding="utf-8") as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) and "row" in data and "key" in data else None
    except (OSError, ValueError):
        return None


def _write_record(folder: str, key: dict, row: sw.SweepRow) -> None:
    from ..report.encoding import dumps

    record = dumps({"key": key, "row": row.to_dict()}, indent=2)
    write_text(os.path.join(folder, sw.RECORD_NAME), record, "the sweep record")


def reusable(record: dict | None, key: dict, retry_failed: bool) -> sw.SweepRow | None:
    """The stored row when it was measured under `key` (a failure only without --retry-failed)."""
    if record is None or record.get("key") != key:
        return None
    row = sw.SweepRow.from_dict(record["row"])
    return None if retry_failed and not row.complete else row


# ---------------------------------------------------------------------------- one target


def _own_folders(options: Options, folder: str) -> Options:
    """The options with each target's own subfolder for the traces it writes (--trace,
    --torch-trace), so one target's files never overwrite another's."""
    return dataclasses.replace(
        options,
        trace_dir=os.path.join(options.trace_dir, folder) if options.trace_dir else None,
        torch_trace=os.path.join(options.torch_trace, folder) if options.torch_trace else None,
    )


def target_outputs(folder: str) -> Outputs:
    """A target's files in its folder: report.KEY in every format, the warm-up script beside."""
    return Outputs.in_folder(folder, "report", beside=("warmup",))


def target_files(folder: str) -> list[str]:
    """Every file a target's analysis may write into its folder."""
    outputs = target_outputs(folder)
    return [*outputs.paths.values(), outputs.beside_path(WARMUP_NAME)]


def _run_one(
    target: str,
    folder: str,
    out_dir: str,
    options: Options,
    expected_calls: int | None,
    quiet: bool = True,
    named_in: str | None = None,
    environment: dict[str, Any] | None = None,
) -> sw.SweepRow:
    """Analyse one target as `analyze` does and read its row back from the saved JSON report;
    `quiet=False` shows analyze's own progress (on a terminal: one line rewritten in place). The
    serving section's warm-up script, when the report has one, is written beside the reports;
    `named_in`: the folder the report names it in (where a Ray driver will put the files);
    `environment`: keys added to the report's environment (a Ray sweep's node)."""
    started = time.monotonic()
    os.makedirs(os.path.join(out_dir, folder), exist_ok=True)
    outputs = dataclasses.replace(target_outputs(os.path.join(out_dir, folder)), named_in=named_in)
    for stale in target_files(os.path.join(out_dir, folder)):  # not standing in for this run's
        if os.path.exists(stale):
            os.remove(stale)
    try:
        report, code = analyze(
            target, _own_folders(options, folder), expected_calls=expected_calls, progress=not quiet
        )
        report.environment.update(environment or {})
        write_report(report, outputs)
        saved = Report.load(outputs.paths["json"])
    except TcdoctorError as exc:
        return sw.failed_row(target, exc.exit_code, exc.message, time.monotonic() - started)
    except Exception as exc:  # noqa: BLE001 - a tcdoctor bug on one target is that row, not the end
        reason = f"internal error: {type(exc).__name__}: {exc}"
        return sw.failed_row(target, EXIT_INTERNAL, reason, time.monotonic() - started)
    return sw.row_from_report(target, saved, code, time.monotonic() - started, folder)


def _headline(row: sw.SweepRow) -> str:
    if row.complete or row.status == "incomplete":
        verdict = units.decision_text(row.shown_verdict) if row.shown_verdict else "no verdict"
        text = f"{verdict}, {units.ratio(row.speedup)}"
        return text if row.complete else f"{text}; incomplete (exit {row.exit_code})"
    return f"failed (exit {row.exit_code}): {row.reason}"


# ---------------------------------------------------------------------------- the sweep


@dataclasses.dataclass
class Plan:
    """What one run of a sweep covers: the whole list (`targets`), this shard's share (`mine`),
    each target's report folder, and the baseline sweep (or None)."""

    targets: list[str]
    mine: list[str]
    folders: dict[str, str]
    shard: str | None = None
    base: sw.Sweep | None = None
    baseline: str | None = None


def plan_sweep(
    items: tuple[str, ...],
    shard: str | None = None,
    durations: str | None = None,
    baseline: str | None = None,
) -> Plan:
    """The targets expanded, this shard's share, their folders; a UsageError (one line) for no
    target, a bad --shard, --durations without --shard, or two targets sharing a folder."""
    if not items:
        raise UsageError("give at least one target (path.py:function, a glob, or @list.txt)")
    if durations and not shard:
        raise UsageError("--durations balances shards: give it with --shard K/N")
    targets = expand(items)
    mine = targets
    if shard:
        try:
            k, n = parse_shard(shard)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        old = load_sweep(durations) if durations else None
        times = {r.target: r.duration_s for r in old.rows} if old else None
        mine = shard_targets(targets, k, n, times)
    base = load_sweep(baseline) if baseline else None
    folders = {t: sw.slug(t) for t in mine}
    if len(set(folders.values())) < len(folders):
        raise UsageError("two targets map to the same report folder; rename one of the files")
    return Plan(targets, mine, folders, shard, base, baseline)


@dataclasses.dataclass(frozen=True)
class SweepRun:
    """One run of a sweep: its plan and what every target is analysed and recorded under, declared
    once for the local runner (`run_sweep`) and the Ray one (sweep/remote.py `run_on_ray`): the
    record key, the reuse of a finished target, the record, the progress line and the overview."""

    plan: Plan
    options: Options
    expected_calls: int | None
    out_dir: str
    quiet: bool = False
    retry_failed: bool = False
    began: float = dataclasses.field(default_factory=time.monotonic)

    @classmethod
    def of(
        cls,
        items: tuple[str, ...],
        options: Options,
        expected_calls: int | None,
        out_dir: str,
        *,
        quiet: bool = False,
        retry_failed: bool = False,
        shard: str | None = None,
        durations: str | None = None,
        baseline: str | None = None,
    ) -> SweepRun:
        """The plan (one line for a bad list, shard or baseline) and the results folder made."""
        plan = plan_sweep(items, shard, durations, baseline)
        os.makedirs(out_dir, exist_ok=True)
        return cls(plan, options, expected_calls, out_dir, quiet, retry_failed)

    def folder(self, target: str) -> str:
        return os.path.join(self.out_dir, self.plan.folders[target])

    def key(self, target: str) -> dict[str, Any]:
        return record_key(target, self.options, self.expected_calls)

    def done_before(self, target: str) -> sw.SweepRow | None:
        """The target's recorded row when it was measured under this run's key (a failure only
        without --retry-failed), said on the progress line."""
        row = reusable(_read_record(self.folder(target)), self.key(target), self.retry_failed)
        if row is not None and not self.quiet:
            echo(f"{self.prefix(target)}done before: {_headline(row)}", err=True)
        return row

    def record(self, target: str, row: sw.SweepRow) -> None:
        """The row and its key in the target's folder (a failed target may have written none)."""
        os.makedirs(self.folder(target), exist_ok=True)
        _write_record(self.folder(target), self.key(target), row)

    def prefix(self, target: str) -> str:
        """The start of the target's progress line: 'sweep 2/6: m.py:build … '."""
        return f"sweep {self.plan.mine.index(target) + 1}/{len(self.plan.mine)}: {target} … "

    def overview(self, rows: list[sw.SweepRow], **extra: Any) -> sw.Sweep:
        """The overview of the rows finished so far (in the list's order), with the baseline's
        changes; `extra`: further Sweep fields (a Ray sweep's `cluster` and `warnings`)."""
        plan = self.plan
        order = {t: i for i, t in enumerate(plan.mine)}
        overview = sw.Sweep(
            tool={"name": "tcdoctor", "version": __version__},
            torch=_torch_version(),
            options=self.options.to_dict(),
            expected_calls=self.expected_calls,
            shard=plan.shard,
            targets=plan.targets,
            rows=sorted(rows, key=lambda r: order.get(r.target, len(order))),
            created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            wall_s=time.monotonic() - self.began,
            **extra,
        )
        if plan.base is not None:
            overview = with_baseline(overview, plan.base, plan.baseline)
        return overview

    def finish(self, rows: list[sw.SweepRow], **extra: Any) -> int:
        """The overview written (files and terminal table); the sweep's exit code."""
        overview = self.overview(rows, **extra)
        write_overview(overview, self.out_dir)
        return EXIT_OK if overview.complete else EXIT_INCOMPLETE


def run_sweep(run: SweepRun) -> int:
    """Analyse every target of this shard (skipping those already done), write the overview, and
    return the sweep's exit code."""
    return run.finish([_sweep_one(run, target) for target in run.plan.mine])


def _sweep_one(run: SweepRun, target: str) -> sw.SweepRow:
    row = run.done_before(target)
    if row is not None:
        return row
    live = not run.quiet and sys.stderr.isatty()  # analyze's one live line, then the sweep's line
    if not run.quiet and not live:
        echo(run.prefix(target), err=True, nl=False)
    row = _run_one(
        target, run.plan.folders[target], run.out_dir, run.options, run.expected_calls,
        quiet=not live,
    )  # fmt: skip
    if live:
        echo(run.prefix(target), err=True, nl=False)
    run.record(target, row)
    if not run.quiet:
        echo(f"{_headline(row)}  [{units.seconds(row.duration_s)}]", err=True)
    return row


def load_sweep(path: str) -> sw.Sweep:
    """A sweep overview from its file or its folder; one line when it cannot be read."""
    if os.path.isdir(path):
        path = os.path.join(path, "sweep.json")
    try:
        return sw.Sweep.load(path)
    except ReportError as exc:
        raise UsageError(exc.message) from None


def save_overview(overview: sw.Sweep, out_dir: str) -> list[tuple[str, str]]:
    """sweep.json, sweep.html and sweep.md in `out_dir` (render/write.py), each written atomically
    (a Ray sweep rewrites them as each target ends: a sweep in progress has the rows so far)."""
    outputs = Outputs.in_folder(out_dir, "sweep")
    return write_formats(overview, outputs, "overview", "the sweep overview")


def write_overview(overview: sw.Sweep, out_dir: str) -> None:
    """The overview's files (`save_overview`); the terminal table on stdout."""
    from ..render.terminal import TerminalRenderer

    written = save_overview(overview, out_dir)
    echo(TerminalRenderer().render_sweep(overview))
    for label, p in written:
        echo(f"{label}: {p}")


# ---------------------------------------------------------------------------- check


def check_sweep_dir(
    sweep_dir: str,
    sweep_baseline: str | None,
    min_pass_rate: float | None,
    no_new_slower_than_eager: bool,
) -> tuple[sw.Sweep, list[CheckResult]]:
    """`tcdoctor check --sweep DIR`: the overview (with its changes against `sweep_baseline`) and
    one `CheckResult` per threshold; cli.py writes them as `check` writes a report's checks."""
    overview = load_sweep(sweep_dir)
    if sweep_baseline:
        overview = with_baseline(overview, load_sweep(sweep_baseline), sweep_baseline)
    results = sweep_checks(
        overview,
        min_pass_rate=min_pass_rate,
        no_new_slower_than_eager=no_new_slower_than_eager,
    )
    if not results:
        raise UsageError("no sweep thresholds given (--min-pass-rate, --no-new-slower-than-eager)")
    return overview, results
