"""scale_gradient and the per-sample parameter-gradient scaling primitives."""

import threading

import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from tests import testing_utils as tu
from tf_fusedprop import ops

SCALE = np.array([2.0, -0.5, 0.0, 3.0])


def per_sample_reference(fn, x, params, scale):
    """sum_i scale_i * d(sum(upstream_i * fn(x_i)))/d params, one sample at a time."""
    upstream = tf.random.stateless_normal(fn(x, *params).shape, seed=[1, 2], dtype=x.dtype)
    total = [tf.zeros_like(p) for p in params]
    for i in range(x.shape[0]):
        with tf.GradientTape() as tape:
            tape.watch(params)
            out = tf.reduce_sum(upstream[i : i + 1] * fn(x[i : i + 1], *params))
        total = [t + scale[i] * g for t, g in zip(total, tape.gradient(out, params))]
    return upstream, total


def dense(x, w, b):
    return tf.tensordot(x, w, axes=[[x.shape.rank - 1], [0]]) + b


def conv(x, w, b):
    return tf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME") + b


class ScalePerSampleTest(tu.TestCase):
    def test_factor_beyond_float16_range_multiplies_in_float32(self):
        gradient = tf.constant([1e-5, 2e-5], tf.float16)
        factor = tf.constant([-np.exp(12.0), 1.0], tf.float32)  # exp(12) > float16's max
        scaled = ops.scale_per_sample(gradient, factor)
        self.assertEqual(scaled.dtype, tf.float16)
        self.assertTrue(np.all(np.isfinite(scaled.numpy())))
        self.assertAllClose(scaled, [-1e-5 * np.exp(12.0), 2e-5], rtol=2e-3)


class ScaleGradientTest(tu.TestCase):
    @parameterized.parameters(False, True)
    def test_identity_forward_and_scaled_backward(self, deferred):
        x = tf.random.normal([4, 3, 2])
        scale = tf.constant(SCALE, tf.float32)
        factor = ops.DeferredFactor() if deferred else scale
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = ops.scale_gradient(x, factor)
            loss = tf.reduce_sum(y * x)
        if deferred:
            factor.set(scale)
        self.assertAllEqual(y, x)
        self.assertAllClose(tape.gradient(loss, x), x + SCALE[:, None, None] * x)

    def test_unit_scale_matches_numeric_jacobian(self):
        x = tf.random.normal([4, 3], dtype=tf.float64)
        theoretical, numeric = tf.test.compute_gradient(lambda v: ops.scale_gradient(v, tf.ones([4], tf.float64)), [x])
        self.assertAllClose(theoretical, numeric)

    def test_in_tf_function(self):
        x = tf.random.normal([4, 5])

        @tf.function
        def grad(x):
            factor = ops.DeferredFactor()
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = ops.scale_gradient(x, factor)
            factor.set(tf.constant(SCALE, tf.float32))
            return tape.gradient(y, x)

        self.assertAllClose(grad(x), np.broadcast_to(SCALE[:, None], [4, 5]))


class ParameterGradientScalingTest(tu.TestCase):
    CASES = {
        "dense": (dense, ops.scaled_dense, [4, 5], [5, 3]),
        "dense_rank3": (dense, ops.scaled_dense, [4, 2, 5], [5, 3]),
        "conv": (
            conv,
            lambda x, w, b, h: ops.scaled_conv2d(x, w, b, h, (2, 2), "same", (1, 1)),
            [4, 5, 5, 2],
            [3, 3, 2, 3],
        ),
    }

    @parameterized.parameters(*CASES)
    def test_parameter_gradients_scaled_input_gradient_not(self, case):
        reference, scaled, x_shape, w_shape = self.CASES[case]
        x = tf.random.normal(x_shape, dtype=tf.float64)
        w = tf.random.normal(w_shape, dtype=tf.float64)
        b = tf.random.normal(w_shape[-1:], dtype=tf.float64)
        upstream, expected = per_sample_reference(reference, x, [w, b], SCALE)
        with ops.ParameterGradientScaling() as scaling:
            with tf.GradientTape() as tape:
                tape.watch([x, w, b])
                out = scaled(x, w, b, scaling)
            scaling.set(tf.constant(SCALE))
        dx, dw, db = tape.gradient(out, [x, w, b], output_gradients=upstream)
        with tf.GradientTape() as plain:
            plain.watch(x)
            plain_out = reference(x, w, b)
        self.assertAllClose(out, plain_out)
        self.assertAllClose(dx, plain.gradient(plain_out, x, output_gradients=upstream), rtol=1e-12)
        self.assertAllClose(dw, expected[0], rtol=1e-12)
        self.assertAllClose(db, expected[1], rtol=1e-12)

    @parameterized.parameters(*CASES)
    def test_unit_scale_matches_numeric_jacobian(self, case):
        _, scaled, x_shape, w_shape = self.CASES[case]
        args = [tf.random.normal(s, dtype=tf.float64) for s in (x_shape, w_shape, w_shape[-1:])]
        with ops.ParameterGradientScaling() as scaling:
            scaling.set(tf.ones([x_shape[0]], tf.float64))
            theoretical, numeric = tf.test.compute_gradient(lambda x, w, b: scaled(x, w, b, scaling), args)
        for t, n in zip(theoretical, numeric):
            self.assertAllClose(t, n, rtol=1e-6, atol=1e-6)

    def test_embedding_gradient_scaled_per_sample(self):
        table = tf.random.normal([5, 3], dtype=tf.float64)
        ids = tf.constant([1, 4, 1, 0])
        upstream = tf.random.normal([4, 3], dtype=tf.float64)
        with ops.ParameterGradientScaling() as scaling:
            with tf.GradientTape() as tape:
                tape.watch(table)
                out = ops.scaled_embedding(ids, table, scaling)
            scaling.set(tf.constant(SCALE))
        expected = np.zeros([5, 3])
        for i, row in enumerate(ids.numpy()):
            expected[row] += SCALE[i] * upstream[i].numpy()
        self.assertAllClose(out, tf.gather(table, ids))
        self.assertAllClose(tape.gradient(out, table, output_gradients=upstream), expected, rtol=1e-12)

    def test_unset_factor_is_a_clear_error(self):
        x, w = tf.ones([2, 3]), tf.ones([3, 1])
        with ops.ParameterGradientScaling() as scaling:
            with tf.GradientTape() as tape:
                tape.watch(w)
                out = ops.scaled_dense(x, w, None, scaling)
        with self.assertRaisesRegex(RuntimeError, "per-sample factor before it was set"):
            tape.gradient(out, w)

    def test_scopes_nest_and_are_per_thread(self):
        self.assertIsNone(ops.active_parameter_gradient_scaling())
        seen_in_thread = []
        with ops.ParameterGradientScaling() as outer:
            with ops.ParameterGradientScaling() as inner:
                self.assertIs(ops.active_parameter_gradient_scaling(), inner)
                thread = threading.Thread(target=lambda: seen_in_thread.append(ops.active_parameter_gradient_scaling()))
                thread.start()
                thread.join()
            self.assertIs(ops.active_parameter_gradient_scaling(), outer)
        self.assertIsNone(ops.active_parameter_gradient_scaling())
        self.assertEqual(seen_in_thread, [None])


if __name__ == "__main__":
    tf.test.main()
