"""The machine a grid trains on: what its timings depend on (versions, CPU, oneDNN, load), and
the one line naming it that each record keeps."""

import os
import platform

import keras
import tensorflow as tf

from tf_fusedprop import machine


def environment():
    """What the timings depend on: versions, CPU model and flags, threads, oneDNN, the inter-op
    threads TensorFlow was loaded with (None: its default, one per core), load."""
    present = machine.cpu_flags()
    cpu_flags = [f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile") if f in present]
    model = machine.cpu_model() or platform.processor()
    return {
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "python": platform.python_version(),
        "cpu": model,
        "cpu_flags": cpu_flags,
        "cpus": os.cpu_count(),
        "onednn": os.environ.get("TF_ENABLE_ONEDNN_OPTS"),
        "inter_op_threads": os.environ.get("TF_NUM_INTEROP_THREADS"),
        "load_average": round(os.getloadavg()[0], 2),
    }


def machine_of(environment_):
    """One line naming the CPU a run trained on (kept in its record: seeds of one grid may be
    trained across sessions, on different machines)."""
    return f"{environment_['cpu']} ({' '.join(environment_['cpu_flags'])}, {environment_['cpus']} CPUs)"
