"""One run of the grid: train it (`train_lib.train` on its config and workdir), then its record
(the metrics after every evaluation with their G update and training seconds); and the untimed
warm-up before a grid's first timed run."""

import contextlib
import gc
import io
import os
import re
import shutil
import sys
import time
import traceback

import keras

from benchmarks.time_to_quality.events import history_from_events
from benchmarks.time_to_quality.tasks import TASKS
from benchmarks.time_to_quality.values import finite_number
from tf_fusedprop.experiment import divergence, files, train_lib
from tf_fusedprop.experiment import workdir as fp_workdir
from tf_fusedprop.experiment.callbacks import RECORDED_SIGNALS
from tf_fusedprop.experiment.config import (
    ConfigError,
    json_values,
)


def record(run, config, summary, history, wall_seconds, error=None, workdir=None):
    """The run's entry of results.json: its history with the metrics from the first non-finite
    update on nulled, `diverged` and its step, the final metrics (None if it diverged)."""
    divergence = (summary or {}).get("divergence")  # the exact step, where the harness records it
    diverged_at = divergence.get("step") if isinstance(divergence, dict) else None
    for entry in history:  # else the first evaluation after it
        metrics = (entry.get("metrics") or {}).values()
        if diverged_at is None and not (entry.get("finite", True) and all(finite_number(v) for v in metrics)):
            diverged_at = entry["step"]
    entries = []
    for entry in history:
        finite = diverged_at is None or entry["step"] < diverged_at
        metrics = dict(entry.get("metrics") or {})
        entries.append(
            {
                "epoch": entry.get("epoch"),
                "step": entry["step"],
                "train_seconds": entry.get("train_seconds"),
                "metrics": metrics if finite else dict.fromkeys(metrics),
                "finite": finite,
                **{key: entry[key] for key in RECORDED_SIGNALS if key in entry},
            }
        )
    summary = summary or {}
    last = entries[-1] if entries else {}
    steps = summary.get("steps", last.get("step", 0))
    complete = bool(entries) and steps >= config.steps and entries[-1]["step"] >= config.steps
    status = "diverged" if diverged_at is not None else ("error" if error else ("done" if complete else "stopped"))
    return {
        "id": run.id,
        "task": run.task,
        "loss": run.loss,
        "form": run.form,
        "stabilizer": run.stabilizer,
        "row": run.row,
        "seed": run.seed,
        "status": status,
        "diverged": diverged_at is not None,
        "diverged_at_step": diverged_at,
        "steps": steps,
        "train_seconds": summary.get("train_seconds", last.get("train_seconds")),
        "wall_seconds": wall_seconds,
        "final": entries[-1]["metrics"] if status == "done" else None,
        "history": entries,
        "error": error,
        "load_average": os.getloadavg()[0],
        "workdir": workdir,
        "config": json_values(config),
    }


def warm_up(runs, directory):
    """Trains one short run per task in `directory`, untimed, so that the process's one-time
    costs (first tracing, the digits classifier) do not land in the first timed run."""
    shutil.rmtree(directory, ignore_errors=True)
    for task in dict.fromkeys(r.task for r, _ in runs):
        run, config = next((r, c) for r, c in runs if r.task == task)
        config = config.copy_and_resolve_references()
        config.update(
            steps=2 * config.steps_per_execution,
            steps_per_epoch=config.steps_per_execution,
            eval_samples=min(config.eval_samples, 100),
        )
        train_run(run, config, os.path.join(directory, task))


def train_run(run, config, workdir):
    """Trains one run in `workdir` (its output to `train.log`; a modelled task's progress lines
    also to this process's output, `ProgressEcho`); returns its record. Exceptions
    of the run are recorded, not raised (a harness that stops a diverged run by raising).

    An unfinished run in `workdir` is restarted from scratch, so that its training seconds
    compare, except on a task whose time is modelled (`Task.relative`: hours a run, read as G
    updates x seconds per update), which resumes from its last checkpoint; its history then
    comes from its TensorBoard events, all processes together."""
    resumable = TASKS[run.task].relative is not None
    try:
        if not resumable and fp_workdir.completed_run(workdir, config) is None and os.path.exists(workdir):
            shutil.rmtree(workdir)
    except ConfigError:
        shutil.rmtree(workdir)
    os.makedirs(workdir, exist_ok=True)
    keras.backend.clear_session()
    gc.collect()
    start = time.perf_counter()
    with open(os.path.join(workdir, "train.log"), "a") as log:
        output = ProgressEcho(log, sys.stdout, run.id) if resumable else log
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            summary, error = _train(config, workdir)
    wall = time.perf_counter() - start
    resumed = bool(summary and summary.get("resumed_from_epoch"))
    if summary and summary.get("history") is not None and not resumed:
        history = summary["history"]
    else:
        history = history_from_events(workdir)
        if resumed and history:  # the summary's seconds are the last process's only
            summary = {**summary, "train_seconds": history[-1]["train_seconds"]}
    return record(run, config, summary, history, wall, error, workdir)


def _train(config, workdir):
    """`(summary, error)` of `train_lib.train` in `workdir`: a diverged run's summary is its
    divergence; another exception is printed and worded as `error`, with the summary the run
    left, if any."""
    try:
        return train_lib.train(config, workdir=workdir, verbose=2), None
    except divergence.TrainingDivergedError as err:  # the harness stops a diverged run: counted
        return {"divergence": {"step": err.step, "players": err.players}, "steps": err.step}, None
    except Exception as err:  # noqa: BLE001 -- counted in the results; KeyboardInterrupt stops
        traceback.print_exc()
        error = f"{type(err).__name__}: {' '.join(str(err).split())}"[:500]
        summary_path = os.path.join(workdir, "summary.json")
        return (files.read_json(summary_path) if os.path.exists(summary_path) else None), error


class ProgressEcho(io.TextIOBase):
    """A run's output: all of it to `log` (its train.log), and its progress lines (the timed
    estimate and the periodic `step N/M` lines of `callbacks.Progress`, a schedule's changes of
    form, `G update K: ...`) also to `terminal`, after `prefix`, so that a run of hours is
    followed from the harness's own output.

    Args:
      log: the file everything goes to.
      terminal: where the progress lines also go.
      prefix: put before each echoed line (the run's id).
    """

    PROGRESS_LINE = re.compile(r"(Timed: |step [\d,]+/[\d,]+: |G update \d+: )")

    def __init__(self, log, terminal, prefix):
        super().__init__()
        self.log, self.terminal, self.prefix, self._line = log, terminal, prefix, ""

    def writable(self):
        """True: a text stream to write to."""
        return True

    def write(self, text):
        """Writes `text` to the log, and each progress line it completes to the terminal."""
        self.log.write(text)
        *lines, self._line = (self._line + text).split("\n")
        for line in lines:
            if self.PROGRESS_LINE.match(line):
                self.terminal.write(f"  {self.prefix}: {line}\n")
                self.terminal.flush()
        return len(text)

    def flush(self):
        """Flushes the log."""
        self.log.flush()
