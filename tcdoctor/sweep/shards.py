"""`tcdoctor sweep --shard K/N`: which targets are this shard's. Deterministic, so every shard
computes the same split from the same list (each records the whole list, so a merge can say which
target is missing)."""

from __future__ import annotations

import statistics


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
