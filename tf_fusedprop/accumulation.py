"""Gradient accumulation over micro-batches (Caffe's `iter_size`).

`iter_size` micro-batches of `b` samples give the update of one batch of `iter_size * b`
samples while holding only one micro-batch's activations: gradients are summed into shadow
variables and the optimizer applies `sum / iter_size` once, so `optimizer.iterations`, Adam's
bias correction and learning-rate schedules count real updates, not micro-batches.
`accumulate` runs one phase of a step over the micro-batches of its batch.
"""

import keras
import tensorflow as tf

from tf_fusedprop._checks import positive_int
from tf_fusedprop.batch import micro_batch_bounds

__all__ = ["GradientAccumulator", "accumulate", "accumulators"]


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


def accumulators(models, iter_size):
    """`{player: GradientAccumulator}` for `models` (player -> model) when `iter_size` > 1, else {}."""
    if iter_size == 1:
        return {}
    return {player: GradientAccumulator(m.trainable_variables, iter_size, player) for player, m in models.items()}


def accumulate(compute, batch, iter_size, accumulators, logs):
    """Runs `compute` on the whole batch, or on `iter_size` micro-batches one after another.

    Args:
      compute: `Batch -> (grads, values)`: `grads` maps players to gradients, `values` maps the
        names in `logs` to scalars (as a `forms.Phase` computes them).
      batch: the step's `Batch`; a batch that does not split evenly is split into micro-batches
        that differ by at most one sample, each weighted by its size.
      iter_size: micro-batches per update.
      accumulators: a `GradientAccumulator` per player of `grads` (unused when `iter_size` is 1).
      logs: the names of `values`.

    Returns:
      `(grads, values)` of the whole batch: micro-batch gradients and values averaged with
      weights proportional to their sizes.
    """
    if iter_size == 1:
        return compute(batch)
    n = tf.shape(batch.real if batch.real is not None else batch.z)[0]
    bounds = micro_batch_bounds(n, iter_size)
    parts = tf.size(bounds) - 1
    for accumulator in accumulators.values():
        accumulator.reset()

    def body(i, sums):
        start, stop = bounds[i], bounds[i + 1]
        grads, values = compute(batch.rows(start, stop))
        # The accumulators divide by iter_size: weight (size * iter_size / n) makes that the
        # batch mean; exactly 1 when the batch splits evenly.
        weight = tf.cast((stop - start) * iter_size, tf.float32) / tf.cast(n, tf.float32)
        for player, accumulator in accumulators.items():
            accumulator.accumulate(grads[player], weight=weight)
        return i + 1, [s + weight / iter_size * tf.cast(values[name], tf.float32) for s, name in zip(sums, logs)]

    # parallel_iterations=1: micro-batches run strictly one after another, so only one
    # micro-batch's activations are alive at a time.
    _, sums = tf.while_loop(
        lambda i, _: i < parts, body, (tf.constant(0), [tf.zeros([])] * len(logs)), parallel_iterations=1
    )
    return {player: a.gradients() for player, a in accumulators.items()}, dict(zip(logs, sums))
