"""benchmarks/input_gradients.py: the sub-pixel form equals TensorFlow's input gradient, and a tiny run's table."""

import os
import re
import sys

import tensorflow as tf
from absl.testing import parameterized

from tests import testing_utils as tu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import input_gradients  # noqa: E402


class InputGradientsTest(tu.TestCase):
    @parameterized.parameters(
        ((2, 8, 8, 3), (3, 3, 3, 5), 1, "SAME"),
        ((2, 8, 8, 4), (4, 4, 4, 6), 2, "SAME"),  # SNGAN's downsampling convolutions
        ((2, 7, 9, 3), (3, 3, 3, 4), 2, "SAME"),  # k not a multiple of s; odd sizes
        ((2, 9, 9, 2), (5, 5, 2, 3), 3, "VALID"),
        ((2, 8, 7, 2), (4, 2, 2, 3), 2, "VALID"),  # rows a stride leaves over at the end
        ((2, 5, 5, 3), (1, 1, 3, 4), 1, "VALID"),
    )
    def test_sub_pixel_form_equals_tensorflows_input_gradient(self, x_shape, kernel_shape, stride, padding):
        x = tf.random.stateless_normal(x_shape, seed=[1, 2])
        w = tf.random.stateless_normal(kernel_shape, seed=[3, 4])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.nn.conv2d(x, w, stride, padding)
        dy = tf.random.stateless_normal(y.shape, seed=[5, 6])
        expected = tape.gradient(y, x, output_gradients=dy)
        for function in (input_gradients.native_input_gradient, input_gradients.sub_pixel_input_gradient):
            actual = function(dy, w, x_shape, stride, padding)
            self.assertLess(tu.max_relative_difference([actual], [expected]), 1e-5, function.__name__)

    def test_prints_both_formulations_of_every_input_gradient(self):
        argv = ["input_gradients.py", "--network=digits", "--batch_size=4", "--reps=1"]
        lines = tu.printed_by(input_gradients.run, argv)
        self.assertRegex(lines[0], r"flags: .*; \d+ cpus; tf ")
        rows = [line for line in lines if re.match(r"[DG] .*(\s+[\d.]+){4}$", line)]
        self.assertLen(rows, len(input_gradients.weight_gradient_shapes("digits", 4)))
        self.assertRegex(lines[-1], r"^all: f32 native [\d.]+ ms, f32 sub_pixel [\d.]+ ms, bf16 native")
