"""A grid's files under its directory: results.json (the records, and what the report needs to
be redrawn) read and written, results.md (`report.markdown`) and quality.png (`figure.figure`);
and the finished runs of other grids' results.json reported beside a grid's own."""

import os

from benchmarks.time_to_quality.figure import figure
from benchmarks.time_to_quality.report import markdown
from benchmarks.time_to_quality.values import json_safe
from tf_fusedprop.experiment import files
from tf_fusedprop.experiment.config import ConfigError


def read_results(out):
    """The results.json of the grid in `out` as stored, or `{"runs": []}` where there is none."""
    path = os.path.join(out, "results.json")
    return files.read_json(path) if os.path.exists(path) else {"runs": []}


def write_results(out, records, environment_, grid, plot=True, seconds_per_update=None, references=()):
    """results.json, results.md and (with `plot`) quality.png of `records` (and the modelled
    times of `seconds_per_update`, and the rows of the `references` directories, both kept in
    results.json; the references' runs are reported, not stored)."""
    records = json_safe(records)
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
    records = records + json_safe([r for directory in references for r in reference_records(directory, records)])
    text = markdown(records, environment_, grid, seconds_per_update)

    def write(tmp_path):
        with open(tmp_path, "w") as f:
            f.write(text)

    files.atomic_write(os.path.join(out, "results.md"), write)
    if records and plot:
        figure(records, os.path.join(out, "quality.png"), seconds_per_update)


def reference_path(directory):
    """The results.json of the reference grid `directory` (`--reference`).

    Raises:
      ConfigError: `directory` holds no results.json.
    """
    path = os.path.join(directory, "results.json")
    if not os.path.exists(path):
        raise ConfigError(f"--reference={directory} holds no results.json.")
    return path


def reference_records(directory, own):
    """The finished runs of another grid (`directory`'s results.json) on the tasks, losses and
    seeds of the records `own`, each cut at the G updates of `own`'s schedule on its task where
    its own is longer: rows to compare with that are not trained again (e.g. the pure forms of a
    tracked 12,000-update grid beside a 4,000-update screen of schedules). Marked `reference`.
    A row and seed that `own` trained itself is not taken from `directory`.

    Raises:
      ConfigError: `directory` holds no results.json.
    """
    path = reference_path(directory)
    wanted = {(r["task"], r["loss"], r["seed"]) for r in own}
    trained_here = {(r["task"], r["loss"], r["row"], r["seed"]) for r in own}
    steps = {}
    for r in own:
        steps[r["task"]] = max(steps.get(r["task"], 0), r["config"]["steps"])
    kept = []
    for r in files.read_json(path)["runs"]:
        if (r["task"], r["loss"], r["seed"]) not in wanted or r["status"] != "done":
            continue
        if (r["task"], r["loss"], r["row"], r["seed"]) in trained_here:
            continue  # this grid's own run of the row and seed (e.g. on this machine) is the one read
        history = [e for e in r["history"] if e["step"] <= steps[r["task"]]]
        if not history or history[-1]["step"] < steps[r["task"]]:
            continue  # shorter than the schedule compared with
        kept.append(
            {
                **r,
                "config": {**r["config"], "steps": steps[r["task"]]},
                "history": history,
                "final": history[-1]["metrics"],
                "train_seconds": history[-1]["train_seconds"],
                "reference": directory,
            }
        )
    return kept
