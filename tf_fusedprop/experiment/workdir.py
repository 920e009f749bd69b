"""The run directory: which one a run uses, whether it may run there, and its `config.json`.

`find(config, workdir)` is the run's `Workdir` (its path, and its summary if it is complete);
`Workdir.start` creates it when training starts.

A workdir belongs to one config: `config.json` is written when the run starts, a rerun with
the same config resumes it (`callbacks.BackupAndRestore`), another config is refused, and a
finished run (`summary.json`) is not trained again. Two kinds of change are allowed on a rerun
(given its `--workdir`):
* the learning rates (`RESUMABLE_CHANGES`), e.g. to resume a diverged run more gently:
  `record_learning_rates` appends the change to `learning_rates.json` and `config.json` takes
  the new rates;
* the schedule's length, `steps`, e.g. when FID is still falling at the end: the run, finished
  or not, trains on from its last checkpoint to the new `steps`, exactly as an uninterrupted
  run of that length (the learning rates do not depend on `steps`); the epochs keep their
  length, and a run cannot be shortened below what it trained (`schedule_change_refused`,
  `record_steps`).
Where the caches are (`cache_dir`) is not part of a run: a rerun may name another (a cache
moved, or a workdir copied beside another one), and `config.json` takes it (`record_cache_dir`);
nor is how often it saves within an epoch (`checkpoint_minutes`).

One run per workdir: `locked(path)` holds `path/lock` (the owner's pid, host and start time)
while a run trains there; a second run is refused in one line naming the owner, and a lock
whose process is gone is taken over with one line.
"""

import contextlib
import dataclasses
import datetime
import glob
import json
import os
import socket

try:
    import fcntl
except ImportError:  # not on POSIX: the owner's pid and host alone decide
    fcntl = None

from tf_fusedprop.experiment import downloads, files
from tf_fusedprop.experiment.config import ConfigError, as_it_trains, json_values, with_added_fields

__all__ = [
    "RESUMABLE_CHANGES",
    "Workdir",
    "completed_run",
    "default_workdir",
    "describe_learning_rate_change",
    "find",
    "learning_rate_changes",
    "locked",
    "make_workdir",
    "record_cache_dir",
    "record_learning_rates",
    "record_steps",
    "schedule_change_refused",
]

CONFIG = "config.json"
SUMMARY = "summary.json"
LEARNING_RATES = "learning_rates.json"
#: The learning rates, which a rerun may change: the run resumes with the new values.
RESUMABLE_CHANGES = ("d_lr", "g_lr")
#: The config field of the schedule's length: a rerun may change it (`completed_run`).
STEPS = "steps"
#: The config field of where the caches are: a rerun may change it (`record_cache_dir`).
CACHE_DIR = "cache_dir"
#: How often a run saves within an epoch: a rerun may change it, and it is not recorded.
CHECKPOINT_MINUTES = "checkpoint_minutes"
LOCK = "lock"


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

    A run whose `config.json` has another `steps` is not complete: the rerun trains it on to
    `config.steps` (`record_steps`).

    Raises:
      ConfigError: `workdir` holds a run of another config (other than in `RESUMABLE_CHANGES`
        and `steps`), or one whose schedule cannot become `config.steps`
        (`schedule_change_refused`).
    """
    config_path = os.path.join(workdir, CONFIG)
    if not os.path.exists(config_path):
        return None
    stored, wanted = as_it_trains(with_added_fields(files.read_json(config_path))), as_it_trains(json_values(config))
    difference = _first_difference(stored, wanted, ignore=RESUMABLE_CHANGES + (STEPS, CACHE_DIR, CHECKPOINT_MINUTES))
    if difference:
        key, old, new = difference
        raise ConfigError(
            f"workdir {workdir} holds a run with a different config (config.{key}: {old!r} there, {new!r} now); "
            f"rerun with the same config to resume it (only {', '.join(RESUMABLE_CHANGES)}, steps and {CACHE_DIR} may change), "
            "or pass a new --workdir."
        )
    summary_path = os.path.join(workdir, SUMMARY)
    summary = files.read_json(summary_path) if os.path.exists(summary_path) else None
    if stored.get(STEPS) != wanted[STEPS]:
        refusal = schedule_change_refused(stored[STEPS], wanted[STEPS], wanted["steps_per_epoch"], summary is not None)
        if refusal:
            raise ConfigError(f"the run in {workdir} {refusal}.")
        return None  # Finished or not, trained on to the new length.
    return summary


def schedule_change_refused(old_steps, new_steps, steps_per_epoch, finished):
    """Why a run of `old_steps` (`finished` or not) cannot be trained on to `new_steps`, and what
    to do, in words that follow "the run in DIR", or None if it can: the epochs must keep their length
    (`config.schedule`), and a finished run cannot be shortened (an unfinished one can, down
    to its last checkpoint: `Workdir.start`)."""
    old_epoch, new_epoch = min(steps_per_epoch, old_steps), min(steps_per_epoch, new_steps)
    if old_epoch != new_epoch and old_steps < steps_per_epoch:
        return (
            f"is one epoch of {old_steps} steps (steps_per_epoch {steps_per_epoch}), which another length would "
            "change: pass a new --workdir"
        )
    if old_epoch != new_epoch:
        return (
            f"has epochs of {old_epoch} steps, which config.steps={new_steps} would shorten: pass steps of at "
            f"least {old_epoch}, or a new --workdir"
        )
    if finished and new_steps < old_steps:
        return (
            f"has finished {old_steps} steps, more than config.steps={new_steps}: pass steps of at least {old_steps}, "
            "or a new --workdir"
        )
    return None


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
    """Records that this rerun changed the schedule's length, if it did: the finished run's
    `summary.json` (if any) becomes `summary_<old steps>.json`, so that the workdir reads as
    unfinished until the new length is trained, then `config.json` takes `config.steps`.
    Returns the line saying so, or None if the length is unchanged. Call it after `completed_run`."""
    config_path = os.path.join(workdir, CONFIG)
    stored = files.read_json(config_path)
    if stored.get(STEPS) == config.steps:
        return None
    summary_path, kept = os.path.join(workdir, SUMMARY), None
    if os.path.exists(summary_path):  # before config.json: killed in between, the run reads as unfinished
        kept = os.path.join(workdir, f"summary_{stored[STEPS]}.json")
        os.replace(summary_path, kept)
    files.write_json(config_path, {**stored, STEPS: config.steps})
    line = f"Schedule changed from {stored[STEPS]} to {config.steps} steps; recorded in {config_path}"
    return f"{line} (the finished run's summary kept as {kept})." if kept else f"{line}."


def record_cache_dir(workdir, config):
    """Writes this rerun's `config.cache_dir` into the `config.json` of the run in `workdir`, if
    it names another one; returns the line saying so, or None. Call it after `completed_run`."""
    config_path = os.path.join(workdir, CONFIG)
    stored = files.read_json(config_path)
    if stored.get(CACHE_DIR) == config.cache_dir:
        return None
    files.write_json(config_path, {**stored, CACHE_DIR: config.cache_dir})
    return f"Cache directory changed from {stored.get(CACHE_DIR)} to {config.cache_dir}; recorded in {config_path}."


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
        `checkpoint` metadata it resumes from; `record_steps`; `record_cache_dir`) and returns the lines saying so
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
            record_cache_dir(self.path, self.config),
        ]
        return [note for note in notes if note]


def find(config, workdir=None, runs_root="runs"):
    """The `Workdir` of `config`: `workdir`, else `default_workdir(config, runs_root)`.

    Raises:
      ConfigError: the directory holds a run of another config (`completed_run`).
    """
    path = os.fspath(workdir) if workdir is not None else default_workdir(config, runs_root)
    return Workdir(path, config, completed_run(path, config))


class WorkdirInUseError(ConfigError):
    """Another run trains in the workdir (`locked`)."""


@contextlib.contextmanager
def locked(path, say=print):
    """Holds `path/lock` while the block runs: one run per workdir.

    The lock is an open file under `fcntl.flock`, which the system releases when its process
    ends however it ends, holding `{"pid", "host", "started"}` for the message. A lock that
    another process holds refuses this run; one whose process is gone is taken over, and
    `say` is called with one line saying so. Where `flock` is not available, the pid and
    host decide (a lock of a process of this host that no longer runs is stale). The file is
    emptied when the block ends.

    Raises:
      WorkdirInUseError: another run holds it (one line naming its pid and host).
      ConfigError: `path` cannot be written.
    """
    lock_path = os.path.join(path, LOCK)
    try:
        os.makedirs(path, exist_ok=True)
        handle = open(lock_path, "a+")
    except OSError as err:
        raise ConfigError(
            f"cannot write to workdir {path!r} ({type(err).__name__}: {err.strerror or err}); "
            "pass a writable directory with --workdir=DIR."
        ) from None
    with handle:
        handle.seek(0)
        owner = _owner(handle.read())
        state = _lock_file(handle)
        if state == "held by another" or (state == "unsupported" and owner and _running(owner)):
            raise WorkdirInUseError(
                f"workdir {path} is in use by another run (pid {owner.get('pid', '?')} on {owner.get('host', '?')}, "
                f"since {owner.get('started', '?')}): wait for it to end or stop it, or pass another --workdir."
            )
        if owner:
            say(
                f"Took over the lock of workdir {path} from pid {owner.get('pid')} on {owner.get('host')} "
                f"(since {owner.get('started')}): that process is gone."
            )
        now = datetime.datetime.now().isoformat(" ", "seconds")
        _rewrite(handle, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": now}) + "\n")
        try:
            yield
        finally:
            # Emptied, not removed: a process that opened the file meanwhile must lock this one.
            with contextlib.suppress(OSError):
                _rewrite(handle, "")


def _rewrite(handle, text):
    handle.seek(0)
    handle.truncate()
    handle.write(text)
    handle.flush()


def _owner(text):
    try:
        owner = json.loads(text) if text.strip() else {}
    except ValueError:
        return {"pid": "?", "host": "?", "started": "?"}
    return owner if isinstance(owner, dict) else {}


def _lock_file(handle):
    """ "held" (by this process now), "held by another", or "unsupported" (no `flock` here)."""
    if fcntl is None:
        return "unsupported"
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return "held by another"
    except OSError:  # a file system without flock
        return "unsupported"
    return "held"


def _running(owner):
    """Whether the lock's owner may still run: another host's may; this host's if its pid does."""
    if owner.get("host") != socket.gethostname():
        return True
    try:
        os.kill(int(owner["pid"]), 0)
    except (ProcessLookupError, ValueError, KeyError, TypeError):
        return False
    except PermissionError:
        return True
    return True
