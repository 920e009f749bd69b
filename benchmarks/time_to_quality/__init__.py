"""Time to quality (`benchmarks/quality.py`): sample quality against training seconds and G
updates, per form, over seeds. A library, one job a module:

* `tasks`: one record per task (its config, seeds, --quick sizes, cost, scoring).
* `plan`: the runs of a grid, their configs, which train the same, their estimated seconds.
* `grid`: one grid in its directory: its plan, its resume policy, training it, its files.
* `runs`: train one run (and the warm-up), and its record.
* `events`: a run's history from its TensorBoard events.
* `values`: finite numbers, and records made strict JSON.
* `environment`: the machine a grid trains on.
* `report`: thresholds, the time to them, the tables of results.md.
* `figure`: quality.png.
* `results`: the files: results.json read and written, results.md, quality.png, reference grids.

`benchmarks/quality.py` is the command line."""
