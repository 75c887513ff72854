"""The commands' shared parts: what `analyze`, `check`, `report`, `fix`, `diff` and `merge` (cli.py)
and `sweep` have in common, apart from the one analysis (run/pipeline.py) and the judging
(checks/).

- flags.py: the click options of `analyze` and `check` as declarations, from the analysis options
  (options.py) and the gate's table (checks/table.py `CHECKS`);
- run.py: `check` itself (what is judged, what is refused, the questions handed to the analysis);
- outputs.py: where results go (a gate's terminal lines, JUnit, step summary and annotations; the
  report files of `analyze`, `report` and `merge`);
- saved.py: `load_saved`, the one way a saved report is read (`report`, `check --report`,
  `--baseline`, `fix`, `diff`, `merge`).
"""
