"""`tcdoctor sweep`: many targets analysed one after another (sweep/), on this machine or as Ray
tasks (`--ray`: sweep/remote.py), or the folders of shards joined (`--merge`). What a combination
cannot honour is one line and exit 2 before anything runs: a Ray option without --ray, --merge
with --ray."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import UsageError
from ..options import Options
from .flags import analysis_flags, typed


def run_sweep_command(
    targets: tuple[str, ...],
    out_dir: str,
    retry_failed: bool,
    shard: str | None,
    durations: str | None,
    baseline: str | None,
    merge: bool,
    ray: str | None,
    ray_cpus: int | None,
    ray_gpus: int,
    quiet: bool,
    expected_calls: int | None,
    **analysis: Any,
) -> int:
    """The sweep, the Ray sweep or the merge; the exit code (0 every target complete, 4 not)."""
    from ..sweep import SweepRun, run_sweep
    from ..sweep.merge import merge_dirs

    on_ray = typed(["ray_cpus", "ray_gpus"])
    if on_ray and ray is None:
        raise UsageError(f"{analysis_flags(on_ray)} place targets on a Ray cluster: add --ray")
    if merge:
        if ray is not None:
            raise UsageError("--merge joins finished sweeps: leave out --ray")
        return merge_dirs(targets, out_dir, baseline)
    common = dict(
        quiet=quiet, retry_failed=retry_failed, shard=shard, durations=durations, baseline=baseline
    )
    opts = Options.from_cli(analysis)
    if ray is not None:
        from ..sweep.remote import RaySpec, run_on_ray

        spec = RaySpec.of(ray, targets, ray_cpus, ray_gpus, opts.threads)
        opts = dataclasses.replace(opts, threads=spec.cpus)  # the CPUs its task holds
        return run_on_ray(spec, SweepRun.of(spec.targets, opts, expected_calls, out_dir, **common))
    return run_sweep(SweepRun.of(targets, opts, expected_calls, out_dir, **common))
