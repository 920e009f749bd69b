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

    def test_when_due_applies_lazy_penalties_on_their_interval_with_scaled_weights(self):
        r1, gp = regularizers.R1(1.0, every=4), regularizers.GradientPenalty(10.0)
        for update, expected in ((0, ["R1(gamma=4.0, every=4)", repr(gp)]), (1, [repr(gp)]), (8, None)):
            chosen = regularizers.when_due(lambda due: due, (r1, gp), tf.constant(update))
            self.assertEqual([repr(r) for r in chosen], expected or ["R1(gamma=4.0, every=4)", repr(gp)])

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

    def test_rows_and_refusals(self):
        real, fake = tf.ones([2, 3]), tf.zeros([2, 3])
        self.assertIs(regularizers.R1(1.0).inputs(real, fake), real)  # R1 reads D's real rows
        interpolates = regularizers.GradientPenalty(10.0).bind(tf.constant([1, 2], tf.int64)).inputs(real, fake)
        self.assertTrue(np.all((interpolates.numpy() >= 0) & (interpolates.numpy() <= 1)))
        with self.assertRaisesRegex(ValueError, "every must be a positive integer"):
            regularizers.R1(1.0, every=0)
        with self.assertRaisesRegex(ValueError, "gamma > 0. Received: gamma=-1"):
            regularizers.R1(-1)
        with self.assertRaisesRegex(ValueError, "weight > 0"):
            regularizers.GradientPenalty(0)
