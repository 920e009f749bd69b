"""The five losses: values, factors (against autodiff), saturation, registry."""

import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from tests import testing_utils as tu
from tests import tfgan_oracle
from tf_fusedprop import forms, losses

Y = np.array([-3.0, -1.5, -0.7, -0.2, 0.3, 0.8, 1.7, 4.0])
softplus = lambda x: np.log1p(np.exp(x))  # noqa: E731

CLOSED_FORMS = {
    "minimax": (lambda y: softplus(-y), softplus, lambda y: -softplus(y)),
    "nonsaturating": (lambda y: softplus(-y), softplus, lambda y: softplus(-y)),
    "wasserstein": (lambda y: -y, lambda y: y, lambda y: -y),
    "least_squares": (lambda y: (y - 1) ** 2, lambda y: y**2, lambda y: (y - 1) ** 2),
    "hinge": (lambda y: np.maximum(0, 1 - y), lambda y: np.maximum(0, 1 + y), lambda y: -y),
}


def derivatives(loss, y):
    y = tf.constant(y, tf.float64)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(y)
        d_fake, g = loss.d_fake(y), loss.g(y)
    return tape.gradient(d_fake, y).numpy(), tape.gradient(g, y).numpy()


class LossTest(tu.TestCase):
    @parameterized.parameters(*losses.names())
    def test_values_match_table_1(self, name):
        loss = losses.get(name)
        y = tf.constant(Y, tf.float64)
        for method, expected in zip((loss.d_real, loss.d_fake, loss.g), CLOSED_FORMS[name]):
            self.assertAllClose(method(y), expected(Y), rtol=1e-12)

    @parameterized.parameters(*losses.names())
    def test_lambda_inv_is_ratio_of_derivatives(self, name):
        loss = losses.get(name)
        d_prime, g_prime = derivatives(loss, Y)
        self.assertAllClose(loss.lambda_inv(tf.constant(Y, tf.float64)), d_prime / g_prime, rtol=1e-12)

    @parameterized.parameters("minimax", "nonsaturating", "wasserstein", "least_squares")
    def test_lambda_is_ratio_of_derivatives(self, name):
        loss = losses.get(name)
        d_prime, g_prime = derivatives(loss, Y)
        self.assertAllClose(loss.lambda_(tf.constant(Y, tf.float64)), g_prime / d_prime, rtol=1e-12)

    @parameterized.parameters("minimax", "nonsaturating", "wasserstein", "least_squares")
    def test_prefers_fused_exactly_where_lambda_is_at_most_one(self, name):
        loss = losses.get(name)
        y = tf.constant(np.linspace(-5, 5, 101), tf.float64)
        self.assertAllEqual(loss.prefers_fused(y), np.abs(loss.lambda_(y)) <= 1)

    @parameterized.parameters(*losses.names())
    def test_factors_finite_and_float64_accurate_at_100(self, name):
        loss = losses.get(name)
        methods = [loss.lambda_inv] + ([loss.lambda_] if loss.has_lambda else [])
        for method in methods:
            in32 = method(tf.constant([-100.0, 100.0], tf.float32)).numpy()
            in64 = method(tf.constant([-100.0, 100.0], tf.float64)).numpy()
            self.assertTrue(np.all(np.isfinite(in32)), msg=f"{name}: {in32}")
            representable = np.abs(in64) < np.finfo(np.float32).max
            self.assertAllClose(in32[representable], in64[representable], rtol=1e-6, atol=1e-37)
            self.assertTrue(np.all(np.abs(in32[~representable]) == np.finfo(np.float32).max))

    def test_factors_saturate_at_division_by_zero(self):
        loss = losses.get("least_squares")
        self.assertAllEqual(np.isfinite(loss.lambda_(tf.constant([0.0, -0.0]))), [True, True])
        self.assertTrue(np.isfinite(loss.lambda_inv(tf.constant([1.0]))).all())

    def test_hinge_refuses_lambda(self):
        hinge = losses.get("hinge")
        self.assertFalse(hinge.has_lambda)
        with self.assertRaisesRegex(ValueError, "hinge.*form='inverse'"):
            hinge.lambda_(tf.constant([0.0]))

    def test_registry(self):
        self.assertEqual(losses.names(), ("minimax", "nonsaturating", "wasserstein", "least_squares", "hinge"))
        self.assertIs(losses.get(losses.get("hinge")), losses.get("hinge"))
        with self.assertRaisesRegex(ValueError, r"Received: loss='lsgan'\. Valid names: minimax, nonsaturating"):
            losses.get("lsgan")


# TF-GAN's functions for each loss: (D's loss on (real, fake), G's loss on fake, our objective =
# scale * theirs + offset). Their least-squares losses carry a 1/2 ours do not, their minimax G loss
# is minus their D loss with real logits fixed at 1 (offset softplus(-1)), and their default label
# smoothing (0.25 on D's real term) is turned off.
def _tfgan_losses(impl):
    no_smoothing = {"label_smoothing": 0.0}
    return {
        "minimax": (
            lambda r, f: impl.minimax_discriminator_loss(r, f, **no_smoothing),
            lambda f: impl.minimax_generator_loss(f, **no_smoothing),
            1.0,
            float(softplus(-1.0)),
        ),
        "nonsaturating": (
            lambda r, f: impl.modified_discriminator_loss(r, f, **no_smoothing),
            lambda f: impl.modified_generator_loss(f, **no_smoothing),
            1.0,
            0.0,
        ),
        "wasserstein": (impl.wasserstein_discriminator_loss, impl.wasserstein_generator_loss, 1.0, 0.0),
        "least_squares": (impl.least_squares_discriminator_loss, impl.least_squares_generator_loss, 2.0, 0.0),
        "hinge": (impl.wasserstein_hinge_discriminator_loss, impl.wasserstein_generator_loss, 1.0, 0.0),
    }


class TFGANOracleTest(tu.TestCase):
    """Our losses and factors against TF-GAN's independent implementation (tests/tfgan_oracle.py)."""

    def setUp(self):
        super().setUp()
        self.tfgan = _tfgan_losses(tfgan_oracle.require(self, "python.losses.losses_impl"))
        self.real = tf.constant(Y[::-1].copy(), tf.float32)
        self.fake = tf.constant(Y, tf.float32)

    @parameterized.parameters(*losses.names())
    def test_objectives_equal_tfgan_losses(self, name):
        loss, (d_loss, g_loss, scale, offset) = losses.get(name), self.tfgan[name]
        ours_d = tf.reduce_mean(loss.d_real(self.real)) + tf.reduce_mean(loss.d_fake(self.fake))
        self.assertAllClose(ours_d, scale * d_loss(self.real, self.fake), rtol=1e-6, atol=1e-6)
        self.assertAllClose(tf.reduce_mean(loss.g(self.fake)), scale * g_loss(self.fake) + offset, rtol=1e-6, atol=1e-6)

    @parameterized.parameters(*losses.names())
    def test_factors_are_ratios_of_tfgan_gradients(self, name):
        loss, (d_loss, g_loss, _, _) = losses.get(name), self.tfgan[name]
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(self.fake)
            d_value, g_value = d_loss(self.real, self.fake), g_loss(self.fake)
        d_grad, g_grad = tape.gradient(d_value, self.fake), tape.gradient(g_value, self.fake)
        self.assertAllClose(loss.lambda_inv(self.fake), d_grad / g_grad, rtol=1e-5)
        if forms.supports(name, "fused"):  # Hinge has no lambda: D's fake gradient vanishes below y = -1.
            self.assertAllClose(loss.lambda_(self.fake), g_grad / d_grad, rtol=1e-5)


if __name__ == "__main__":
    tf.test.main()
