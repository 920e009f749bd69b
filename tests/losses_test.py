"""The five losses: values, factors (against autodiff), saturation, registry."""

import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from tests import testing_utils as tu
from tf_fusedprop import losses

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


if __name__ == "__main__":
    tf.test.main()
