"""`tcdoctor sweep TARGETS --ray [ADDRESS]`: each target one Ray task, the results and the overview
on the driver as a local sweep writes them.

Method. The list, the shard, the folders and the resume are the local sweep's (sweep/__init__.py
`SweepRun`: the plan, the record key, `done_before`): a target whose `row.json` has the same key is not
submitted. Every other target is one task (sweep/node.py `run_target`) holding `--ray-cpus` CPUs
(the analysis's `--threads`) and `--ray-gpus` whole GPUs, retried by Ray `MAX_RETRIES` times when
its worker or node dies (a failure of the analysis itself is its row, not retried: it would fail
again). As each task ends, its files (JSON, HTML, Markdown reports, the warm-up script) are written
into `DIR/<target>/` on the driver, its row (with where it ran and the versions it ran with) is
recorded in `row.json` as the local sweep records it, and the overview's files are rewritten; the
whole overview and the terminal table come at the end. A task that failed on every try is a row
with Ray's reason. Before anything is submitted, `cluster.fits` checks that some node can hold
one target (a GPU the cluster lacks is one line, never a wait).

Pitfalls. The driver's versions are the record key's (a rerun skips what this driver recorded); a
worker's that differ are named in the overview's notes (`Sweep.version_mismatches`). A target's
`--timeout` stops a hanging analysis on its worker, as on one machine; Ray never times a task
out. `--trace` and `--torch-trace` folders are written on the worker's node.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any

from .. import units
from ..errors import EXIT_INCOMPLETE, UsageError
from ..report import sweep as sw
from ..run.pipeline import echo
from . import SweepRun, _headline, save_overview, target_files
from .cluster import LOCAL, Cluster, fits, import_ray, niceness
from .node import THREADS_UNSET, run_target, versions

MAX_RETRIES = 2  # a task whose worker dies is tried up to 3 times in all
# what --ray's value is when it is an address; anything else is the first target (`--ray a.py:f`)
ADDRESS = re.compile(r"^(auto|local|ray://\S+|[^\s:/]+:\d+)$")


@dataclasses.dataclass(frozen=True)
class RaySpec:
    """Where and how the targets run: the cluster's address (`local`: started for the sweep),
    the targets, the CPUs (the analysis's --threads) and whole GPUs each task holds."""

    address: str
    targets: tuple[str, ...]
    cpus: int = 1
    gpus: int = 0

    @classmethod
    def of(
        cls, ray: str, targets: tuple[str, ...], cpus: int | None, gpus: int, threads: int | None
    ) -> RaySpec:
        """From the command line: `--ray` followed by a target (no ADDRESS) is a local cluster;
        --threads and --ray-cpus are one figure, so two that differ are refused."""
        if not ADDRESS.match(ray):
            ray, targets = LOCAL, (ray, *targets)
        if cpus is not None and threads is not None and cpus != threads:
            raise UsageError(
                f"--threads {threads} and --ray-cpus {cpus} differ: on Ray an analysis times on "
                "the CPUs its task holds; give one of them"
            )
        return cls(ray, targets, cpus or threads or 1, gpus)


def _task_spec(target: str, run: SweepRun, spec: RaySpec) -> dict[str, Any]:
    """What the task is given (JSON-ready: it reaches the analysis process as a file)."""
    return {
        "target": target,
        "folder": run.plan.folders[target],
        "cwd": os.getcwd(),
        "options": run.options.to_dict(),
        "expected_calls": run.expected_calls,
        "cpus": spec.cpus,
        "driver_out": os.path.abspath(run.out_dir),
        "nice": niceness(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", THREADS_UNSET),
    }


def _write_files(folder: str, files: dict[str, bytes]) -> None:
    """The task's files into the target's folder, each atomically; an earlier run's report files
    that this run did not write are removed (they must not stand in for this run's)."""
    os.makedirs(folder, exist_ok=True)
    for path in target_files(folder):
        if os.path.basename(path) not in files and os.path.exists(path):
            os.remove(path)
    for name, data in files.items():
        path = os.path.join(folder, os.path.basename(name))
        tmp = f"{path}.part"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)


def _row_of(ray: Any, ref: Any, target: str, folder: str) -> sw.SweepRow:
    """The finished task's row, its files written; a task that failed on every try is a row
    with Ray's one line."""
    try:
        result = ray.get(ref)
    except ray.exceptions.RayError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        reason = (
            f"the Ray task failed on every try ({MAX_RETRIES + 1}): {type(exc).__name__}: {first}"
        )
        return sw.failed_row(target, EXIT_INCOMPLETE, reason, None)
    _write_files(folder, result["files"])
    row = sw.SweepRow.from_dict(result["row"])
    row.ran_on = sw.Placement.from_dict(result["placement"])
    row.versions = sw.Versions.from_dict(result["versions"])
    return row


def run_on_ray(spec: RaySpec, run: SweepRun) -> int:
    """The sweep on a Ray cluster; its exit code is the local sweep's."""
    rows: dict[str, sw.SweepRow] = {}
    todo = []
    for target in run.plan.mine:
        row = run.done_before(target)
        if row is None:
            todo.append(target)
        else:
            rows[target] = row
    extra = {"driver": sw.Versions.from_dict(versions()), "driver_nice": niceness()}
    with Cluster(spec.address) as cluster:
        extra["cluster"] = "local" if spec.address == LOCAL else spec.address
        if not run.quiet and cluster.started_s is not None:
            echo(
                f"ray: local cluster on {cluster.address}, started in {cluster.started_s:.1f} s",
                err=True,
            )
        if todo:
            fits(spec.cpus, spec.gpus)
        _run_tasks(run, spec, todo, rows, extra)
    return run.finish(list(rows.values()), **extra)


def _run_tasks(
    run: SweepRun,
    spec: RaySpec,
    todo: list[str],
    rows: dict[str, sw.SweepRow],
    extra: dict[str, Any],
) -> None:
    """Submit every target of `todo`; as each ends: its files, its record, the overview."""
    ray = import_ray()
    task = ray.remote(run_target).options(
        num_cpus=spec.cpus, num_gpus=spec.gpus, max_retries=MAX_RETRIES, retry_exceptions=False
    )
    pending = {task.remote(_task_spec(t, run, spec)): t for t in todo}
    while pending:
        (ref,), _ = ray.wait(list(pending), num_returns=1)
        target = pending.pop(ref)
        row = _row_of(ray, ref, target, run.folder(target))
        run.record(target, row)
        rows[target] = row
        save_overview(run.overview(list(rows.values()), **extra), run.out_dir)
        if not run.quiet:
            where = f" on {row.ran_on.text}" if row.ran_on else ""
            echo(
                f"{run.prefix(target)}{_headline(row)}{where}  [{units.seconds(row.duration_s)}]",
                err=True,
            )
