"""The power of tests/test_fidelity_processes.py's agreement check, simulated with its own
function (stats.welch_log_ratio): two analyses of `--processes` processes each against three
fresh-process scripts, log-normal with a spread `sd` between processes (the same for both sides),
the analyses' processes biased by a factor; the check fails when either analysis's Welch 95%
interval of the ratio of typical speedups lies wholly outside [1/1.05, 1.05].

It leaves out the test's second check (the prediction interval holds each script, ±15%), which can
only add failures; the processes' count is the analysis's (3 to its cap, 6 by default).

Usage: python benchmarks/gross_bias_power.py [--trials 4000]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tcdoctor import stats  # noqa: E402

SCRIPTS, ANALYSES, BAND = 3, 2, 1.05


def fails(rng: random.Random, bias: float, sd: float, processes: int) -> bool:
    scripts = [math.exp(rng.gauss(0, sd)) for _ in range(SCRIPTS)]
    for _ in range(ANALYSES):
        own = [bias * math.exp(rng.gauss(0, sd)) for _ in range(processes)]
        _, _, lo, hi = stats.welch_log_ratio(own, scripts)
        if lo > BAND or hi < 1 / BAND:
            return True
    return False


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=4000)
    a = ap.parse_args()
    rng = random.Random(1)
    biases = (1.0, 1.10, 1.20)
    print("spread  processes  " + "  ".join(f"P(fail | bias {b:.2f})" for b in biases))
    for sd in (0.02, 0.05, 0.10):
        for processes in (3, 6):
            row = [
                sum(fails(rng, b, sd, processes) for _ in range(a.trials)) / a.trials
                for b in biases
            ]
            print(f"{sd:6.0%}  {processes:9d}  " + "  ".join(f"{p:20.0%}" for p in row))


if __name__ == "__main__":
    main()
