"""How much a by-hand measurement moves between fresh processes with glibc's default (dynamic) malloc
thresholds vs pinned ones: the heap-state page faults behind issue 13's conv-net spread.

Runs real_overhead.py's by-hand script (cold compile, then 5 s of interleaved eager/compiled calls)
N times each way, alternating which goes first, and prints each speedup and both medians.

Usage: [PYTHONPATH=benchmarks/shim] python benchmarks/malloc_spread.py TARGET [N]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from real_overhead import BY_HAND, ROOT  # noqa: E402

from tcdoctor.experiments.fixes import MALLOC_PINNED as PINNED  # noqa: E402 - the fix tcdoctor tries


def one(target: str, pinned: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=tmp, HF_HUB_OFFLINE="1")
        for k in PINNED:
            env.pop(k, None)
        env.update(PINNED if pinned else {})
        p = subprocess.run(
            [sys.executable, "-c", BY_HAND, target, "5", "cold", ROOT],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    target, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
    for i in range(n):
        for pinned in (False, True) if i % 2 == 0 else (True, False):
            r = one(target, pinned)
            print(
                f"{'pinned ' if pinned else 'default'} speedup {r['speedup']:.3f} "
                f"eager {r['eager_median_s'] * 1e3:.2f} ms compiled {r['compiled_median_s'] * 1e3:.2f} ms",
                flush=True,
            )


if __name__ == "__main__":
    main()
