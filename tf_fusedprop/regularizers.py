"""Gradient penalties on D: R1 (Mescheder et al. 2018) and WGAN-GP (Gulrajani et al. 2017).

A regularizer names the rows of D's call whose input gradient it penalizes (`inputs(real,
fake)`: the real samples themselves, or rows of its own such as interpolates) and maps that
gradient to a scalar added to D's objective (`__call__`). `tf_fusedprop.steps` forms the input
gradient inside the step's one D call (a double backward pass), so the penalty joins D's
objective in the same step under every form, including the single-pass ones: the penalty
depends on D's parameters only, and its rows carry factor 1 in InvFusedProp's scaling.

* `R1(gamma)`: `gamma / 2 * E_real ||grad_x D(x)||^2` on the real samples.
* `GradientPenalty(weight)`: `weight * E (||grad_x D(x_hat)||_2 - 1)^2` on interpolates
  `x_hat = eps * real + (1 - eps) * fake`, `eps ~ U[0, 1]` per sample, with `fake` a constant
  of the penalty (no gradient reaches G through it, so G's SimGD gradient is unchanged).

Lazy regularization (StyleGAN2): `every=k` applies a penalty on every k-th D update only, with
its weight multiplied by k (`scaled(k)`); `when_due` picks the penalties due at an update.
"""

import copy

import keras
import tensorflow as tf

from tf_fusedprop._checks import positive_int

__all__ = ["GradientPenalty", "R1", "Regularizer", "when_due"]


def _squared_norms(gradients):
    """Per-sample squared L2 norm of `[batch, ...]` gradients, in float32 or wider."""
    gradients = tf.cast(gradients, tf.float32) if gradients.dtype.size < 4 else gradients
    return tf.reduce_sum(tf.reshape(tf.square(gradients), [tf.shape(gradients)[0], -1]), axis=1)


class Regularizer:
    """A penalty on the gradient of D's output with respect to D's input.

    Subclasses set `inputs`, `__call__`, `scaled` and `get_config`. `seeded` regularizers draw
    randomness every step: `FusedPropGAN` gives each a seed stream of its own and calls `bind`
    with the step's seed.

    Args:
      every: apply the penalty on every `every`-th D update, its weight multiplied by `every`.
    """

    seeded = False

    def __init__(self, every=1):
        self.every = positive_int("every", every)

    def inputs(self, real, fake):
        """The D inputs whose gradient the penalty reads: `real` itself reuses D's real rows."""
        return real

    def bind(self, seed):
        """This regularizer with the step's `[2]` seed fixed (itself if it draws nothing)."""
        return self

    @classmethod
    def from_config(cls, config):
        """Inverse of `get_config`."""
        return cls(**config)


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class R1(Regularizer):
    """R1 penalty `gamma / 2 * mean_i ||grad_x D(x_i)||^2` over the real samples.

    Args:
      gamma: the weight (StyleGAN2 uses 10 at 1024 px, ~0.01-1 at small resolutions).
      every: lazy regularization interval in D updates (StyleGAN2: 16).
    """

    def __init__(self, gamma, every=1):
        if not gamma > 0:
            raise ValueError(f"R1 needs gamma > 0. Received: gamma={gamma!r}")
        super().__init__(every)
        self.gamma = float(gamma)

    def __call__(self, gradients):
        """The penalty of the real samples' input gradients `[batch, ...]`."""
        return 0.5 * self.gamma * tf.reduce_mean(_squared_norms(gradients))

    def scaled(self, factor):
        """The same penalty with its weight multiplied by `factor` (lazy regularization)."""
        return R1(self.gamma * factor, self.every)

    def get_config(self):
        """Constructor arguments."""
        return {"gamma": self.gamma, "every": self.every}

    def __repr__(self):
        return f"R1(gamma={self.gamma}, every={self.every})"


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class GradientPenalty(Regularizer):
    """WGAN-GP `weight * mean_i (||grad_x D(x_hat_i)||_2 - target)^2` over interpolates.

    The interpolation weights come from the step's seed (`bind`); unbound, from TensorFlow's
    global generator.

    Args:
      weight: lambda of Gulrajani et al. (10 in the paper).
      target: the gradient norm the penalty pulls towards (1: 1-Lipschitz).
      every: lazy regularization interval in D updates.
    """

    seeded = True

    def __init__(self, weight=10.0, target=1.0, every=1):
        if not weight > 0:
            raise ValueError(f"GradientPenalty needs weight > 0. Received: weight={weight!r}")
        super().__init__(every)
        self.weight, self.target = float(weight), float(target)
        self.seed = None

    def inputs(self, real, fake):
        """Interpolates between `real` and (a constant copy of) `fake`, one weight per sample."""
        shape = tf.concat([tf.shape(real)[:1], tf.ones([tf.rank(real) - 1], tf.int32)], axis=0)
        if self.seed is None:
            weights = tf.random.uniform(shape, dtype=real.dtype)
        else:
            weights = tf.random.stateless_uniform(shape, seed=self.seed, dtype=real.dtype)
        return weights * real + (1 - weights) * tf.stop_gradient(fake)

    def __call__(self, gradients):
        """The penalty of the interpolates' input gradients `[batch, ...]`."""
        norms = tf.sqrt(_squared_norms(gradients) + 1e-12)  # finite gradient at a zero norm
        return self.weight * tf.reduce_mean(tf.square(norms - self.target))

    def bind(self, seed):
        """A copy whose interpolation weights come from the `[2]` int `seed`."""
        bound = copy.copy(self)
        bound.seed = seed
        return bound

    def scaled(self, factor):
        """The same penalty with its weight multiplied by `factor` (lazy regularization)."""
        scaled = copy.copy(self)
        scaled.weight = self.weight * factor
        return scaled

    def get_config(self):
        """Constructor arguments."""
        return {"weight": self.weight, "target": self.target, "every": self.every}

    def __repr__(self):
        return f"GradientPenalty(weight={self.weight}, target={self.target}, every={self.every})"


def when_due(compute, regularizers, d_updates):
    """`compute(due)` with the tuple of `regularizers` due at D update number `d_updates`.

    A regularizer with `every=k` is due when `d_updates % k == 0` and then joins with its weight
    multiplied by k; one with `every=1` is always due. Each lazy regularizer adds a `tf.cond`
    (both branches traced), so an update not due for a penalty skips its double backward pass.
    """
    regularizers = tuple(regularizers)

    def decide(index, chosen):
        if index == len(regularizers):
            return compute(tuple(r.scaled(r.every) for r, on in zip(regularizers, chosen) if on))
        if regularizers[index].every == 1:
            return decide(index + 1, chosen + (True,))
        due = tf.equal(d_updates % regularizers[index].every, 0)
        return tf.cond(due, lambda: decide(index + 1, chosen + (True,)), lambda: decide(index + 1, chosen + (False,)))

    return decide(0, ())
