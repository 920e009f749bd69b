"""Dtype helpers for building networks under a Keras dtype policy (mixed precision)."""

import keras

__all__ = ["variable_dtype"]


def variable_dtype(dtype=None):
    """The float dtype of the variables of dtype policy `dtype` (float32 for mixed policies).

    Use it for a model's inputs and for a discriminator's last layer, so that inputs arrive and
    logits leave at full precision under `mixed_bfloat16` / `mixed_float16`.

    Args:
      dtype: a dtype or dtype policy (name or object); None for the global policy.
    """
    policy = keras.config.dtype_policy() if dtype is None else keras.dtype_policies.get(dtype)
    return policy.variable_dtype
