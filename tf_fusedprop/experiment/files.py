"""Files that readers never see half-written: the harness's one atomic write, and JSON.

A training run can be killed (SIGKILL) at any instant, and a rerun resumes from what the
workdir holds; so every file the harness writes (PNGs, JSON, `.npz` statistics, the digits
classifier, checkpoint weights, the exported generator directory) goes through
`atomic_write`: written under a temporary name next to its destination, then renamed.
"""

import json
import os
import shutil

__all__ = ["atomic_write", "read_json", "write_json"]


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)


def atomic_write(path, write):
    """Calls `write(tmp_path)`, then renames `tmp_path` to `path`.

    `tmp_path` is `.tmp<pid>-<name>` in the directory of `path`: the same file system (the
    rename is atomic) and the same suffix (writers such as Keras's `save` check it). `write`
    may create a file or a directory; a directory replaces an existing directory at `path`
    (removed just before the rename). If `write` or the rename fails, the temporary file or
    directory is removed and the error propagates: `path` is either untouched or complete.

    Args:
      path: the destination; its directory must exist.
      write: a function of the temporary path that writes the content there.
    """
    path = os.fspath(path)
    directory, name = os.path.split(path)
    tmp_path = os.path.join(directory, f".tmp{os.getpid()}-{name}")
    try:
        write(tmp_path)
        if os.path.isdir(tmp_path) and os.path.isdir(path):
            shutil.rmtree(path)
        os.replace(tmp_path, path)
    except BaseException:
        _remove(tmp_path)
        raise


def write_json(path, value):
    """Writes `value` as indented JSON with sorted keys and a final newline, atomically."""

    def write(tmp_path):
        with open(tmp_path, "w") as f:
            json.dump(value, f, indent=2, sort_keys=True)
            f.write("\n")

    atomic_write(path, write)


def read_json(path):
    """The JSON value stored at `path`."""
    with open(path) as f:
        return json.load(f)
