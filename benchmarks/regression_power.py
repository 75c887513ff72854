"""The power of `check TARGET --baseline B --max-slowdown 10` against the baseline's size,
simulated through the launcher's own process loop and the check's own comparison (issue 43 item 5):
tests/test_regression_check.py's `_trials` (canned processes, log-normal `spread` between processes
and 1% within; the new run's processes added by the loop up to its cap of 6 while the question is
open), for baselines of 3 to 6 processes.

Why the baseline's size bounds the power: the comparison is Welch's on the log speedups, and the
baseline's spread is estimated from its own processes. With 3 of them that estimate has 2 degrees
of freedom, and adding processes to the new run cannot add any: the Welch-Satterthwaite degrees of
freedom stay near 4 and the standard error near spread·√(1/n + 1/3), so the one-sided bound at the
loop's per-look level (98.1% at a cap of 6) stays about 2.9 standard errors from the estimate.

Usage: python benchmarks/regression_power.py [--trials 400]
"""

from __future__ import annotations

import argparse
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), os.path.join(os.path.dirname(HERE), "tests")]


def main() -> None:
    import pytest
    from test_regression_check import _trials

    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=400)
    a = ap.parse_args()
    rng = random.Random(43)
    print("spread  baseline  P(fail | -20%)  P(inconclusive | -20%)  processes  P(fail | -10%)")
    with pytest.MonkeyPatch.context() as mp:
        for spread in (0.02, 0.05, 0.10):
            for n_old in (3, 4, 5, 6):
                power, unsure, n = _trials(mp, 0.80, n_old, a.trials, rng, spread)
                alarms, _, _ = _trials(mp, 0.90, n_old, a.trials, rng, spread)
                print(
                    f"{spread:6.0%}  {n_old:8d}  {power:14.1%}  {unsure:22.1%}  {n:9.2f}  "
                    f"{alarms:14.1%}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
