"""batch: the one Batch type, its micro-batches, unpacking fit's data, and the Sampler's draws."""

import numpy as np
import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop.batch import Batch, Sampler, micro_batch_bounds, unpack


class BatchTest(tu.TestCase):
    def test_rows_cut_every_field_and_keep_missing_labels_missing(self):
        batch = Batch(tf.range(10), tf.range(10, 20), fake_labels=tf.range(20, 30))
        micro = batch.rows(2, 5)
        self.assertAllEqual(micro.real, [2, 3, 4])
        self.assertAllEqual(micro.z, [12, 13, 14])
        self.assertIsNone(micro.real_labels)
        self.assertAllEqual(micro.fake_labels, [22, 23, 24])

    def test_micro_batches_differ_by_at_most_one_sample(self):
        for n, parts in ((20, 8), (16, 3), (3, 4), (8, 8)):
            bounds = micro_batch_bounds(tf.constant(n), parts).numpy()
            sizes = np.diff(bounds)
            self.assertEqual((bounds[0], bounds[-1]), (0, n))
            self.assertLessEqual(sizes.max() - sizes.min(), 1)
            self.assertLen(sizes, min(n, parts))


class UnpackTest(tu.TestCase):
    def test_labels_only_for_a_conditional_gan(self):
        x, y = tf.zeros([4, 2]), tf.constant([[1], [2], [0], [1]], tf.int64)
        self.assertEqual(unpack(x, None), (x, None))
        self.assertEqual(unpack((x, y), None), (x, None))
        real, labels = unpack((x, y), 3)
        self.assertIs(real, x)
        self.assertEqual((labels.dtype, labels.shape), (tf.int32, (4,)))
        with self.assertRaisesRegex(ValueError, r"num_classes=3\) is fit on \(samples, labels\) pairs"):
            unpack(x, 3)


class SamplerTest(tu.TestCase):
    def test_fresh_latents_and_labels_every_draw_and_the_same_sequence_per_seed(self):
        first, again = Sampler(4, num_classes=3, seed=5), Sampler(4, num_classes=3, seed=5)
        a, b = first.batch(tf.zeros([6, 2])), first.batch(tf.zeros([6, 2]))
        self.assertEqual(a.z.shape, (6, 4))
        self.assertNotAllClose(a.z, b.z)
        self.assertAllEqual(a.fake_labels, again.batch(tf.zeros([6, 2])).fake_labels)
        self.assertTrue(set(first.labels(300).numpy()) == {0, 1, 2})

    def test_unconditional_sampler_has_no_labels(self):
        sampler = Sampler(4, seed=1)
        self.assertIsNone(sampler.batch(tf.zeros([2, 2])).fake_labels)
        with self.assertRaisesRegex(ValueError, "num_classes=K"):
            sampler.labels(2)
        self.assertEqual(sampler.example_inputs(3).shape, (3, 4))
        z, labels = Sampler(4, num_classes=2).example_inputs()
        self.assertAllEqual(labels, [0, 0, 0, 0])


if __name__ == "__main__":
    tf.test.main()
