"""The formulations of a convolution's weight gradient and the ops that form their kernel
gradients with them: every formulation equals TensorFlow's own gradient."""

import tensorflow as tf
from absl.testing import parameterized

from tests import testing_utils as tu
from tf_fusedprop import ops
from tf_fusedprop import weight_gradient_formulations as formulations

# (input [N, H, W, C], kernel [kh, kw, C, O], strides, padding): odd and even sizes, kernels
# wider than strides and narrower, 1x1, rows a stride leaves over at the end.
CASES = {
    "k3s1_same": ((2, 6, 5, 3), (3, 3, 3, 4), (1, 1), "SAME"),
    "k4s2_same": ((2, 8, 7, 2), (4, 4, 2, 3), (2, 2), "SAME"),
    "k3s2_valid_leftover": ((3, 9, 8, 2), (3, 3, 2, 2), (2, 2), "VALID"),
    "k2s3_same": ((2, 10, 7, 2), (2, 2, 2, 3), (3, 3), "SAME"),
    "k1s1_valid": ((2, 4, 4, 5), (1, 1, 5, 2), (1, 1), "VALID"),
    "k5x3_s2x1_same": ((2, 7, 6, 2), (5, 3, 2, 3), (2, 1), "SAME"),
}


def normal(shape, seed, dtype="float32"):
    return tf.cast(tf.random.stateless_normal(shape, seed=[seed, 7]), dtype)


def tf_gradients(x, w, b, strides, padding, dy):
    with tf.GradientTape() as tape:
        tape.watch([x, w, b])
        y = tf.nn.bias_add(tf.nn.conv2d(x, w, strides, padding), b)
    return tape.gradient(y, [x, w, b], output_gradients=dy)


class FormulationTest(tu.TestCase):
    @parameterized.product(case=list(CASES), formulation=formulations.WEIGHT_GRADIENTS)
    def test_equals_tensorflows_kernel_gradient_in_float32(self, case, formulation):
        x_shape, k_shape, strides, padding = CASES[case]
        x, w = normal(x_shape, 1), normal(k_shape, 2)
        dy = normal(tf.nn.conv2d(x, w, strides, padding).shape, 3)
        expected = tf_gradients(x, w, tf.zeros(k_shape[-1]), strides, padding, dy)[1]
        actual = formulations.weight_gradient(x, dy, k_shape, strides, padding, formulation)
        self.assertEqual(actual.shape, k_shape)
        self.assertLess(tu.max_relative_difference([actual], [expected]), 1e-5)

    @parameterized.parameters(*formulations.WEIGHT_GRADIENTS)
    def test_bfloat16_within_its_rounding_of_the_float32_gradient(self, formulation):
        x_shape, k_shape, strides, padding = (4, 8, 8, 16), (4, 4, 16, 8), (2, 2), "SAME"
        x, w = normal(x_shape, 1), normal(k_shape, 2)
        dy = normal(tf.nn.conv2d(x, w, strides, padding).shape, 3)
        exact = formulations.weight_gradient(x, dy, k_shape, strides, padding)
        x16, dy16 = tf.cast(x, tf.bfloat16), tf.cast(dy, tf.bfloat16)
        ours = formulations.weight_gradient(x16, dy16, k_shape, strides, padding, formulation)
        self.assertEqual(ours.dtype, tf.bfloat16)
        # bfloat16 keeps 8 bits: inputs and result each round by <= 2^-9 relative. TensorFlow's own
        # kernel ("native") also adds its partial sums in bfloat16 on CPUs without bfloat16 units,
        # ~2^-9 sqrt(64) more for these 64-term sums (1.2e-2 measured on an AVX2-only EPYC).
        bound = 2**-9 * (3 + 64**0.5) if formulation == "native" else 1e-2
        self.assertLess(tu.max_relative_difference([tf.cast(ours, tf.float32)], [exact]), bound)

    def test_unknown_formulation_is_one_line(self):
        with self.assertRaisesRegex(ValueError, r"^Unknown weight-gradient formulation 'im2col'\. Valid: native"):
            formulations.weight_gradient(
                tf.ones([1, 3, 3, 1]), tf.ones([1, 3, 3, 1]), (1, 1, 1, 1), (1, 1), "SAME", "im2col"
            )


class OpsTest(tu.TestCase):
    @parameterized.product(
        case=["k4s2_same", "k3s2_valid_leftover", "k5x3_s2x1_same"], formulation=formulations.WEIGHT_GRADIENTS
    )
    def test_conv2d_gradients_equal_tensorflows(self, case, formulation):
        x_shape, k_shape, strides, padding = CASES[case]
        x, w, b = normal(x_shape, 1), normal(k_shape, 2), normal(k_shape[-1:], 4)
        with tf.GradientTape() as tape:
            tape.watch([x, w, b])
            y = ops.conv2d(x, w, b, strides, padding, weight_gradient=formulation)
        dy = normal(y.shape, 3)
        self.assertAllClose(y, tf.nn.bias_add(tf.nn.conv2d(x, w, strides, padding), b))
        actual = tape.gradient(y, [x, w, b], output_gradients=dy)
        self.assertLess(tu.max_relative_difference(actual, tf_gradients(x, w, b, strides, padding, dy)), 1e-5)

    @parameterized.parameters("forward_conv", "taps")
    def test_conv2d_scales_the_parameter_gradients_per_sample(self, formulation):
        x_shape, k_shape, strides, padding = CASES["k4s2_same"]
        x, w, b = normal(x_shape, 1), normal(k_shape, 2), normal(k_shape[-1:], 4)
        factor = tf.constant([2.0, -0.5])
        with tf.GradientTape() as tape:
            tape.watch([x, w, b])
            y = ops.conv2d(x, w, b, strides, padding, factor=factor, weight_gradient=formulation)
        dy = normal(y.shape, 3)
        dx, dw, db = tape.gradient(y, [x, w, b], output_gradients=dy)
        expected = tf_gradients(x, w, b, strides, padding, dy * factor[:, None, None, None])
        self.assertLess(tu.max_relative_difference([dw, db], expected[1:]), 1e-5)
        self.assertLess(tu.max_relative_difference([dx], tf_gradients(x, w, b, strides, padding, dy)[:1]), 1e-5)

    @parameterized.parameters("forward_conv", "taps")
    def test_second_order_gradients_as_r1_takes_them(self, formulation):
        x_shape, k_shape, strides, padding = CASES["k4s2_same"]
        x, w, b = normal(x_shape, 1), normal(k_shape, 2), normal(k_shape[-1:], 4)

        def penalty_gradient(conv):
            with tf.GradientTape() as outer:
                outer.watch([w, b])
                with tf.GradientTape() as inner:
                    inner.watch(x)
                    y = tf.reduce_sum(tf.square(conv()))
                penalty = tf.reduce_sum(tf.square(inner.gradient(y, x)))
            return outer.gradient(penalty, [w, b])

        ours = penalty_gradient(lambda: ops.conv2d(x, w, b, strides, padding, weight_gradient=formulation))
        theirs = penalty_gradient(lambda: tf.nn.bias_add(tf.nn.conv2d(x, w, strides, padding), b))
        self.assertLess(tu.max_relative_difference(ours, theirs), 1e-5)

    @parameterized.product(padding=["same", "valid"], kernel=[4, 1], formulation=formulations.WEIGHT_GRADIENTS)
    def test_conv2d_transpose_equals_tensorflows(self, padding, kernel, formulation):
        x, w, b = normal((2, 3, 4, 5), 1), normal((kernel, kernel, 3, 5), 2), normal((3,), 4)
        with tf.GradientTape() as tape:
            tape.watch([x, w, b])
            y = ops.conv2d_transpose(x, w, b, (2, 2), padding, weight_gradient=formulation)
        size = lambda n: n * 2 + (max(kernel - 2, 0) if padding == "valid" else 0)  # noqa: E731
        # The reference in float64, which no oneDNN kernel computes (see the next test).
        x64, w64, b64 = (tf.cast(t, tf.float64) for t in (x, w, b))
        with tf.GradientTape() as reference_tape:
            reference_tape.watch([x64, w64, b64])
            z = tf.nn.bias_add(tf.nn.conv2d_transpose(x64, w64, [2, size(3), size(4), 3], 2, padding.upper()), b64)
        self.assertAllClose(y, z)
        dy = normal(z.shape, 3)
        ours = tape.gradient(y, [x, w, b], output_gradients=dy)
        reference = reference_tape.gradient(z, [x64, w64, b64], tf.cast(dy, tf.float64))
        self.assertLess(tu.max_relative_difference(ours, reference), 1e-5)

    def test_a_1x1_strided_weight_gradient_is_right_every_time(self):
        # TensorFlow 2.21's oneDNN Conv2DBackpropFilter on AVX2-only CPUs got this shape wrong in
        # most calls (up to 0.7 relative), so "native" computes a 1x1 strided kernel's one tap.
        x, dy = normal((2, 6, 8, 3), 1), normal((2, 3, 4, 5), 3)
        exact = tf.raw_ops.Conv2DBackpropFilter(
            input=tf.cast(x, tf.float64),
            filter_sizes=[1, 1, 3, 5],
            out_backprop=tf.cast(dy, tf.float64),
            strides=[1, 2, 2, 1],
            padding="SAME",
        )
        for formulation in formulations.WEIGHT_GRADIENTS:
            for _ in range(8):
                ours = formulations.weight_gradient(x, dy, (1, 1, 3, 5), (2, 2), "SAME", formulation)
                self.assertLess(tu.max_relative_difference([ours], [exact]), 1e-6, formulation)

    @parameterized.parameters("conv2d", "conv2d_transpose")
    def test_an_op_refuses_a_setting_that_is_not_a_formulation_in_one_line(self, op):
        # "auto" is the layers' setting, resolved before the op (conv_weight_gradients.formulation).
        with self.assertRaisesRegex(ValueError, r"^Unknown weight-gradient formulation 'auto'\. Valid: native"):
            getattr(ops, op)(tf.ones([1, 4, 4, 1]), tf.ones([3, 3, 1, 1]), None, (1, 1), "same", weight_gradient="auto")


if __name__ == "__main__":
    tf.test.main()
