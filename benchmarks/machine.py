"""The machine a benchmark ran on, for its header: CPU model and flags, cores, TF and oneDNN.

Benchmarks import this module first: as `train.py` does, it runs a step's ops on one inter-op
thread (the same seed, the same run) and turns oneDNN on unless the environment says otherwise
(TensorFlow enables it by default only on CPUs with AVX512-VNNI/BF16/AMX; on an AVX2-only EPYC
turning it on measured 1.4-2.5x faster), quiets TensorFlow's log, and makes this checkout's
`tf_fusedprop` importable ahead of an installed copy but after `PYTHONPATH` (so
`PYTHONPATH=/other/checkout python benchmarks/x.py` measures the other checkout).
"""

import os
import platform
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
# As train.py (its TENSORFLOW_ENVIRONMENT): one inter-op thread, so one seed repeats; "0" is TensorFlow's default.
os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1 + len([p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]), _ROOT)

#: The CPU flags that decide oneDNN's kernels and bfloat16's speed.
FLAGS_OF_INTEREST = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_tile")


def cpu():
    """`(model name, flags of interest)` read from /proc/cpuinfo."""
    model, flags = platform.processor() or "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    return model, [flag for flag in FLAGS_OF_INTEREST if flag in flags]


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
