"""features: the digits classifier and its cache, TF-GAN Inception loading, reference statistics."""

import io
import os
import tarfile
import time

import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from tests import testing_utils as tu
from tf_fusedprop.experiment import features, metrics, real_samples


class DigitsClassifierTest(tu.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.digits_cache = tu.class_temp_dir(cls)
        cls.classifier = features.DigitsClassifier.load_or_train(cls.digits_cache, image_size=16)

    def test_trains_accurately(self):
        self.assertTrue(self.classifier.trained)
        self.assertGreater(self.classifier.test_accuracy, 0.9)

    def test_cache_reloads_without_training(self):
        (name,) = os.listdir(self.digits_cache)  # The model only: no temporary file is left.
        self.assertTrue(name.endswith(".keras"))
        mtime = os.path.getmtime(os.path.join(self.digits_cache, name))
        reloaded = features.DigitsClassifier.load_or_train(self.digits_cache, image_size=16)
        self.assertFalse(reloaded.trained)
        self.assertEqual(os.path.getmtime(os.path.join(self.digits_cache, name)), mtime)
        self.assertEqual(reloaded.test_accuracy, self.classifier.test_accuracy)
        images = real_samples.digits_array(16)[:20]
        self.assertAllClose(reloaded.features(images), self.classifier.features(images), rtol=1e-5, atol=1e-6)

    def test_outputs(self):
        images = real_samples.digits_array(16)[:300]
        activations, logits = self.classifier.features(images, batch_size=128), self.classifier.logits(images)
        self.assertEqual(activations.shape, (300, 128))
        self.assertEqual(logits.shape, (300, 10))
        with self.assertRaisesRegex(ValueError, r"\[n, 16, 16, channels\].*Received: shape \(3, 8, 8, 1\)"):
            self.classifier.features(np.zeros((3, 8, 8, 1)))

    def test_metrics_separate_real_from_noise(self):
        real = real_samples.digits_array(16)
        rng = np.random.default_rng(8)
        noise = rng.uniform(-1, 1, size=real.shape).astype(np.float32)
        real_features = self.classifier.features(real)
        fid_real = metrics.frechet_distance_from_activations(real_features[:900], real_features[900:])
        fid_noise = metrics.frechet_distance_from_activations(
            real_features[:900], self.classifier.features(noise[:900])
        )
        self.assertGreater(fid_noise, 10 * fid_real)
        self.assertGreater(metrics.inception_score(self.classifier.logits(real), splits=5)[0], 7.0)


class CountingExtractor:
    """Flattens images; counts calls."""

    def __init__(self):
        self.calls = 0

    def features(self, images, batch_size=256):
        self.calls += 1
        return np.asarray(images, np.float64).reshape(len(images), -1)


class ReferenceStatisticsTest(tu.TestCase):
    def test_are_cached(self):
        directory = self.get_temp_dir()
        images = np.random.default_rng(9).normal(size=(50, 2, 2, 1))
        extractor, path = CountingExtractor(), os.path.join(directory, "stats", "ref.npz")
        mu, sigma = features.reference_statistics(extractor, images, path)
        self.assertEqual(extractor.calls, 1)
        self.assertEqual(os.listdir(os.path.dirname(path)), ["ref.npz"])
        self.assertEqual((mu.shape, sigma.shape), ((4,), (4, 4)))
        mu2, sigma2 = features.reference_statistics(extractor, None, path)
        self.assertEqual(extractor.calls, 1)
        self.assertAllEqual(mu, mu2)
        self.assertAllEqual(sigma, sigma2)
        with self.assertRaisesRegex(ValueError, "images is None"):
            features.reference_statistics(extractor, None, os.path.join(directory, "missing.npz"))

    def test_fid_from_images(self):
        rng = np.random.default_rng(10)
        real, fake = rng.normal(size=(400, 3, 1, 1)), rng.normal(size=(400, 3, 1, 1)) + 1.0
        extractor = CountingExtractor()
        ref = metrics.activation_statistics(extractor.features(real))
        self.assertAllClose(features.fid_from_images(extractor, real, ref), 0.0, rtol=0, atol=1e-9)
        expected = metrics.frechet_distance_from_activations(extractor.features(fake), extractor.features(real))
        self.assertAllClose(features.fid_from_images(extractor, fake, ref, batch_size=7), expected, rtol=1e-12, atol=0)


class InceptionFeaturesTest(tu.TestCase):
    @parameterized.parameters(
        ("offline", "which could not be downloaded: cannot reach"),
        ("missing", "which does not exist"),
        ("empty", "which could not be loaded as a SavedModel"),
    )
    def test_explains_what_to_pass(self, where, reason):
        directory = self.get_temp_dir()
        received = {
            "offline": tu.closed_port_url("/tensorflow/tfgan/eval/inception/1"),
            "missing": os.path.join(directory, "no_such_dir"),
            "empty": directory,  # Exists, but holds no SavedModel.
        }[where]
        with self.assertRaises(features.InceptionModuleUnavailableError) as info:
            features.InceptionFeatures(received)
        message = str(info.exception)
        self.assertIsInstance(info.exception, ValueError)
        self.assertNotIn("\n", message)
        self.assertIn(f"received path_or_url={received!r}, {reason}", message)
        self.assertIn(f"Pass {features.InceptionFeatures.MODULE_URL} on a machine with internet", message)
        self.assertIn("pass its local directory", message)

    def test_offline_fails_fast(self):
        start = time.perf_counter()
        with self.assertRaisesRegex(features.InceptionModuleUnavailableError, r"ConnectionRefusedError"):
            features.InceptionFeatures(tu.closed_port_url("/inception/1"), cache_dir=self.get_temp_dir())
        self.assertLess(time.perf_counter() - start, 5.0)

    def test_a_hub_url_is_downloaded_once_into_the_cache_and_gives_features(self):
        directory = self.get_temp_dir()
        module = os.path.join(directory, "inception")
        tf.saved_model.save(tu.InceptionModuleStandIn(), module)
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w:gz") as tar:
            tar.add(module, arcname=".")  # TF-Hub's layout: the SavedModel at the root.
        cache = os.path.join(directory, "cache")
        images = np.random.default_rng(12).uniform(-1, 1, size=(3, 8, 8, 3)).astype(np.float32)
        path = "/tensorflow/tfgan/eval/inception/1"
        with tu.http_server({f"{path}?tf-hub-format=compressed": archive.getvalue()}) as (base, requests):
            extractors = [features.InceptionFeatures(base + path, cache_dir=cache) for _ in range(2)]
        self.assertLen(requests, 1)  # The second construction found the module in the cache.
        self.assertEqual(extractors[0].path, extractors[1].path)
        self.assertEqual(os.path.dirname(extractors[0].path), cache)
        self.assertAllClose(extractors[1].features(images), images.mean(axis=(1, 2)), atol=0.05)
        self.assertAllEqual(extractors[1].logits(images), np.full((3, 2), 299.0))

    def test_loads_saved_model_and_resizes(self):
        path = os.path.join(self.get_temp_dir(), "inception")
        tf.saved_model.save(tu.InceptionModuleStandIn(), path)
        extractor = features.InceptionFeatures(path)
        images = np.random.default_rng(11).uniform(-1, 1, size=(5, 8, 8, 1)).astype(np.float32)
        activations = extractor.features(images, batch_size=2)
        logits = extractor.logits(images, batch_size=2)  # The fake's logits are its input size.
        self.assertAllEqual(logits, np.full((5, 2), 299.0))
        self.assertEqual(activations.shape, (5, 3))
        self.assertAllClose(activations[:, 0], activations[:, 2])  # Gray images are repeated to RGB.
        self.assertAllClose(activations[:, 0], images.mean(axis=(1, 2, 3)), atol=0.05)


if __name__ == "__main__":
    tf.test.main()
