"""The commands' shared parts: what `analyze`, `check`, `report`, `fix`, `diff` and `merge` (cli.py)
and `sweep` have in common, apart from the one analysis (run/pipeline.py) and the judging
(checks/).

- flags.py: every command's options as declarations, from the analysis options (options.py), the
  gate's table (checks/table.py `CHECKS`), the output flags of every command that writes reports
  (one per declared format, render/formats.py `FORMATS`), fix's, sweep's and `--expected-calls`;
- analyze.py: `analyze` (and the analysis `fix TARGET` runs); fix.py: `fix`; sweep.py: `sweep`;
- run.py: `check` itself (what is judged, what is refused, the questions handed to the analysis);
- report.py: `report` and `merge` (saved reports written again); diff.py: `diff`;
- outputs.py: where results go (a gate's terminal lines, JUnit, step summary and annotations; the
  report files of `analyze`, `report` and `merge`);
- saved.py: `load_saved`, the one way a saved report is read (`report`, `check --report`,
  `--baseline`, `fix`, `diff`, `merge`).
"""
