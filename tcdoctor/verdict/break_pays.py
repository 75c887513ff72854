"""Whether fixing graph breaks pays: their gain against what compiled must lose to be faster, both
as shares of one compiled call.

Method. A break's bound (report/break_gain.py: the time outside graphs minus the eager aten work in
it) is kept as `gain_fraction`, a share g of the profiled compiled call; a fix tried in a fresh
process keeps the share it saved, 1 − speedup before / speedup after (verdict/tried.py). Compiled at
speedup s becomes s / (1 − g) once a share g of its call is gone, so it is faster than eager by
`min_speedup` m when g > 1 − s / m: over the speedup's decision interval (lo, hi) compiled must
lose a share in (1 − hi/m, 1 − lo/m) (`needed`, never below 0). The gain pays when its range's low
end (g over `gain_bound_spread`) is above the need's high end, does not when its high end is below
the need's low end, and cannot tell otherwise (`pays`). The seconds shown beside each share are
the finding's own (share × the timing phase's compiled median).

Why shares, not seconds. The share's numerator and denominator come from the same profiled calls,
so it holds when the host runs every call slower or faster; seconds do not. Measured here (one
`tcdoctor analyze` per line, aot_eager and Inductor, other programs loading the 2 cores, 2026-11-29):
samples/loop_break.py six analyses at compiled medians of 58–99 µs read a share of 0.667–0.689
and 39.4–68.1 µs; tests/targets/real/lstm_lm.py's profiled call took 1.04 ms and 0.47 ms in two,
its share 0.244 and 0.239. Before, the bound in seconds (×/÷1.6: the word-level LSTM's 49.1 and
79.0 µs in two analyses) was compared with a need in seconds taken at the speedup interval's
pessimistic end: figures of two moments, whose comparison moved loop_break between "compile after
fixes" and "don't compile" in analyses of one kind (issue 63's six-target sweeps).

Pitfall: the profiler slows eager ops more than compiled graphs, so the share leans high (a bound,
said as such); the spread is the share's run-to-run range, not that bias.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .. import units
from ..report.sections import GraphBreak
from ..thresholds import Rules
from .figures import Figures

Span = tuple[float, float]


@dataclass(frozen=True)
class Gain:
    """What fixing some breaks could gain per compiled call: its share (what is judged) and its
    seconds (what is shown; None where the timing phase's median is unknown)."""

    share: float
    seconds: float | None

    @classmethod
    def of(cls, findings: Sequence[GraphBreak]) -> Gain | None:
        """The findings' gains summed (shares of the same call, at most 1); None when any is
        unknown."""
        shares = [f.gain_fraction for f in findings]
        if not shares or any(s is None for s in shares):
            return None
        secs = [f.gain_s_per_call for f in findings]
        seconds = None if any(s is None for s in secs) else sum(secs)  # type: ignore[arg-type]
        return cls(min(1.0, sum(shares)), seconds)  # type: ignore[arg-type]

    def span(self, rules: Rules) -> Span:
        """The share's run-to-run range: within the rules' gain_bound_spread either way, at most 1."""
        spread = rules.gain_bound_spread
        return self.share / spread, min(1.0, self.share * spread)

    def text(self) -> str:
        """'40.0 µs per call, 68% of a compiled call' (the share alone where seconds are unknown)."""
        share = f"{units.percent(self.share)} of a compiled call"
        return share if self.seconds is None else f"{units.seconds(self.seconds)} per call, {share}"

    def span_text(self, rules: Rules) -> str:
        return units.percent_span(self.span(rules))


def needed(fig: Figures, rules: Rules) -> Span | None:
    """(low, high) share of a compiled call compiled must lose to be faster than eager by
    min_speedup, over the speedup's decision interval; None where the interval is unknown."""
    if fig.ci_low is None or fig.ci_high is None or fig.ci_low <= 0:
        return None
    m = rules.min_speedup
    return max(0.0, 1.0 - fig.ci_high / m), max(0.0, 1.0 - fig.ci_low / m)


def pays(gain: Gain | None, need: Span | None, rules: Rules) -> bool | None:
    """True when the gain's range lies above everything the loss may need, False when below it,
    None when they overlap (inside the noise) or either is unknown."""
    if gain is None or need is None:
        return None
    lo, hi = gain.span(rules)
    return True if lo > need[1] else False if hi < need[0] else None
