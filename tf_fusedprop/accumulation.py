"""Gradient accumulation over micro-batches (Caffe's `iter_size`).

`iter_size` micro-batches of `b` samples give the update of one batch of `iter_size * b`
samples while holding only one micro-batch's activations: gradients are summed into shadow
variables and the optimizer applies `sum / iter_size` once, so `optimizer.iterations`, Adam's
bias correction and learning-rate schedules count real updates, not micro-batches.
"""

import keras
import tensorflow as tf

from tf_fusedprop._checks import positive_int

__all__ = ["GradientAccumulator"]


class GradientAccumulator:
    """Shadow variables that accumulate gradients of `variables` over `iter_size` micro-batches.

    The shadows are non-trainable, zero-initialised, shaped like each variable, and
    *sync-on-read*: under `tf.distribute.MirroredStrategy` each replica accumulates its own
    micro-batch gradients locally (create the accumulator inside the strategy scope); the
    optimizer then all-reduces the averaged gradients as usual. This is what makes accumulation
    work under MirroredStrategy, where Keras's `gradient_accumulation_steps` fails
    (keras-team/keras#20582).

    Args:
      variables: the trainable variables whose gradients are accumulated.
      iter_size: number of micro-batches per update (>= 1).
      name: prefix of the shadow variables' names.
    """

    def __init__(self, variables, iter_size, name="accumulator"):
        self.iter_size = positive_int("iter_size", iter_size)
        self.variables = list(variables)
        self.shadows = [
            keras.Variable(
                tf.zeros(v.shape, v.dtype),
                trainable=False,
                aggregation="sum",
                synchronization="on_read",
                name=f"{name}_{i}",
            )
            for i, v in enumerate(self.variables)
        ]

    def accumulate(self, grads, weight=None):
        """Adds one micro-batch's gradients (aligned with `variables`; None counts as zero),
        multiplied by `weight` (a scalar) if given."""
        if len(grads) != len(self.shadows):
            raise ValueError(f"Expected {len(self.shadows)} gradients, received {len(grads)}.")
        for shadow, grad in zip(self.shadows, grads):
            if grad is not None:
                grad = tf.cast(grad, shadow.dtype)
                shadow.assign_add(grad if weight is None else grad * tf.cast(weight, shadow.dtype))

    def gradients(self):
        """The accumulated gradients normalised by `iter_size` (Caffe's normalisation)."""
        return [shadow.value / self.iter_size for shadow in self.shadows]

    def reset(self):
        """Zeroes the shadows; call before the first micro-batch of an update."""
        for shadow in self.shadows:
            shadow.assign(tf.zeros(shadow.shape, shadow.dtype))
