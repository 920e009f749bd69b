"""The machine's facts, read in one place, and where choices measured on it live.

Every reader of the machine (the precision choice, the timed choices, the benchmarks' headers
and the quality harness's records) asks this module: `cpu_model`, `cpu_flags`, `cores`,
`onednn_on`.

A choice timed on one machine (which weight-gradient formulation is fastest,
`conv_weight_gradients`) holds for every later process on the same machine with the same
software, and only there. `fingerprint` names what decides it: the CPU model and flags, the
cores this process may use, TensorFlow's version and whether oneDNN is on (its kernels differ
completely), and this package's version (its formulations). `user_cache_dir` is where every run
and every `fit` user of this account shares such measurements.

This module imports nothing of TensorFlow until `fingerprint` is called.
"""

import hashlib
import json
import os

__all__ = ["cores", "cpu_flags", "cpu_model", "fingerprint", "fingerprint_key", "onednn_on", "user_cache_dir"]

# TensorFlow reads the switch once, when it is imported; the package imports it first thing.
_ONEDNN_AT_IMPORT = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "")


def onednn_on():
    """ "1" if TensorFlow runs oneDNN's kernels in this process, else "0": `TF_ENABLE_ONEDNN_OPTS`
    as TensorFlow read it, or unset, TensorFlow's default for this CPU (on where it has
    AVX512_VNNI, AVX512_BF16 or AMX, off on AVX2-only CPUs). The setting written in the
    environment where TensorFlow does not say (another build): "" when unset."""
    try:
        from tensorflow.python.util import _pywrap_util_port
    except ImportError:
        return _ONEDNN_AT_IMPORT
    enabled = getattr(_pywrap_util_port, "IsMklEnabled", None)
    return _ONEDNN_AT_IMPORT if enabled is None else ("1" if enabled() else "0")


def user_cache_dir():
    """The user's cache shared by all runs (evaluation models, reference statistics, measured
    choices): `$TF_FUSEDPROP_CACHE` if set, else `$XDG_CACHE_HOME/tf_fusedprop`
    (`~/.cache/tf_fusedprop`)."""
    if os.environ.get("TF_FUSEDPROP_CACHE"):
        return os.environ["TF_FUSEDPROP_CACHE"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tf_fusedprop")


def cpu_model(path="/proc/cpuinfo"):
    """The CPU's model name from `path` ("" where it names none, as on some ARM kernels)."""
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    return value.strip()
    except OSError:
        pass
    return ""


def cpu_flags(path="/proc/cpuinfo"):
    """The CPU's feature flags (lower case), from the first `flags` line of `path` (`Features` on
    ARM); empty if unreadable."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return frozenset(line.split(":", 1)[1].lower().split())
    except OSError:
        pass
    return frozenset()


def cores():
    """The CPU cores this process may run on (its affinity mask; `os.cpu_count()` off Linux)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 0


def fingerprint():
    """`{name: value}` of everything that decides which measured choice is right here."""
    import tensorflow as tf  # Lazy: the module's cache directory needs no TensorFlow.

    from tf_fusedprop._version import __version__

    return {
        "cpu": cpu_model(),
        "cpu_flags": " ".join(sorted(cpu_flags())),
        "cores": cores(),
        "intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
        "tensorflow": tf.__version__,
        "onednn": onednn_on(),
        "tf_fusedprop": __version__,
    }


def fingerprint_key(facts):
    """A short file-name-safe key of `fingerprint()`'s facts: equal facts, equal key."""
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]
