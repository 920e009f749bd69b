"""GradientAccumulator: shadow variables normalised by iter_size (the end-to-end equalities with
one big batch, Keras's gradient_accumulation_steps and MirroredStrategy are in gan_test)."""

import tensorflow as tf

import tf_fusedprop as fp
from tests import testing_utils as tu


class GradientAccumulatorTest(tu.TestCase):
    def test_accumulator_normalises_by_iter_size(self):
        variable = tf.Variable([1.0, 2.0])
        accumulator = fp.GradientAccumulator([variable], iter_size=4)
        for g in ([1.0, 0.0], [3.0, 4.0], [0.0, 0.0], [4.0, 4.0]):
            accumulator.accumulate([tf.constant(g)])
        self.assertAllClose(accumulator.gradients()[0], [2.0, 2.0])
        accumulator.reset()
        self.assertAllClose(accumulator.gradients()[0], [0.0, 0.0])
        self.assertFalse(accumulator.shadows[0].trainable)

    def test_weights_and_missing_gradients(self):
        variables = [tf.Variable([0.0]), tf.Variable([0.0, 0.0])]
        accumulator = fp.GradientAccumulator(variables, iter_size=2)
        accumulator.accumulate([tf.constant([2.0]), None], weight=0.5)
        accumulator.accumulate([tf.constant([4.0]), tf.constant([1.0, 3.0])], weight=1.5)
        self.assertAllClose(accumulator.gradients()[0], [(0.5 * 2.0 + 1.5 * 4.0) / 2])
        self.assertAllClose(accumulator.gradients()[1], [0.75, 2.25])

    def test_refusals(self):
        variable = tf.Variable([1.0])
        with self.assertRaisesRegex(ValueError, "iter_size must be a positive integer. Received: iter_size=0"):
            fp.GradientAccumulator([variable], iter_size=0)
        with self.assertRaisesRegex(ValueError, "Expected 1 gradients, received 2"):
            fp.GradientAccumulator([variable], iter_size=2).accumulate([tf.ones([1]), tf.ones([1])])
