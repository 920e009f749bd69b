"""The five GAN losses of the FusedProp paper (Table 1), one object each.

Every loss maps D's raw per-sample output `y` (a logit, shape `[batch]`) to per-sample values:

* `d_real(y)`: D's loss on a real sample, `L_D^R`;
* `d_fake(y)`: D's loss on a generated sample, `L_D`;
* `g(y)`: G's loss on a generated sample, `L_G`;
* `lambda_(y) = L_G'(y) / L_D'(y)`: FusedProp's factor, applied to the gradient reaching G;
* `lambda_inv(y) = L_D'(y) / L_G'(y)`: InvFusedProp's factor, applied inside D's layers.

Factors are stop-gradient constants of the step. Where the exact factor does not fit the
dtype (e.g. `exp(-y)` for y < -88 in float32) or is a division by zero, it *saturates* at
`+-finfo(dtype).max` instead of becoming inf or NaN, so gradients stay finite; a saturated
factor only appears where the form in use cannot be exact anyway (the upstream gradient it
multiplies has itself underflowed), which is why the `adaptive` form picks, per sample, the
factor whose magnitude is at most 1.

All losses share one signature, so training code never branches on a loss name.
"""

import tensorflow as tf

from tf_fusedprop._checks import Registry

__all__ = [
    "GANLoss",
    "Minimax",
    "NonSaturating",
    "Wasserstein",
    "LeastSquares",
    "Hinge",
    "get",
    "names",
]


def _saturate(x):
    limit = x.dtype.max
    return tf.clip_by_value(x, -limit, limit)


def _saturating_exp(x):
    # exp overflows to inf, which the clip maps to finfo.max (never NaN).
    return _saturate(tf.exp(x))


class GANLoss:
    """Base class: a GAN loss with its FusedProp factors.

    Subclasses define `d_real`, `d_fake`, `g`, `lambda_` and `lambda_inv`; they may override
    `prefers_fused` and `has_lambda`.
    """

    name = None
    #: False when `lambda_` is undefined: form `fused` is then unavailable and `adaptive`
    #: always uses the inverse form (`tf_fusedprop.forms.supports`).
    has_lambda = True

    def d_real(self, y):
        """Per-sample D loss on real samples."""
        raise NotImplementedError

    def d_fake(self, y):
        """Per-sample D loss on generated samples."""
        raise NotImplementedError

    def g(self, y):
        """Per-sample G loss on generated samples."""
        raise NotImplementedError

    def lambda_(self, y):
        """Per-sample FusedProp factor `L_G'(y) / L_D'(y)` (saturating, never NaN)."""
        raise NotImplementedError

    def lambda_inv(self, y):
        """Per-sample InvFusedProp factor `L_D'(y) / L_G'(y)` (saturating, never NaN)."""
        raise NotImplementedError

    def prefers_fused(self, y):
        """Boolean per sample: True where `|lambda_(y)| <= 1`, i.e. the fused form is the
        numerically safer one; the `adaptive` form uses the inverse form elsewhere."""
        return tf.abs(self.lambda_inv(y)) >= 1

    def __repr__(self):
        return f"tf_fusedprop.losses.get({self.name!r})"


class Minimax(GANLoss):
    """Original (saturating) minimax GAN loss (Goodfellow et al., 2014).

    L_D^R = softplus(-y), L_D = softplus(y), L_G = -softplus(y); lambda = lambda_inv = -1.
    """

    name = "minimax"

    def d_real(self, y):
        return tf.nn.softplus(-y)

    def d_fake(self, y):
        return tf.nn.softplus(y)

    def g(self, y):
        return -tf.nn.softplus(y)

    def lambda_(self, y):
        return -tf.ones_like(y)

    def lambda_inv(self, y):
        return -tf.ones_like(y)


class NonSaturating(GANLoss):
    """Non-saturating GAN loss (Goodfellow et al., 2014).

    L_D^R = softplus(-y), L_D = softplus(y), L_G = softplus(-y);
    lambda = -exp(-y), lambda_inv = -exp(y). The fused form is exact for y >= -88 in float32
    and the inverse form for y <= 88; `adaptive` uses fused where y >= 0, inverse elsewhere.
    """

    name = "nonsaturating"

    def d_real(self, y):
        return tf.nn.softplus(-y)

    def d_fake(self, y):
        return tf.nn.softplus(y)

    def g(self, y):
        return tf.nn.softplus(-y)

    def lambda_(self, y):
        return -_saturating_exp(-y)

    def lambda_inv(self, y):
        return -_saturating_exp(y)

    def prefers_fused(self, y):
        return y >= 0


class Wasserstein(GANLoss):
    """Wasserstein GAN loss (Arjovsky et al., 2017), without the Lipschitz constraint.

    L_D^R = -y, L_D = y, L_G = -y; lambda = lambda_inv = -1.
    """

    name = "wasserstein"

    def d_real(self, y):
        return -y

    def d_fake(self, y):
        return y

    def g(self, y):
        return -y

    def lambda_(self, y):
        return -tf.ones_like(y)

    def lambda_inv(self, y):
        return -tf.ones_like(y)


class LeastSquares(GANLoss):
    """Least-squares GAN loss (Mao et al., 2017), targets 0 (fake) and 1 (real).

    L_D^R = (y-1)^2, L_D = y^2, L_G = (y-1)^2; lambda = 1 - 1/y, lambda_inv = y / (y-1).
    lambda saturates at y = 0 (where D's fake gradient vanishes) and lambda_inv at y = 1
    (where G's gradient vanishes); `adaptive` uses fused where y >= 1/2.
    """

    name = "least_squares"

    def d_real(self, y):
        return tf.square(y - 1)

    def d_fake(self, y):
        return tf.square(y)

    def g(self, y):
        return tf.square(y - 1)

    def lambda_(self, y):
        return _saturate(1 - tf.math.reciprocal(y))

    def lambda_inv(self, y):
        return _saturate(y / (y - 1))

    def prefers_fused(self, y):
        return y >= 0.5


class Hinge(GANLoss):
    """Hinge GAN loss (Lim & Ye 2017; Miyato et al. 2018).

    L_D^R = relu(1-y), L_D = relu(1+y), L_G = -y; lambda_inv = -H(y+1) (0 at y = -1, like
    autodiff of relu). lambda is undefined (L_D' vanishes for y < -1), so only the inverse
    form (and `adaptive`, which then equals it) is available, besides the two-pass baselines.
    """

    name = "hinge"
    has_lambda = False

    def d_real(self, y):
        return tf.nn.relu(1 - y)

    def d_fake(self, y):
        return tf.nn.relu(1 + y)

    def g(self, y):
        return -y

    def lambda_(self, y):
        raise ValueError(
            "The hinge loss has no FusedProp factor lambda (L_D' is 0 for y < -1). "
            "Use form='inverse' (InvFusedProp) with the hinge loss."
        )

    def lambda_inv(self, y):
        return -tf.cast(y + 1 > 0, y.dtype)


_REGISTRY = Registry(
    "GAN loss", {cls.name: cls() for cls in (Minimax, NonSaturating, Wasserstein, LeastSquares, Hinge)}, argument="loss"
)


def names():
    """The registered loss names."""
    return _REGISTRY.names()


def get(identifier):
    """Returns the loss object for a name (or passes a `GANLoss` through).

    Raises:
      ValueError: for an unknown name; the message lists the valid names.
    """
    return identifier if isinstance(identifier, GANLoss) else _REGISTRY.get(identifier)
