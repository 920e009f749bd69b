"""R1 and WGAN-GP penalties: their values on known gradients (exactness inside a step: steps_test)."""

import numpy as np
import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop import regularizers


class RegularizersTest(tu.TestCase):
    def test_r1_value(self):
        gradients = tf.constant([[[3.0, 4.0]], [[0.0, 1.0]]])  # squared norms 25 and 1
        self.assertAllClose(regularizers.R1(2.0)(gradients), 0.5 * 2.0 * 13.0)
        self.assertAllClose(regularizers.R1(2.0).scaled(4)(gradients), 4 * 13.0)

    def test_gradient_penalty_value(self):
        gradients = tf.constant([[3.0, 4.0], [0.0, 1.0]])  # norms 5 and 1
        self.assertAllClose(regularizers.GradientPenalty(10.0)(gradients), 10.0 * (16.0 + 0.0) / 2, rtol=1e-6)
        penalty = regularizers.GradientPenalty(10.0).scaled(2)
        self.assertEqual((penalty.weight, penalty.target), (20.0, 1.0))

    def test_gradient_penalty_is_differentiable_at_zero(self):
        gradients = tf.zeros([2, 3])
        with tf.GradientTape() as tape:
            tape.watch(gradients)
            value = regularizers.GradientPenalty()(gradients)
        self.assertTrue(np.all(np.isfinite(tape.gradient(value, gradients).numpy())))

    def test_rows_from_config_and_refusals(self):
        self.assertEqual([r.rows for r in regularizers.from_config(1.0, 10.0)], ["real", "interpolates"])
        self.assertEqual(regularizers.from_config(0.0, 0.0), ())
        with self.assertRaisesRegex(ValueError, "gamma > 0. Received: gamma=-1"):
            regularizers.R1(-1)
        with self.assertRaisesRegex(ValueError, "weight > 0"):
            regularizers.GradientPenalty(0)
