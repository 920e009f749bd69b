"""DiffAugment: per-sample, seeded, differentiable transformations of image batches."""

import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from tests import testing_utils as tu
from tf_fusedprop.augment import POLICIES, DiffAugment


def images(n=6, seed=0):
    return tf.constant(np.random.default_rng(seed).uniform(-1, 1, (n, 8, 8, 3)).astype("float32"))


class DiffAugmentTest(tu.TestCase):
    @parameterized.parameters(*[(p,) for p in POLICIES + ("color,translation,cutout",)])
    def test_seeded_per_sample_and_differentiable(self, policy):
        augment, x = DiffAugment(policy), images()
        out = augment(x, [3, 4])
        self.assertEqual(out.shape, x.shape)
        self.assertAllEqual(out, augment(x, [3, 4]))
        self.assertNotAllClose(out, augment(x, [3, 5]))
        # per sample: changing sample 0 changes nothing else
        changed = tf.concat([images(1, seed=9), x[1:]], 0)
        self.assertAllEqual(augment(changed, [3, 4])[1:], out[1:])
        with tf.GradientTape() as tape:
            tape.watch(x)
            total = tf.reduce_sum(augment(x, [3, 4]) * tf.random.normal(x.shape))
        gradient = tape.gradient(total, x)
        self.assertTrue(np.all(np.isfinite(gradient.numpy())))
        self.assertGreater(float(tf.reduce_max(tf.abs(gradient))), 0.0)

    def test_translation_shifts_whole_pixels_with_zero_padding(self):
        x = tf.reshape(tf.range(1.0, 65.0), [1, 8, 8, 1])
        out = DiffAugment("translation")(x, [0, 5])[0, :, :, 0].numpy()
        values = set(out.ravel()) - {0.0}
        self.assertTrue(values <= set(range(1, 65)))
        rows, cols = np.nonzero(out)
        shift = out[rows[0], cols[0]] - (8 * rows[0] + cols[0] + 1)  # the same offset everywhere
        self.assertTrue(np.all(out[rows, cols] - (8 * rows + cols + 1) == shift))

    def test_cutout_zeroes_a_half_size_square(self):
        out = DiffAugment("cutout")(tf.ones([20, 8, 8, 1]), [1, 1]).numpy()
        for sample in out[..., 0]:
            zeros = np.argwhere(sample == 0)
            height, width = np.ptp(zeros[:, 0]) + 1, np.ptp(zeros[:, 1]) + 1
            self.assertLessEqual(max(height, width), 4)
            self.assertEqual(len(zeros), height * width)  # a rectangle (clipped square)

    def test_color_ranges(self):
        x = tf.zeros([200, 4, 4, 3])
        shifted = DiffAugment("color")(x, [2, 2]).numpy()
        self.assertTrue(np.all(np.abs(shifted) <= 0.5 * 1.5 + 1e-6))
        self.assertGreater(np.std(shifted[:, 0, 0, 0]), 0.1)

    def test_each_operation_applies_per_sample_with_probability_p(self):
        x = images(400)
        every = DiffAugment("translation")(x, [3, 4])
        self.assertAllEqual(DiffAugment("translation", p=1.0)(x, [3, 4]), every)
        self.assertAllEqual(DiffAugment("translation", p=0.0)(x, [3, 4]), x)
        half = DiffAugment("translation", p=0.5)(x, [3, 4])
        self.assertAllEqual(half, DiffAugment("translation", p=0.5)(x, [3, 4]))
        moved = np.any((half != x).numpy(), axis=(1, 2, 3))
        # a sample is either left alone or transformed exactly as with p=1 (some shifts are 0)
        self.assertAllEqual(half[moved], tf.boolean_mask(every, moved))
        self.assertAllEqual(half[~moved], x[~moved])
        self.assertBetween(moved.mean(), 0.35, 0.55)  # 0.5 less the shifts by (0, 0)
        # two operations draw apart: cutout may apply where translation did not
        both = DiffAugment("translation,cutout", p=0.5)(x, [3, 4])
        self.assertNotAllEqual(np.any((both != half).numpy(), axis=(1, 2, 3)), moved)

    def test_adaptive_probability_reads_its_state(self):
        augment = DiffAugment("translation", p="auto", target=0.5, interval=2, ramp_images=1000)
        self.assertEqual(float(augment.p), 0.0)
        self.assertAllEqual(augment(images(), [3, 4]), images())  # p is 0 until D says otherwise
        augment.attach()[0].assign(1.0)
        self.assertAllEqual(augment(images(), [3, 4]), DiffAugment("translation")(images(), [3, 4]))
        config = augment.get_config()
        self.assertEqual(
            config, {"policy": "translation", "p": "auto", "target": 0.5, "interval": 2, "ramp_images": 1000}
        )
        self.assertEqual(DiffAugment.from_config(config).get_config(), config)
        self.assertEqual(DiffAugment("color").get_config(), {"policy": "color"})  # as before p existed
        self.assertEqual(repr(DiffAugment("color", p=0.25)), "DiffAugment('color', p=0.25)")

    def test_refusals(self):
        with self.assertRaisesRegex(ValueError, r"Unknown DiffAugment policy \['flip'\]"):
            DiffAugment("flip,color")
        for arguments, message in (
            ({"p": 1.5}, r'p must be a number in \[0, 1\] or "auto". Received: p=1.5'),
            ({"p": "sometimes"}, r"Received: p='sometimes'"),
            ({"p": "auto", "target": 0}, r"target must be a number in \(0, 1\]. Received: target=0"),
            ({"p": "auto", "interval": 0}, r"interval must be a positive integer. Received: interval=0"),
            ({"p": "auto", "ramp_images": -1}, r"ramp_images must be a positive number. Received: ramp_images=-1"),
        ):
            with self.assertRaisesRegex(ValueError, message):
                DiffAugment("color", **arguments)
        with self.assertRaisesRegex(ValueError, "NHWC images"):
            DiffAugment("color")(tf.zeros([4, 2]), [1, 2])
        self.assertEqual(DiffAugment("cutout, color").policy, "color,cutout")
