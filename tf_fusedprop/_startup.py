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

__all__ = ["hide_native_logs", "native_stderr_silenced", "onednn_note"]

# TensorFlow turns oneDNN on by default only on x86 CPUs with one of these.
_ONEDNN_BY_DEFAULT = ("avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_bf16")


def onednn_note(flags, environ=os.environ, tensorflow_loaded=None):
    """The one line to print before TensorFlow loads with oneDNN off by its own default on an
    x86 CPU with `flags` (AVX2 without AVX512-VNNI/BF16 or AMX), where turning it on is much
    faster; None where TensorFlow is loaded already, the user set `TF_ENABLE_ONEDNN_OPTS`, or the
    CPU is another (oneDNN on by default, or not x86)."""
    tensorflow_loaded = "tensorflow" in sys.modules if tensorflow_loaded is None else tensorflow_loaded
    if tensorflow_loaded or "TF_ENABLE_ONEDNN_OPTS" in environ or "avx2" not in flags:
        return None
    if any(flag in flags for flag in _ONEDNN_BY_DEFAULT):
        return None
    return (
        "tf_fusedprop: TensorFlow leaves oneDNN off on this CPU (AVX2 without AVX512-VNNI/BF16 or AMX); "
        "TF_ENABLE_ONEDNN_OPTS=1 set before TensorFlow is imported made SNGAN's step 1.4-2.5x faster on such "
        "a CPU (train.py sets it; then use tf_fusedprop.layers for 1x1 strided convolutions, docs/guide.md); "
        "TF_ENABLE_ONEDNN_OPTS=0 keeps it off without this line."
    )


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
