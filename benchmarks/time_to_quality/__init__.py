"""Time to quality (`benchmarks/quality.py`): sample quality against training seconds and G
updates, per form, over seeds. `tasks` (one record per task), `plan` (runs and configs), `runs`
(train one, record it), `report` (thresholds, tables, results files) and `figure`
(quality.png); `benchmarks/quality.py` is the command line."""
