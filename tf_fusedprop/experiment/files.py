"""Files that readers never see half-written: the harness's one atomic write, and JSON.

A training run can be killed (SIGKILL) at any instant, and a rerun resumes from what the
workdir holds; so every file the harness writes (PNGs, JSON, `.npz` statistics, the digits
classifier, checkpoint weights, the exported generator directory, the image cache) goes
through `atomic_write`: written under a temporary name next to its destination, then renamed.
A write that fails because the disk is full or not writable raises `WriteError` (one line:
what, where, how much space it needs and how much is free), after removing what it wrote;
the destination keeps its previous content. A temporary left by a killed process is removed
by `remove_stale_temporaries`.
"""

import errno
import json
import os
import re
import shutil
import socket

__all__ = ["WriteError", "atomic_write", "check_free_space", "read_json", "remove_stale_temporaries", "write_json"]

#: What an `OSError` says when the disk, not the program, refused a write.
_DISK_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG}
#: The same, in the messages of TensorFlow's errors (its writers report the C library's text).
_DISK_MESSAGES = ("No space left on device", "Disk quota exceeded", "Read-only file system", "Permission denied")
_HOST = socket.gethostname().replace("~", "_")
#: `atomic_write`'s temporary names: `.tmp<pid>@<host>~<name>`.
_TEMPORARY = re.compile(r"^\.tmp(?P<pid>\d+)@(?P<host>[^~]*)~")


class WriteError(OSError):
    """A run's file could not be written: the disk is full or not writable.

    Attributes:
      what: what was written ("the checkpoint", "the sample grid", ...).
      path: where.
      reason: the system's words ("No space left on device").
      needed: bytes it needs (at least), or None if unknown.
      free: bytes free on that disk then, or None if unknown.
    """

    def __init__(self, what, path, reason, needed=None, free=None):
        self.what, self.path, self.reason, self.needed, self.free = what, os.fspath(path), reason, needed, free
        space = []
        if needed:
            space.append(f"it needs {_size_text(needed)}")
        if free is not None:
            space.append(f"{_size_text(free)} free there")
        detail = f" ({', '.join(space)})" if space else ""
        super().__init__(f"cannot write {what} to {self.path}: {reason}{detail}")


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)


def _size_text(count):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


def _free_bytes(path):
    directory = path
    while directory and not os.path.isdir(directory):
        directory = os.path.dirname(directory)
    try:
        return shutil.disk_usage(directory or ".").free
    except OSError:
        return None


def _bytes_in(path):
    if os.path.isdir(path) and not os.path.islink(path):
        return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(path) for name in names)
    return os.path.getsize(path) if os.path.lexists(path) else 0


def _disk_reason(err):
    """The system's words if `err` is the disk refusing a write (full, read-only, no permission), else None."""
    if isinstance(err, OSError) and err.errno in _DISK_ERRORS:
        return err.strerror or os.strerror(err.errno)
    if type(err).__module__.startswith("tensorflow"):
        return next((text for text in _DISK_MESSAGES if text in str(err)), None)
    return None


def atomic_write(path, write, what=None, size=None):
    """Calls `write(tmp_path)`, then renames `tmp_path` to `path`.

    `tmp_path` is `.tmp<pid>@<host>~<name>` in the directory of `path`: the same file system
    (the rename is atomic) and the same suffix (writers such as Keras's `save` check it). `write`
    may create a file or a directory; a directory replaces an existing directory at `path`
    (removed just before the rename). If `write` or the rename fails, the temporary file or
    directory is removed and the error propagates: `path` is either untouched or complete.

    Args:
      path: the destination; its directory must exist.
      write: a function of the temporary path that writes the content there.
      what: what it is, for `WriteError` ("the checkpoint"); None: the file's name.
      size: the bytes it takes, if known, for `WriteError`; None: at least what was written.

    Raises:
      WriteError: the disk is full or not writable (an `OSError`, or TensorFlow's error of one).
    """
    path = os.fspath(path)
    directory, name = os.path.split(path)
    tmp_path = os.path.join(directory, f".tmp{os.getpid()}@{_HOST}~{name}")
    try:
        write(tmp_path)
        if os.path.isdir(tmp_path) and os.path.isdir(path):
            shutil.rmtree(path)
        os.replace(tmp_path, path)
    except BaseException as err:
        written = _bytes_in(tmp_path) if os.path.lexists(tmp_path) else 0
        _remove(tmp_path)
        reason = _disk_reason(err)
        if reason is None:
            raise
        raise WriteError(what or name, path, reason, size or written or None, _free_bytes(directory)) from None


def check_free_space(directory, what, needed=1):
    """Raises `WriteError` if the disk of `directory` has fewer than `needed` bytes free: for
    writers that do not report a failed write (TensorFlow's summary writer only logs it)."""
    free = _free_bytes(directory)
    if free is not None and free < needed:
        raise WriteError(what, directory, "No space left on device", needed, free)


def remove_stale_temporaries(directory):
    """Removes what `atomic_write` left in `directory` when its process was killed: the
    temporaries of this host's processes that no longer run (a live one's, or another host's,
    are left alone). Returns the paths removed."""
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        match = _TEMPORARY.match(name)
        if match and match["host"] == _HOST and not _alive(int(match["pid"])):
            _remove(os.path.join(directory, name))
            removed.append(os.path.join(directory, name))
    return removed


def _alive(pid):
    """Whether process `pid` runs on this host."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's: it runs
        return True
    return True


def write_json(path, value, what=None):
    """Writes `value` as indented JSON with sorted keys and a final newline, atomically
    (`atomic_write`, with `what` for its `WriteError`)."""
    text = json.dumps(value, indent=2, sort_keys=True) + "\n"

    def write(tmp_path):
        with open(tmp_path, "w") as f:
            f.write(text)

    atomic_write(path, write, what, len(text.encode()))


def read_json(path):
    """The JSON value stored at `path`."""
    with open(path) as f:
        return json.load(f)
