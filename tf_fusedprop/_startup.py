"""Loading TensorFlow without its native start-up lines, for every program that imports us.

TensorFlow prints a few lines while it loads and probes the devices (oneDNN's notice, the CPU
instructions it was not built with, the CUDA probe: "before absl::InitializeLog()", ignoring
`TF_CPP_MIN_LOG_LEVEL`). `tf_fusedprop/__init__.py` imports TensorFlow and lists the physical
devices inside `native_stderr_silenced`, unless TensorFlow is loaded already or
`TF_CPP_MIN_LOG_LEVEL=0` asks for TensorFlow's info logs. What was hidden is written back if
a Python exception leaves the block, so a broken install still shows everything. This module
imports nothing of TensorFlow or of the package.
"""

import contextlib
import os
import sys
import tempfile

__all__ = ["hide_native_logs", "native_stderr_silenced"]


def hide_native_logs():
    """Whether to hide what native code prints while TensorFlow loads: always, unless the
    user asked for TensorFlow's info logs (`TF_CPP_MIN_LOG_LEVEL=0`) or TensorFlow is loaded
    already. Its start-up lines (oneDNN, CUDA probe) come "before absl::InitializeLog()" and
    ignore `TF_CPP_MIN_LOG_LEVEL`, so `=3` alone does not hide them."""
    return "tensorflow" not in sys.modules and os.environ.get("TF_CPP_MIN_LOG_LEVEL", "").strip() != "0"


@contextlib.contextmanager
def native_stderr_silenced(enabled):
    """Hides what native code writes to file descriptor 2 meanwhile (TensorFlow's start-up
    lines); if a Python exception leaves the block, what was hidden is written back to
    stderr before it propagates, so a failing import shows everything."""
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            captured.seek(0)
            os.write(2, captured.read())
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
