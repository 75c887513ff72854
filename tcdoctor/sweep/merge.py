"""`tcdoctor sweep --merge DIR... --out DIR`: one overview from the shards' overviews, every
inconsistency between them (a target missing or twice, another torch, device or option) one line."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timezone

from ..errors import EXIT_INCOMPLETE, EXIT_OK, UsageError
from ..report.sweep import Sweep, SweepRow, slug
from ..run.pipeline import echo
from . import load_sweep, write_overview
from .compare import with_baseline


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


def merge_dirs(dirs: tuple[str, ...], out_dir: str, baseline: str | None = None) -> int:
    """`tcdoctor sweep --merge DIR... --out DIR`: one overview from the shards' overviews; each
    shard's report folders are copied into `out_dir` so its links work. Every inconsistency is one
    line on stderr (and in the overview's `warnings`); exit 0 only when every target of the whole
    list has a complete report."""
    if not dirs:
        raise UsageError("give the shard folders to merge: tcdoctor sweep --merge DIR... --out DIR")
    shards = [(d, load_sweep(d)) for d in dirs]
    merged = merge(shards)
    merged.created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    os.makedirs(out_dir, exist_ok=True)
    for d, shard in shards:
        if os.path.abspath(d) == os.path.abspath(out_dir):
            continue
        for row in shard.rows:
            src = os.path.join(d, row.slug)
            if row.slug and os.path.isdir(src):
                shutil.copytree(src, os.path.join(out_dir, row.slug), dirs_exist_ok=True)
    if baseline:
        merged = with_baseline(merged, load_sweep(baseline), baseline)
    for line in merged.warnings:
        echo(f"tcdoctor: merge: {line}", err=True)
    write_overview(merged, out_dir)
    return EXIT_OK if merged.complete else EXIT_INCOMPLETE
