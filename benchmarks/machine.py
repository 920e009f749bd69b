"""The machine a benchmark ran on, for its header: CPU model and flags, cores, TF and oneDNN.

Benchmarks import this module first: as `train.py` does, it runs a step's ops on one inter-op
thread (the same seed, the same run) and turns oneDNN on unless the environment says otherwise
(TensorFlow enables it by default only on CPUs with AVX512-VNNI/BF16/AMX; on an AVX2-only EPYC
turning it on measured 1.4-2.5x faster), quiets TensorFlow's log, and makes this checkout's
`tf_fusedprop` importable ahead of an installed copy but after `PYTHONPATH` (so
`PYTHONPATH=/other/checkout python benchmarks/x.py` measures the other checkout).
"""

import importlib.util
import os
import platform
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1 + len([p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]), _ROOT)

import train  # noqa: E402  (absl and ml_collections only: not TensorFlow)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# train.py's: oneDNN on, one inter-op thread (the same seed, the same run); a value set wins.
for _key, _value in train.TENSORFLOW_ENVIRONMENT.items():
    os.environ.setdefault(_key, _value)

#: The CPU flags that decide oneDNN's kernels and bfloat16's speed.
FLAGS_OF_INTEREST = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_tile")


def _machine_facts():
    """`tf_fusedprop/machine.py`, the one reader of the machine, loaded as a file: importing it
    through the package would load TensorFlow (the package's `__init__` does), which a
    benchmark's outer process, that only starts others, does not need."""
    spec = importlib.util.spec_from_file_location("_machine_facts", os.path.join(_ROOT, "tf_fusedprop", "machine.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cpu():
    """`(model name, flags of interest)` of this machine."""
    facts = _machine_facts()
    flags = facts.cpu_flags()
    return facts.cpu_model() or platform.processor() or "unknown CPU", [f for f in FLAGS_OF_INTEREST if f in flags]


def header():
    """One line: CPU model, flags of interest, cores, TensorFlow/Keras versions, oneDNN."""
    import keras
    import tensorflow as tf

    model, flags = cpu()
    return (
        f"{model}; flags: {' '.join(flags) or 'none of interest'}; {os.cpu_count()} cpus; "
        f"tf {tf.__version__}, keras {keras.__version__}; oneDNN={os.environ.get('TF_ENABLE_ONEDNN_OPTS')}; "
        f"inter-op threads={os.environ.get('TF_NUM_INTEROP_THREADS')}"
    )
