"""An exponential moving average (EMA) of a model's weights, kept in a copy of the model.

GAN practice (ProGAN, StyleGAN, BigGAN) samples from a generator whose weights are an EMA of
the trained generator's: `ema = decay * ema + (1 - decay) * weights` after every update. The
copy is a separate model, so the trained weights are never overwritten (unlike Keras's
optimizer option `use_ema`, which swaps the averages into the trained variables).
"""

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

    Args:
      decay: the EMA decay in [0, 1), e.g. 0.999.
      start: updates up to and including this step copy the weights (decay 0), so the average
        starts from trained rather than initial weights.
    """

    def __init__(self, decay=0.999, start=0):
        if isinstance(decay, bool) or not isinstance(decay, numbers.Real) or not 0 <= decay < 1:
            raise ValueError(f"The EMA decay must be in [0, 1). Received: decay={decay!r}")
        if isinstance(start, bool) or not isinstance(start, numbers.Integral) or start < 0:
            raise ValueError(f"The EMA start must be an integer >= 0. Received: start={start!r}")
        self.decay, self.start = float(decay), int(start)
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

    def update(self, step):
        """One EMA update after update number `step` (an int64 tensor) of the source model."""
        decay = tf.where(step <= self.start, 0.0, self.decay)

        def assign():
            for average, value in zip(self.model.trainable_variables, self.source.trainable_variables):
                d = tf.cast(decay, average.dtype)
                average.assign(d * average + (1 - d) * tf.cast(value, average.dtype))
            for copy, value in zip(self.model.non_trainable_variables, self.source.non_trainable_variables):
                copy.assign(value)

        replicas.cross_replica(assign)

    def get_config(self):
        """Constructor arguments."""
        return {"decay": self.decay, "start": self.start}

    @classmethod
    def from_config(cls, config):
        """Inverse of `get_config`."""
        return cls(**config)

    def __repr__(self):
        return f"EMA(decay={self.decay}, start={self.start})"
