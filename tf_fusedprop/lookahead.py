"""Lookahead-minmax (Chavdarova et al., "Taming GANs with Lookahead-Minmax", ICLR 2021).

Both players keep slow copies of their weights. Every `every` steps (G updates) the weights of
both jump back jointly towards their slow copies:

    slow <- slow + alpha * (fast - slow);   fast <- slow

so each cycle of `every` steps of the optimizers (the fast weights) moves the slow weights a
fraction `alpha` of the way. On bilinear games this makes simultaneous gradient descent,
which otherwise spirals out, converge; for GANs it damps the rotation that SimGD is prone to.

It runs inside the train step (`FusedPropGAN(..., lookahead=Lookahead(...))`, applied by
`update.Updater` after a step's updates and before the EMA), in the graph: the counter is G's
optimizer's `iterations` and the slow copies are variables, saved and restored with the model.
At the start of each cycle (a step count that is a multiple of `every`, including 0) the slow
copies take the current weights: a no-op after a jump (fast == slow), and the first cycle
starts from the weights training actually starts from (restored, or set after construction).
"""

import numbers

import keras
import tensorflow as tf

from tf_fusedprop import replicas

__all__ = ["Lookahead"]


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class Lookahead:
    """Joint Lookahead of both players' trainable weights.

    Args:
      every: steps (G updates) per cycle, k >= 1 (the paper: 5 to 1,000; 1 with `alpha=1`
        changes nothing).
      alpha: the slow weights' step towards the fast ones, in (0, 1] (the paper: 0.5).
    """

    def __init__(self, every=10, alpha=0.5):
        if isinstance(every, bool) or not isinstance(every, numbers.Integral) or every < 1:
            raise ValueError(f"Lookahead's every must be a positive integer. Received: every={every!r}")
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha <= 1:
            raise ValueError(f"Lookahead's alpha must be in (0, 1]. Received: alpha={alpha!r}")
        self.every, self.alpha = int(every), float(alpha)
        self.fast = self.slow = None

    def attach(self, variables):
        """Creates the slow copies of `variables` (both players' trainable variables); returns
        them. Call it where the variables live (inside a `tf.distribute` scope for mirrored ones).

        Raises:
          ValueError: this Lookahead already follows other variables.
        """
        if self.fast is not None:
            raise ValueError("This Lookahead already follows a model; pass a new Lookahead(...) for another.")
        self.fast = list(variables)
        # Zeros until the first step's start copies the weights in (a restore loads them).
        self.slow = [
            keras.Variable(initializer="zeros", shape=v.shape, dtype=v.dtype, trainable=False, name=f"lookahead_{i}")
            for i, v in enumerate(self.fast)
        ]
        return self.slow

    def _assign(self, due, pairs):
        def assign():
            for target, value in pairs():
                target.assign(value)
            return tf.constant(True)

        return replicas.cross_replica(lambda: tf.cond(due, assign, lambda: tf.constant(False)))

    def start(self, step):
        """Before a step at step count `step` (an int64 tensor): at the start of a cycle the slow
        copies take the current weights."""
        due = tf.equal(step % self.every, 0)
        self._assign(due, lambda: [(slow, tf.identity(fast.value)) for slow, fast in zip(self.slow, self.fast)])

    def update(self, step):
        """After the step that made step count `step`: the joint jump when a cycle ends."""
        due = tf.equal(step % self.every, 0)

        def jumped():
            values = [
                s.value + tf.cast(self.alpha, s.dtype) * (f.value - s.value) for s, f in zip(self.slow, self.fast)
            ]
            return list(zip(self.slow, values)) + list(zip(self.fast, values))

        self._assign(due, jumped)

    def get_config(self):
        """Constructor arguments."""
        return {"every": self.every, "alpha": self.alpha}

    @classmethod
    def from_config(cls, config):
        """Inverse of `get_config`."""
        return cls(**config)

    def __repr__(self):
        return f"Lookahead(every={self.every}, alpha={self.alpha})"
