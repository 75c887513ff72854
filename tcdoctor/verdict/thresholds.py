"""The verdict's thresholds, in one place: every rule reads them from RULES (tests drive them)."""

from __future__ import annotations

from ..report.processes.claims import EQUIVALENCE_MARGIN

RULES: dict[str, float] = {
    "min_speedup": 1.02,  # lower bound of the speedup's 95% CI must exceed this to count as faster
    # "no difference that matters": the decision interval within [1/margin, margin] (two one-sided
    # tests; declared once, in report/processes/claims.py, which report/ reads without verdict/)
    "equivalence_margin": EQUIVALENCE_MARGIN,
    "expected_calls": 100_000,  # default horizon for break-even (--expected-calls)
    "guard_overhead_fraction": 0.20,  # guard evaluation above this share of a compiled call is flagged
    "cold_warm_ratio": 3.0,  # cold compile this many times the warm one: advise keeping the cache
    "compile_seconds_warn": 60.0,  # first call slower than this gets compile-time advice
    "regional_auto_breaks": 3,  # this many graph breaks in the whole model: also try compiling its submodules
    # one compile's seconds differ this much between processes (the same RoPE compile took 19.8 s and
    # 28.1 s in two): a shape setting wins on compile + calls only by more than this share of the
    # larger compile time
    "compile_spread": 0.25,
    # a graph break's bounded gain differs this many times between analyses of the same code (an
    # LSTM's: 49.1 µs and 79.0 µs): it pays, or not, only when the whole range clears what the loss
    # per call needs
    "gain_bound_spread": 1.6,
    # the compiled call's peak above eager's by more than this share of eager's peak AND by more than
    # memory_growth_min_bytes: the report then splits the compiled peak by graph (probes/memory_graphs.py);
    # below either, one line and nothing profiled (a few allocations differ on every model)
    "memory_growth_fraction": 0.10,
    "memory_growth_min_bytes": 1024 * 1024,
}

HORIZONS = {
    "one epoch of 1,000 steps": 1_000,
    "one epoch of 10,000 steps": 10_000,
    "a server handling 1M requests": 1_000_000,
}
