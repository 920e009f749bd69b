"""A grid's three files under its directory: results.json (the records, and what the report
needs to be redrawn), results.md (`report.markdown`) and quality.png (`figure.figure`)."""

import os

from benchmarks.time_to_quality.figure import figure
from benchmarks.time_to_quality.report import markdown, reference_records
from benchmarks.time_to_quality.runs import _json_safe
from tf_fusedprop.experiment import files


def write_results(out, records, environment_, grid, plot=True, seconds_per_update=None, references=()):
    """results.json, results.md and (with `plot`) quality.png of `records` (and the modelled
    times of `seconds_per_update`, and the rows of the `references` directories, both kept in
    results.json; the references' runs are reported, not stored)."""
    records = _json_safe(records)
    files.write_json(
        os.path.join(out, "results.json"),
        {
            "environment": environment_,
            "grid": grid,
            "seconds_per_update": seconds_per_update or {},
            "references": list(references),
            "runs": records,
        },
    )
    records = records + _json_safe([r for directory in references for r in reference_records(directory, records)])
    text = markdown(records, environment_, grid, seconds_per_update)

    def write(tmp_path):
        with open(tmp_path, "w") as f:
            f.write(text)

    files.atomic_write(os.path.join(out, "results.md"), write)
    if records and plot:
        figure(records, os.path.join(out, "quality.png"), seconds_per_update)
