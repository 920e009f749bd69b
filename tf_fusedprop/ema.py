"""An exponential moving average (EMA) of a model's weights, kept in a copy of the model.

GAN practice (ProGAN, StyleGAN, BigGAN) samples from a generator whose weights are an EMA of
the trained generator's: `ema = decay * ema + (1 - decay) * weights` after every update. The
copy is a separate model, so the trained weights are never overwritten (unlike Keras's
optimizer option `use_ema`, which swaps the averages into the trained variables).
"""

import keras
import tensorflow as tf

__all__ = ["ExponentialMovingAverage"]


def _clone(model):
    clone = keras.models.clone_model(model)
    if len(clone.weights) != len(model.weights):  # a subclassed model rebuilt from its config
        shape = list((getattr(model, "_build_shapes_dict", None) or {}).values())[0]
        clone(tf.zeros([1] + list(shape[1:])))  # creates its weights
    clone.set_weights(model.get_weights())
    return clone


def _cross_replica(fn):
    """Runs `fn()` once for all replicas: directly, or through merge_call in a replica context."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return fn()
    return context.merge_call(lambda strategy: fn())


class ExponentialMovingAverage:
    """A copy of `model` (`self.model`) whose weights follow an EMA of `model`'s weights.

    Trainable weights are averaged; the other weights (BatchNorm's moving statistics) are
    copied from the model at every update, so the copy normalises with the trained model's
    current statistics.

    Args:
      model: the model to follow (a built Keras model).
      decay: the EMA decay in [0, 1), e.g. 0.999.
      start: updates up to and including this step copy the weights (decay 0), so the average
        starts from trained rather than initial weights.
    """

    def __init__(self, model, decay, start=0):
        if not 0 <= decay < 1:
            raise ValueError(f"The EMA decay must be in [0, 1). Received: ema_decay={decay!r}")
        if start < 0:
            raise ValueError(f"ema_start must be >= 0. Received: ema_start={start!r}")
        self.source = model
        self.model = _clone(model)
        self.decay, self.start = float(decay), int(start)

    def update(self, step):
        """One EMA update after update number `step` (an int64 tensor) of the source model."""
        decay = tf.where(step <= self.start, 0.0, self.decay)

        def assign():
            for average, value in zip(self.model.trainable_variables, self.source.trainable_variables):
                d = tf.cast(decay, average.dtype)
                average.assign(d * average + (1 - d) * tf.cast(value, average.dtype))
            for copy, value in zip(self.model.non_trainable_variables, self.source.non_trainable_variables):
                copy.assign(value)

        _cross_replica(assign)
