"""metrics: FID/IS/KID against closed forms, hand computations and TF-GAN, mode coverage; numpy only."""

import math
import os
import subprocess
import sys
import textwrap
from unittest import mock

import numpy as np
import scipy.linalg
import tensorflow as tf
from absl.testing import parameterized

from tests import testing_utils as tu
from tests import tfgan_oracle
from tf_fusedprop.experiment import metrics, real_samples


def diagonal_closed_form(mu1, s1, mu2, s2):
    """FID between N(mu1, diag(s1)) and N(mu2, diag(s2))."""
    return np.sum((mu1 - mu2) ** 2) + np.sum(s1 + s2 - 2 * np.sqrt(s1 * s2))


def random_covariance(rng, d):
    a = rng.normal(size=(d, d))
    return a @ a.T / d + 0.1 * np.eye(d)


class ImportsTest(tu.TestCase):
    def test_loads_without_tensorflow_or_keras(self):
        # The file alone, in a fresh interpreter where importing tensorflow or keras fails.
        script = textwrap.dedent(
            """
            import importlib.abc, importlib.util, sys

            class Refuse(importlib.abc.MetaPathFinder):
                def find_spec(self, name, path=None, target=None):
                    if name.split(".")[0] in ("tensorflow", "keras", "tf_fusedprop"):
                        raise ImportError(f"metrics.py imported {name}")

            sys.meta_path.insert(0, Refuse())
            spec = importlib.util.spec_from_file_location("metrics", sys.argv[1])
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            print(sorted(module.__all__))
            """
        )
        result = subprocess.run(
            [sys.executable, "-c", script, os.path.abspath(metrics.__file__)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertIn("'frechet_distance'", result.stdout)


class FrechetDistanceTest(tu.TestCase):
    def test_matches_diagonal_closed_form(self):
        rng = np.random.default_rng(0)
        mu1, mu2 = rng.normal(size=5), rng.normal(size=5)
        s1, s2 = rng.uniform(0.1, 3.0, size=5), rng.uniform(0.1, 3.0, size=5)
        got = metrics.frechet_distance(mu1, np.diag(s1), mu2, np.diag(s2))
        self.assertAllClose(got, diagonal_closed_form(mu1, s1, mu2, s2), rtol=1e-10, atol=0)

    def test_matches_symmetric_form_for_full_covariances(self):
        # Tr((S1 S2)^(1/2)) = Tr((S1^(1/2) S2 S1^(1/2))^(1/2)), whose argument is symmetric PSD.
        rng = np.random.default_rng(1)
        mu1, mu2 = rng.normal(size=6), rng.normal(size=6)
        s1, s2 = random_covariance(rng, 6), random_covariance(rng, 6)
        root1 = scipy.linalg.sqrtm(s1).real
        eigenvalues = np.linalg.eigvalsh(root1 @ s2 @ root1)
        expected = np.sum((mu1 - mu2) ** 2) + np.trace(s1 + s2) - 2 * np.sum(np.sqrt(eigenvalues))
        self.assertAllClose(metrics.frechet_distance(mu1, s1, mu2, s2), expected, rtol=1e-9, atol=0)

    def test_of_identical_statistics_is_zero(self):
        rng = np.random.default_rng(2)
        mu, sigma = rng.normal(size=8), random_covariance(rng, 8)
        self.assertAllClose(metrics.frechet_distance(mu, sigma, mu, sigma), 0.0, rtol=0, atol=1e-9)
        # Rank-deficient covariance (fewer samples than dimensions): still finite and ~0.
        mu, sigma = metrics.activation_statistics(rng.normal(size=(4, 8)))
        self.assertAllClose(metrics.frechet_distance(mu, sigma, mu, sigma), 0.0, rtol=0, atol=1e-6)

    def test_of_singular_product(self):
        # diag(1, 0) @ diag(0, 1) = 0: the square root is 0, the distance 1 + 1.
        got = metrics.frechet_distance(np.zeros(2), np.diag([1.0, 0.0]), np.zeros(2), np.diag([0.0, 1.0]))
        self.assertAllClose(got, 2.0, rtol=0, atol=1e-12)

    def test_retries_with_offset_when_sqrtm_is_not_finite(self):
        calls = []
        sqrtm = scipy.linalg.sqrtm

        def flaky_sqrtm(a):
            calls.append(a)
            return np.full_like(a, np.nan) if len(calls) == 1 else sqrtm(a)

        with mock.patch.object(scipy.linalg, "sqrtm", flaky_sqrtm):
            got = metrics.frechet_distance(np.zeros(3), np.eye(3), np.ones(3), np.eye(3), eps=1e-6)
        self.assertLen(calls, 2)
        self.assertAllClose(calls[1], (1 + 1e-6) ** 2 * np.eye(3))
        self.assertAllClose(got, 3.0, rtol=0, atol=1e-5)

    def test_rejects_non_covariances(self):
        with self.assertRaisesRegex(ValueError, "imaginary"):
            metrics.frechet_distance(np.zeros(2), np.diag([1.0, -1.0]), np.zeros(2), np.eye(2))
        with self.assertRaisesRegex(ValueError, "Received: shapes"):
            metrics.frechet_distance(np.zeros(2), np.eye(2), np.zeros(3), np.eye(3))

    def test_fid_from_gaussian_samples_approaches_closed_form(self):
        rng = np.random.default_rng(3)
        mu1, mu2 = np.array([0.0, 1.0, -1.0, 0.5]), np.array([0.5, 0.0, -1.0, 2.0])
        s1, s2 = np.array([1.0, 0.5, 2.0, 1.0]), np.array([2.0, 0.5, 1.0, 0.25])
        a = mu1 + np.sqrt(s1) * rng.normal(size=(50_000, 4))
        b = mu2 + np.sqrt(s2) * rng.normal(size=(50_000, 4))
        expected = diagonal_closed_form(mu1, s1, mu2, s2)
        self.assertAllClose(metrics.frechet_distance_from_activations(a, b), expected, rtol=0.02, atol=0)

    def test_activation_statistics(self):
        acts = np.array([[1.0, 2.0], [3.0, 6.0], [5.0, 4.0]])
        mu, sigma = metrics.activation_statistics(acts)
        self.assertAllClose(mu, [3.0, 4.0])
        self.assertAllClose(sigma, [[4.0, 2.0], [2.0, 4.0]])
        with self.assertRaisesRegex(ValueError, "n >= 2"):
            metrics.activation_statistics(acts[:1])


class InceptionScoreTest(tu.TestCase):
    def test_of_uniform_predictions_is_one(self):
        mean, std = metrics.inception_score(np.zeros((100, 10)), splits=10)
        self.assertAllClose((mean, std), (1.0, 0.0), rtol=0, atol=1e-12)

    @parameterized.parameters(2, 10)
    def test_of_confident_balanced_predictions_is_num_classes(self, num_classes):
        labels = np.tile(np.arange(num_classes), 20)  # Every split of 2 * num_classes is balanced.
        logits = 100.0 * np.eye(num_classes)[labels]
        mean, std = metrics.inception_score(logits, splits=10)
        self.assertAllClose(mean, num_classes, rtol=1e-9, atol=0)
        self.assertAllClose(std, 0.0, rtol=0, atol=1e-9)

    def test_hand_computed(self):
        # p(y|x) = (3/4, 1/4) and (1/4, 3/4), p(y) = (1/2, 1/2): KL = 3/4 ln(3/2) + 1/4 ln(1/2).
        logits = np.log([[0.75, 0.25], [0.25, 0.75]])
        mean, _ = metrics.inception_score(logits, splits=1)
        self.assertAllClose(mean, math.exp(0.75 * math.log(1.5) + 0.25 * math.log(0.5)), rtol=1e-12, atol=0)

    def test_rejects_bad_splits(self):
        with self.assertRaisesRegex(ValueError, "splits"):
            metrics.inception_score(np.zeros((5, 3)), splits=6)


class KernelInceptionDistanceTest(tu.TestCase):
    def test_hand_computed(self):
        # d = 1: k(x, y) = (x y + 1)^3. X = {0, 1}, Y = {1, 2}:
        # off-diagonal k_xx: k(0, 1) = 1 -> mean 1; k_yy: k(1, 2) = 27 -> mean 27;
        # k_xy: 1, 1, 8, 27 -> mean 37 / 4.  MMD^2 = 1 + 27 - 2 * 37 / 4 = 9.5.
        mean, std = metrics.kernel_inception_distance([[0.0], [1.0]], [[1.0], [2.0]], num_subsets=3, subset_size=2)
        self.assertAllClose(mean, 9.5, rtol=1e-12, atol=0)
        self.assertAllClose(std, 0.0, rtol=0, atol=1e-12)

    def test_of_same_distribution_is_near_zero_and_of_shifted_is_positive(self):
        rng = np.random.default_rng(4)
        a, b = rng.normal(size=(600, 16)), rng.normal(size=(600, 16))
        same_mean, same_std = metrics.kernel_inception_distance(a, b, num_subsets=20, subset_size=300)
        shifted_mean, _ = metrics.kernel_inception_distance(a, b + 0.5, num_subsets=20, subset_size=300)
        self.assertLess(abs(same_mean), 3 * same_std)
        self.assertGreater(shifted_mean, 0.1)
        self.assertGreater(shifted_mean, 100 * abs(same_mean))

    def test_is_deterministic_given_seed_and_caps_subset_size(self):
        rng = np.random.default_rng(5)
        a, b = rng.normal(size=(50, 4)), rng.normal(size=(40, 4)) + 0.2
        first = metrics.kernel_inception_distance(a, b, num_subsets=5, subset_size=1000, seed=7)
        self.assertEqual(first, metrics.kernel_inception_distance(a, b, num_subsets=5, subset_size=1000, seed=7))
        self.assertNotEqual(first, metrics.kernel_inception_distance(a, b, num_subsets=5, subset_size=30, seed=8))
        with self.assertRaisesRegex(ValueError, "Received"):
            metrics.kernel_inception_distance(a, b[:, :3])


CENTERS, STD = real_samples.mixture_spec("ring8")


def samples_at(modes, per_mode, rng, std=STD):
    return np.concatenate([CENTERS[m] + std * rng.normal(size=(per_mode, 2)) for m in modes])


class TFGANOracleTest(tu.TestCase):
    """FID, KID and IS against TF-GAN's independent implementation (tests/tfgan_oracle.py)."""

    def setUp(self):
        super().setUp()
        self.tfgan = tfgan_oracle.require(self, "python.eval.classifier_metrics")
        rng = np.random.default_rng(0)
        self.a = rng.normal(size=(300, 8))
        self.b = rng.normal(0.3, 1.5, size=(300, 8)) @ rng.normal(size=(8, 8))

    def test_fid(self):
        theirs = self.tfgan.frechet_classifier_distance_from_activations(self.a, self.b)
        self.assertAllClose(metrics.frechet_distance_from_activations(self.a, self.b), theirs, rtol=1e-6)

    def test_kid_on_the_whole_sets(self):
        # One subset of every row against TF-GAN's one block: both are the full-set unbiased MMD^2.
        ours, _ = metrics.kernel_inception_distance(self.a, self.b, num_subsets=1, subset_size=len(self.a))
        theirs, _ = self.tfgan.kernel_classifier_distance_and_std_from_activations(
            tf.constant(self.a), tf.constant(self.b), max_block_size=1024
        )
        self.assertAllClose(ours, theirs, rtol=1e-6)

    def test_inception_score_in_one_split(self):
        logits = np.random.default_rng(1).normal(scale=3.0, size=(200, 10))
        theirs = self.tfgan.classifier_score_from_logits(tf.constant(logits, tf.float32))
        self.assertAllClose(metrics.inception_score(logits, splits=1)[0], theirs, rtol=1e-5)


class ModeCoverageTest(tu.TestCase):
    def test_all_modes(self):
        result = metrics.mode_coverage(samples_at(range(8), 200, np.random.default_rng(6)), CENTERS, STD)
        self.assertEqual(result["modes_covered"], 8)
        self.assertGreater(result["high_quality_fraction"], 0.97)  # 98.9% of a 2-D Gaussian lies within 3 std.
        self.assertEqual(result["counts"].shape, (8,))
        self.assertGreater(result["counts"].sum(), 0.97 * 1600)

    def test_some_modes_and_far_samples(self):
        rng = np.random.default_rng(7)
        on_modes = np.repeat(CENTERS[[0, 3, 5]], 10, axis=0)  # Exactly on 3 centers.
        far = rng.uniform(-0.5, 0.5, size=(30, 2))  # Near the origin, ~2 away from every mode.
        result = metrics.mode_coverage(np.concatenate([on_modes, far]), CENTERS, STD)
        self.assertEqual(result["modes_covered"], 3)
        self.assertEqual(result["high_quality_fraction"], 0.5)
        self.assertAllEqual(result["counts"], [10, 0, 0, 10, 0, 10, 0, 0])
        far_only = metrics.mode_coverage(far, CENTERS, STD)
        self.assertEqual(far_only["modes_covered"], 0)
        self.assertEqual(far_only["high_quality_fraction"], 0.0)

    def test_threshold_and_min_samples(self):
        # A sample 2.5 std from mode 0 is high quality at 3 std but not at 2 std.
        samples = np.concatenate([CENTERS[:1] + [2.5 * STD, 0.0], np.repeat(CENTERS[1:2], 5, axis=0)])
        self.assertEqual(metrics.mode_coverage(samples, CENTERS, STD)["modes_covered"], 2)
        self.assertEqual(metrics.mode_coverage(samples, CENTERS, STD, threshold=2.0)["modes_covered"], 1)
        self.assertEqual(metrics.mode_coverage(samples, CENTERS, STD, min_samples=5)["modes_covered"], 1)


if __name__ == "__main__":
    tf.test.main()
