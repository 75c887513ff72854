"""The per-look confidence levels of report/processes/sequential.py's T_POCOCK table: Pocock's rule with
Student's t at every look, for looks at 3, 4, …, cap processes (caps 3..12), so that all the looks
together claim a side of a threshold the speedup sits on 5% of the time.

Why a table. With the spread known, Pocock's constant for these looks is computed exactly
(stats.pocock_constant, recursive numerical integration): cap 6 gives 97.8% per look. With the
spread estimated from the same few processes, Student's t at that nominal level errs more often
(5.8% at cap 6: small degrees of freedom, measured below), and the joint law of t statistics at
several looks has no short recursion. So the nominal level is found here, once, by simulation:
the per-look level is 1 − the ALPHA quantile of each run's smallest two-sided t p-value over its
looks (a run claims a side at a look where its p-value is at or below the nominal level).
Standard normal processes (the t statistics do not depend on the mean or the scale), 4,000,000
runs per cap with a fixed seed: the level's Monte Carlo error is about ±0.0002.

Usage: python benchmarks/pocock_t_levels.py   (needs numpy and scipy; prints the table)
"""

from __future__ import annotations

import numpy as np
from scipy import stats as st

ALPHA, MIN_LOOK, RUNS, CHUNK = 0.05, 3, 4_000_000, 500_000


def level(cap: int, rng: np.random.Generator) -> float:
    mins = []
    for _ in range(RUNS // CHUNK):
        x = rng.standard_normal((CHUNK, cap))
        csum, csq = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
        p = np.ones(CHUNK)
        for n in range(MIN_LOOK, cap + 1):
            m = csum[:, n - 1] / n
            var = (csq[:, n - 1] - n * m * m) / (n - 1)
            t = np.abs(m) * np.sqrt(n) / np.sqrt(var)
            p = np.minimum(p, 2 * st.t.sf(t, n - 1))
        mins.append(p)
    return 1.0 - float(np.quantile(np.concatenate(mins), ALPHA))


def main() -> None:
    rng = np.random.default_rng(43)
    for cap in range(MIN_LOOK, 13):
        print(f"    {cap}: {level(cap, rng):.4f},")


if __name__ == "__main__":
    main()
