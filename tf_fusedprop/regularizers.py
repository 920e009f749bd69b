"""Gradient penalties on D: R1 (Mescheder et al. 2018) and WGAN-GP (Gulrajani et al. 2017).

A regularizer maps the gradient of D's output with respect to D's input, on the rows it
names (`rows`), to a scalar added to D's objective. `tf_fusedprop.steps` computes that input
gradient inside the step's one D call (a double backward pass), so the penalty joins D's
objective in the same step under every form, including the single-pass ones: the penalty
depends on D's parameters only, and its rows carry factor 1 in InvFusedProp's scaling.

* `R1(gamma)`: `gamma / 2 * E_real ||grad_x D(x)||^2` on the real samples.
* `GradientPenalty(weight)`: `weight * E (||grad_x D(x_hat)||_2 - 1)^2` on interpolates
  `x_hat = eps * real + (1 - eps) * fake`, `eps ~ U[0, 1]` per sample, with `fake` a constant
  of the penalty (no gradient reaches G through it, so G's SimGD gradient is unchanged).

Lazy regularization (StyleGAN2): apply a penalty every `k` steps with its weight multiplied by
`k` (`scaled(k)`); `FusedPropGAN(reg_every=k)` does that.
"""

import tensorflow as tf

__all__ = ["GradientPenalty", "R1", "from_config"]


def _squared_norms(gradients):
    """Per-sample squared L2 norm of `[batch, ...]` gradients, in float32 or wider."""
    gradients = tf.cast(gradients, tf.float32) if gradients.dtype.size < 4 else gradients
    return tf.reduce_sum(tf.reshape(tf.square(gradients), [tf.shape(gradients)[0], -1]), axis=1)


class R1:
    """R1 penalty `gamma / 2 * mean_i ||grad_x D(x_i)||^2` over the real samples.

    Args:
      gamma: the weight (StyleGAN2 uses 10 at 1024 px, ~0.01-1 at small resolutions).
    """

    rows = "real"

    def __init__(self, gamma):
        if not gamma > 0:
            raise ValueError(f"R1 needs gamma > 0. Received: gamma={gamma!r}")
        self.gamma = float(gamma)

    def __call__(self, gradients):
        """The penalty of the real samples' input gradients `[batch, ...]`."""
        return 0.5 * self.gamma * tf.reduce_mean(_squared_norms(gradients))

    def scaled(self, factor):
        """The same penalty with its weight multiplied by `factor` (lazy regularization)."""
        return R1(self.gamma * factor)

    def __repr__(self):
        return f"R1(gamma={self.gamma})"


class GradientPenalty:
    """WGAN-GP `weight * mean_i (||grad_x D(x_hat_i)||_2 - target)^2` over interpolates.

    Args:
      weight: lambda of Gulrajani et al. (10 in the paper).
      target: the gradient norm the penalty pulls towards (1: 1-Lipschitz).
    """

    rows = "interpolates"

    def __init__(self, weight=10.0, target=1.0):
        if not weight > 0:
            raise ValueError(f"GradientPenalty needs weight > 0. Received: weight={weight!r}")
        self.weight, self.target = float(weight), float(target)

    def __call__(self, gradients):
        """The penalty of the interpolates' input gradients `[batch, ...]`."""
        norms = tf.sqrt(_squared_norms(gradients) + 1e-12)  # finite gradient at a zero norm
        return self.weight * tf.reduce_mean(tf.square(norms - self.target))

    def scaled(self, factor):
        """The same penalty with its weight multiplied by `factor` (lazy regularization)."""
        return GradientPenalty(self.weight * factor, self.target)

    def __repr__(self):
        return f"GradientPenalty(weight={self.weight}, target={self.target})"


def from_config(r1_gamma=0.0, gp_weight=0.0):
    """The regularizers that a config's `r1_gamma` / `gp_weight` (0: off) ask for, as a tuple."""
    regularizers = []
    if r1_gamma:
        regularizers.append(R1(r1_gamma))
    if gp_weight:
        regularizers.append(GradientPenalty(gp_weight))
    return tuple(regularizers)
