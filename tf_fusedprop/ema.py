"""An exponential moving average (EMA) of a model's weights, kept in a copy of the model.

GAN practice (ProGAN, StyleGAN, BigGAN) samples from a generator whose weights are an EMA of
the trained generator's: `ema = decay * ema + (1 - decay) * weights` after every update. The
copy is a separate model, so the trained weights are never overwritten (unlike Keras's
optimizer option `use_ema`, which swaps the averages into the trained variables).
"""

import math
import numbers

import keras
import tensorflow as tf

from tf_fusedprop import replicas

__all__ = ["EMA"]


def _clone(model, example_inputs):
    clone = keras.models.clone_model(model)
    if len(clone.weights) != len(model.weights):  # a subclassed model rebuilt from its config
        clone(example_inputs)  # creates its weights
    clone.set_weights(model.get_weights())
    return clone


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class EMA:
    """An EMA of a model's weights in a copy of the model (`model`, once `attach`ed).

    Trainable weights are averaged; the other weights (BatchNorm's moving statistics) are
    copied from the model at every update, so the copy normalises with the trained model's
    current statistics. `FusedPropGAN(..., ema=EMA(0.999))` follows its generator and samples,
    evaluates and exports the copy.

    With `rampup` the average's horizon grows with training, as StyleGAN2-ADA's `ema_rampup`:
    its half-life, `log(0.5) / log(decay)` updates, is at most `rampup` x the updates since
    `start`, so the copy never holds much more than the last `rampup` fraction of training
    (the first sample grids show what G has learned, not its initial weights) and reaches
    `decay` once `rampup x updates` exceeds that half-life. The decay of update `t` depends only
    on `t`, so a resumed run averages as an uninterrupted one.

    Args:
      decay: the EMA decay in [0, 1), e.g. 0.999.
      start: updates up to and including this step copy the weights (decay 0), so the average
        starts from trained rather than initial weights.
      rampup: None (the horizon is `decay`'s from the start), or a fraction in (0, 1], e.g.
        0.05 (StyleGAN2-ADA's).
    """

    def __init__(self, decay=0.999, start=0, rampup=None):
        if isinstance(decay, bool) or not isinstance(decay, numbers.Real) or not 0 <= decay < 1:
            raise ValueError(f"The EMA decay must be in [0, 1). Received: decay={decay!r}")
        if isinstance(start, bool) or not isinstance(start, numbers.Integral) or start < 0:
            raise ValueError(f"The EMA start must be an integer >= 0. Received: start={start!r}")
        if rampup is not None and (
            isinstance(rampup, bool) or not isinstance(rampup, numbers.Real) or not 0 < rampup <= 1
        ):
            raise ValueError(f"The EMA rampup must be None or in (0, 1]. Received: rampup={rampup!r}")
        self.decay, self.start = float(decay), int(start)
        self.rampup = None if rampup is None else float(rampup)
        self.source = self.model = None

    def attach(self, model, example_inputs=None):
        """Makes the copy of `model` (a built Keras model) that follows it; returns the copy.

        Call it where the model's variables live (inside a `tf.distribute` scope for a
        distributed model). `example_inputs` build the copy of a subclassed model.

        Raises:
          ValueError: this EMA already follows another model.
        """
        if self.source is not None and self.source is not model:
            raise ValueError(f"This EMA already follows {self.source.name!r}; pass a new EMA(...) for another model.")
        if self.model is None:
            self.source, self.model = model, _clone(model, example_inputs)
        return self.model

    def half_life(self):
        """`decay`'s half-life in updates (0 for decay 0)."""
        return math.log(0.5) / math.log(self.decay) if self.decay > 0 else 0.0

    def decay_at(self, step):
        """The decay of the EMA update after update number `step` (an int64 tensor): 0 up to
        `start`, then `decay`, its horizon ramped up with `rampup`."""
        decay = tf.constant(self.decay, tf.float32)
        if self.rampup is not None and self.decay > 0:
            half_life = tf.minimum(self.half_life(), self.rampup * tf.cast(step - self.start, tf.float32))
            decay = tf.pow(0.5, 1.0 / tf.maximum(half_life, 1e-6))  # 0 at a half-life of 0
        return tf.where(step <= self.start, 0.0, decay)

    def update(self, step):
        """One EMA update after update number `step` (an int64 tensor) of the source model."""
        decay = self.decay_at(step)

        def assign():
            for average, value in zip(self.model.trainable_variables, self.source.trainable_variables):
                d = tf.cast(decay, average.dtype)
                average.assign(d * average + (1 - d) * tf.cast(value, average.dtype))
            for copy, value in zip(self.model.non_trainable_variables, self.source.non_trainable_variables):
                copy.assign(value)

        replicas.cross_replica(assign)

    def get_config(self):
        """Constructor arguments."""
        config = {"decay": self.decay, "start": self.start}
        return config if self.rampup is None else {**config, "rampup": self.rampup}

    @classmethod
    def from_config(cls, config):
        """Inverse of `get_config`."""
        return cls(**config)

    def __repr__(self):
        rampup = "" if self.rampup is None else f", rampup={self.rampup}"
        return f"EMA(decay={self.decay}, start={self.start}{rampup})"
