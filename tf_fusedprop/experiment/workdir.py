"""The run directory: which one a run uses, whether it may run there, and its `config.json`.

A workdir belongs to one config: `config.json` is written when the run starts, a rerun with
the same config resumes it (`callbacks.BackupAndRestore`), another config is refused, and a
finished run (`summary.json`) is not trained again.
"""

import datetime
import glob
import os

from tf_fusedprop.experiment import files
from tf_fusedprop.experiment.config import ConfigError, json_values

__all__ = ["completed_run", "default_workdir", "make_workdir"]

CONFIG = "config.json"
SUMMARY = "summary.json"


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


def _first_difference(old, new):
    old, new = _flatten(old), _flatten(new)
    for key in sorted(set(old) | set(new)):
        if old.get(key, "<absent>") != new.get(key, "<absent>"):
            return key, old.get(key, "<absent>"), new.get(key, "<absent>")
    return None


def completed_run(workdir, config):
    """The summary of the run of `config` that `workdir` holds if it is complete, else None.

    Raises:
      ConfigError: `workdir` holds a run of another config.
    """
    config_path = os.path.join(workdir, CONFIG)
    if not os.path.exists(config_path):
        return None
    difference = _first_difference(files.read_json(config_path), json_values(config))
    if difference:
        key, old, new = difference
        raise ConfigError(
            f"workdir {workdir} holds a run with a different config (config.{key}: {old!r} there, {new!r} now); "
            "rerun with the same config to resume it, or pass a new --workdir."
        )
    summary_path = os.path.join(workdir, SUMMARY)
    return files.read_json(summary_path) if os.path.exists(summary_path) else None


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
