"""The run directory: which one a run uses, whether it may run there, and its `config.json`.

`find(config, workdir)` is the run's `Workdir` (its path, and its summary if it is complete);
`Workdir.start` creates it when training starts.

A workdir belongs to one config: `config.json` is written when the run starts, a rerun with
the same config resumes it (`callbacks.BackupAndRestore`), another config is refused, and a
finished run (`summary.json`) is not trained again. Only the learning rates (`RESUMABLE_CHANGES`)
may differ on a rerun, e.g. to resume a diverged run more gently: `record_learning_rates` then
appends the change to `learning_rates.json` and `config.json` takes the new rates. And a rerun
may lengthen (or, before it got there, shorten) the schedule, `steps`, e.g. when FID is still
falling at the end: the run, finished or not, trains on from its last checkpoint to the new
`steps` (`record_steps`), exactly as an uninterrupted run of that length (the learning rates
do not depend on `steps`); the epoch length must stay the same.
"""

import dataclasses
import datetime
import glob
import os

from tf_fusedprop.experiment import downloads, files
from tf_fusedprop.experiment.config import ConfigError, json_values

__all__ = [
    "RESUMABLE_CHANGES",
    "Workdir",
    "completed_run",
    "default_workdir",
    "describe_learning_rate_change",
    "find",
    "learning_rate_changes",
    "make_workdir",
    "record_learning_rates",
    "record_steps",
]

CONFIG = "config.json"
SUMMARY = "summary.json"
LEARNING_RATES = "learning_rates.json"
#: The config fields that a rerun may change: the run resumes with the new values.
RESUMABLE_CHANGES = ("d_lr", "g_lr")
#: The config field of the schedule's length: a rerun may change it (`completed_run`).
STEPS = "steps"


def default_workdir(config, runs_root="runs"):
    """The workdir used when none is given: the most recent unfinished run of the same
    config under `runs_root` (`<name>-*` with a matching `config.json` and no
    `summary.json`), else a new `runs_root/<name>-<YYYYmmdd-HHMMSS>`."""
    wanted = json_values(config)
    for candidate in sorted(glob.glob(os.path.join(runs_root, f"{glob.escape(config.name)}-*")), reverse=True):
        config_path = os.path.join(candidate, CONFIG)
        if os.path.exists(os.path.join(candidate, SUMMARY)) or not os.path.exists(config_path):
            continue
        try:
            if files.read_json(config_path) == wanted:
                return candidate
        except (OSError, ValueError):
            continue
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = os.path.join(runs_root, f"{config.name}-{stamp}")
    suffix = 1
    while os.path.exists(path):
        suffix += 1
        path = os.path.join(runs_root, f"{config.name}-{stamp}-{suffix}")
    return path


def _flatten(value, prefix=""):
    if isinstance(value, dict):
        items = {}
        for key, item in value.items():
            items.update(_flatten(item, f"{prefix}{key}."))
        return items
    return {prefix[:-1]: value}


def _first_difference(old, new, ignore=()):
    old, new = _flatten(old), _flatten(new)
    for key in sorted((set(old) | set(new)) - set(ignore)):
        if old.get(key, "<absent>") != new.get(key, "<absent>"):
            return key, old.get(key, "<absent>"), new.get(key, "<absent>")
    return None


def completed_run(workdir, config):
    """The summary of the run of `config` that `workdir` holds if it is complete, else None.

    A finished run whose `steps` are fewer than `config.steps` is not complete: the rerun
    trains it on (`record_steps`).

    Raises:
      ConfigError: `workdir` holds a run of another config (other than in `RESUMABLE_CHANGES`
        and `steps`), a finished run of more steps than `config.steps`, or a run whose epoch
        length the new `steps` would change.
    """
    config_path = os.path.join(workdir, CONFIG)
    if not os.path.exists(config_path):
        return None
    stored, wanted = files.read_json(config_path), json_values(config)
    difference = _first_difference(stored, wanted, ignore=RESUMABLE_CHANGES + (STEPS,))
    if difference:
        key, old, new = difference
        raise ConfigError(
            f"workdir {workdir} holds a run with a different config (config.{key}: {old!r} there, {new!r} now); "
            f"rerun with the same config to resume it (only {', '.join(RESUMABLE_CHANGES)} and steps may change), "
            "or pass a new --workdir."
        )
    summary_path = os.path.join(workdir, SUMMARY)
    summary = files.read_json(summary_path) if os.path.exists(summary_path) else None
    if stored.get(STEPS) != wanted[STEPS]:
        _check_new_length(workdir, stored, wanted, summary)
    if summary is not None and summary.get(STEPS, wanted[STEPS]) < wanted[STEPS]:
        return None
    return summary


def _check_new_length(workdir, stored, wanted, summary):
    """Raises `ConfigError` if the run in `workdir` cannot be trained to `wanted` steps."""
    spe = wanted["steps_per_epoch"]
    if min(spe, stored[STEPS]) != min(spe, wanted[STEPS]):  # config.schedule's epoch length
        raise ConfigError(
            f"the run in {workdir} has epochs of {min(spe, stored[STEPS])} steps; config.steps={wanted[STEPS]} "
            f"would make them {min(spe, wanted[STEPS])}: pass steps of at least steps_per_epoch ({spe}), "
            "or a new --workdir."
        )
    trained = summary.get(STEPS, 0) if summary is not None else 0
    if wanted[STEPS] < trained:
        raise ConfigError(
            f"the run in {workdir} has trained {trained} steps, more than config.steps={wanted[STEPS]}: pass "
            f"steps of at least {trained} to train it on, or a new --workdir."
        )


def make_workdir(workdir, config):
    """Creates `workdir` (checking that it is writable) and its `config.json` if missing.

    Raises:
      ConfigError: the workdir cannot be written.
    """
    try:
        os.makedirs(workdir, exist_ok=True)
        probe = os.path.join(workdir, f".write-test-{os.getpid()}")
        with open(probe, "w") as f:
            f.write("ok")
        os.remove(probe)
    except OSError as err:
        raise ConfigError(
            f"cannot write to workdir {workdir!r} ({type(err).__name__}: {err.strerror or err}); "
            "pass a writable directory with --workdir=DIR."
        ) from None
    config_path = os.path.join(workdir, CONFIG)
    if not os.path.exists(config_path):
        files.write_json(config_path, json_values(config))


def learning_rate_changes(workdir):
    """The learning-rate changes of the run in `workdir`, oldest first (`record_learning_rates`)."""
    path = os.path.join(workdir, LEARNING_RATES)
    return files.read_json(path) if os.path.exists(path) else []


def record_learning_rates(workdir, config, checkpoint=None):
    """Records that this rerun changes the learning rates of the run in `workdir`, if it does.

    Appends `{"epoch", "step", "d_lr": {"from", "to"}, "g_lr": {"from", "to"}}` (the
    checkpoint the run resumes from, 0 for none) to `learning_rates.json`, then writes the new
    rates into `config.json`; both atomically. Call it after `completed_run` and `make_workdir`.

    Args:
      workdir: the run's directory, holding its `config.json`.
      config: this rerun's config.
      checkpoint: the metadata of the checkpoint the run resumes from
        (`callbacks.BackupAndRestore.metadata()`), or None.

    Returns:
      The change recorded, or None if the rates are those of `config.json`.
    """
    config_path = os.path.join(workdir, CONFIG)
    stored, wanted = files.read_json(config_path), json_values(config)
    if all(stored.get(key) == wanted[key] for key in RESUMABLE_CHANGES):
        return None
    change = {
        "epoch": checkpoint["epoch"] if checkpoint else 0,
        "step": checkpoint["steps"] if checkpoint else 0,
        **{key: {"from": stored.get(key), "to": wanted[key]} for key in RESUMABLE_CHANGES},
    }
    changes = learning_rate_changes(workdir)
    if not changes or changes[-1] != change:  # Not twice when killed before config.json was written.
        files.write_json(os.path.join(workdir, LEARNING_RATES), changes + [change])
    files.write_json(config_path, {**stored, **{key: wanted[key] for key in RESUMABLE_CHANGES}})
    return change


def record_steps(workdir, config):
    """Writes `config.steps` into the `config.json` of the run in `workdir` if a rerun changed
    it (`completed_run` allows it); returns the line saying so, or None if unchanged."""
    config_path = os.path.join(workdir, CONFIG)
    stored = files.read_json(config_path)
    if stored.get(STEPS) == config.steps:
        return None
    files.write_json(config_path, {**stored, STEPS: config.steps})
    return f"Schedule changed from {stored.get(STEPS)} to {config.steps} steps; recorded in {config_path}."


def describe_learning_rate_change(workdir, change):
    """One line saying what `record_learning_rates` recorded."""
    rates = ", ".join(f"{key} {change[key]['from']:g} -> {change[key]['to']:g}" for key in RESUMABLE_CHANGES)
    start = f"from epoch {change['epoch']} (step {change['step']})" if change["epoch"] else "from the start"
    return f"Learning rates changed {start}: {rates}; recorded in {os.path.join(workdir, LEARNING_RATES)}."


@dataclasses.dataclass
class Workdir:
    """A run's directory, found for one config (`find`).

    Attributes:
      path: the directory.
      config: the run's config.
      summary: the finished run's summary, or None while it is to be trained.
    """

    path: str
    config: object
    summary: dict = None

    @property
    def summary_path(self):
        """Where the run's `summary.json` is (or will be)."""
        return os.path.join(self.path, SUMMARY)

    @property
    def backup_dir(self):
        """The directory of the run's checkpoints."""
        return os.path.join(self.path, "backup")

    @property
    def cache_dir(self):
        """Where the evaluation models and statistics go: `config.cache_dir`, else the user's
        cache shared by all runs (`downloads.user_cache_dir()`: `$TF_FUSEDPROP_CACHE`, or
        `~/.cache/tf_fusedprop`)."""
        return self.config.cache_dir or downloads.user_cache_dir()

    def start(self, out, checkpoint=None):
        """Creates `out` (this process's output: the workdir on the chief) with its `config.json`;
        on the chief, records what this rerun changed (`record_learning_rates`, from the
        `checkpoint` metadata it resumes from; `record_steps`) and returns the lines saying so
        (none on other workers).

        Raises:
          ConfigError: `out` cannot be written, or the checkpoint lies beyond `config.steps`.
        """
        if checkpoint and checkpoint["steps"] > self.config.steps:
            raise ConfigError(
                f"the run in {self.path} has a checkpoint at step {checkpoint['steps']}, beyond config.steps="
                f"{self.config.steps}: pass steps of at least {checkpoint['steps']}, or a new --workdir."
            )
        make_workdir(out, self.config)
        if out != self.path:
            return []
        change = record_learning_rates(self.path, self.config, checkpoint)
        notes = [
            describe_learning_rate_change(self.path, change) if change else None,
            record_steps(self.path, self.config),
        ]
        return [note for note in notes if note]


def find(config, workdir=None, runs_root="runs"):
    """The `Workdir` of `config`: `workdir`, else `default_workdir(config, runs_root)`.

    Raises:
      ConfigError: the directory holds a run of another config (`completed_run`).
    """
    path = os.fspath(workdir) if workdir is not None else default_workdir(config, runs_root)
    return Workdir(path, config, completed_run(path, config))
