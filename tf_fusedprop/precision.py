"""Precision that fits the hardware: `choose("auto")` picks the Keras dtype policy.

Measured on this project's machines, the same `mixed_bfloat16` step was 16x slower than
float32 on a CPU without AVX512_BF16 (bfloat16 emulated) and 1.39x faster on one with
AVX512_BF16/AMX. So "auto" decides from what the hardware can do:

| hardware | policy | why |
|---|---|---|
| a GPU, every one of compute capability >= 8.0 (Ampere and newer) | `mixed_bfloat16` | bfloat16 tensor cores |
| a GPU below 8.0 (Volta, Turing) | `mixed_float16` | float16 tensor cores; needs loss scaling |
| no GPU, CPU flags with `avx512_bf16` or `amx_bf16` | `mixed_bfloat16` | native bfloat16 dot products |
| no GPU, neither flag | `float32` | bfloat16 would be emulated |

`mixed_float16` needs loss scaling (`keras.optimizers.LossScaleOptimizer` on both players:
`FusedPropGAN` then carries one loss scale for the one backward pass).
"""

import collections

from tf_fusedprop import machine

__all__ = ["POLICIES", "Precision", "choose", "gpu_compute_capabilities"]

#: Accepted settings: "auto" (decide from the hardware) or a policy.
POLICIES = ("auto", "float32", "mixed_bfloat16", "mixed_float16")

_BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


class Precision(collections.namedtuple("Precision", ["policy", "reason"])):
    """A dtype policy name (`float32`, `mixed_bfloat16` or `mixed_float16`) and why it was chosen.

    Attributes:
      policy: the Keras dtype policy name.
      reason: one line saying why (what was detected, or "set explicitly").
    """

    @property
    def loss_scaling(self):
        """True for `mixed_float16`, whose small gradients need loss scaling."""
        return self.policy == "mixed_float16"

    @property
    def layer_dtype(self):
        """The `dtype=` to give network builders: None for float32 (the default policy)."""
        return None if self.policy == "float32" else self.policy


def gpu_compute_capabilities():
    """`[(name, (major, minor))]` of the visible GPUs, as TensorFlow reports them."""
    import tensorflow as tf  # Lazy: detection of the CPU needs no TensorFlow.

    found = []
    for device in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(device)
        found.append((details.get("device_name", device.name), tuple(details.get("compute_capability", (0, 0)))))
    return found


def choose(setting="auto", flags=None, gpus=None):
    """The `Precision` for `setting`.

    Args:
      setting: "auto", or a policy of `POLICIES` ("off" is accepted for "float32").
      flags: the CPU flags to decide from; None reads `/proc/cpuinfo` (`machine.cpu_flags`).
      gpus: `[(name, (major, minor))]` of the GPUs; None asks TensorFlow
        (`gpu_compute_capabilities`).

    Raises:
      ValueError: an unknown setting.
    """
    setting = "float32" if setting == "off" else setting
    if setting not in POLICIES:
        raise ValueError(
            f"Unknown precision. Received: mixed_precision={setting!r}; expected one of {', '.join(POLICIES)}."
        )
    if setting != "auto":
        return Precision(setting, "set explicitly")
    gpus = gpu_compute_capabilities() if gpus is None else list(gpus)
    if gpus:
        names = ", ".join(f"{name} (compute capability {major}.{minor})" for name, (major, minor) in gpus)
        if all(capability >= (8, 0) for _, capability in gpus):
            return Precision("mixed_bfloat16", f"auto: GPU {names} supports bfloat16")
        return Precision(
            "mixed_float16",
            f"auto: GPU {names} lacks bfloat16 (needs compute capability 8.0); float16 with loss scaling",
        )
    flags = machine.cpu_flags() if flags is None else frozenset(flags)
    found = [flag for flag in _BF16_CPU_FLAGS if flag in flags]
    if found:
        return Precision("mixed_bfloat16", f"auto: no GPU; the CPU flags show {' and '.join(found)} (native bfloat16)")
    return Precision(
        "float32", "auto: no GPU; the CPU flags show neither avx512_bf16 nor amx_bf16 (bfloat16 would be emulated)"
    )
