"""The headline speedup across processes: each analysis process's paired timing joined into one
decision, and into a range of what another run of the same script may see. Four modules, each
its part of the method (their docstrings give it and its pitfalls):

- rows.py: the typed records (ProcessRow, Regime, ModeRow, Sequence, Load), the JSON unchanged;
- regimes.py: each process's row, the disturbed ones excluded, an analysis process timed unlike
  the timing-only ones kept out, the allocator regimes told apart, the load, two modes within a
  regime, each regime's interval from its own processes;
- claims.py: the headline's figures joined (`combine`), what its decision interval claims (the
  `Claim` enum: faster, slower, the same within the equivalence margin, below the bar,
  undecided), and --max-slowdown's Welch comparison of two runs' processes;
- sequential.py: how many processes time it (looks at Pocock's level, the futility stop, the
  cap), the timing-only processes' names and why each runs.

Imports point sequential -> claims -> regimes -> rows. Torch-free: assembled in the parent, re-read by
`tcdoctor report`.
"""
