"""Metrics: FID/IS/KID against closed forms and hand computations, mode coverage, extractors."""

import math
import os

import numpy as np
import pytest
import scipy.linalg
import tensorflow as tf

from tf_fusedprop.experiment import data, metrics

# --------------------------------------------------------------------------------------------
# Frechet distance
# --------------------------------------------------------------------------------------------


def diagonal_closed_form(mu1, s1, mu2, s2):
    """FID between N(mu1, diag(s1)) and N(mu2, diag(s2))."""
    return np.sum((mu1 - mu2) ** 2) + np.sum(s1 + s2 - 2 * np.sqrt(s1 * s2))


def random_covariance(rng, d):
    a = rng.normal(size=(d, d))
    return a @ a.T / d + 0.1 * np.eye(d)


def test_frechet_distance_matches_diagonal_closed_form():
    rng = np.random.default_rng(0)
    mu1, mu2 = rng.normal(size=5), rng.normal(size=5)
    s1, s2 = rng.uniform(0.1, 3.0, size=5), rng.uniform(0.1, 3.0, size=5)
    got = metrics.frechet_distance(mu1, np.diag(s1), mu2, np.diag(s2))
    assert got == pytest.approx(diagonal_closed_form(mu1, s1, mu2, s2), rel=1e-10)


def test_frechet_distance_matches_symmetric_form_for_full_covariances():
    # Tr((S1 S2)^(1/2)) = Tr((S1^(1/2) S2 S1^(1/2))^(1/2)), whose argument is symmetric PSD.
    rng = np.random.default_rng(1)
    mu1, mu2 = rng.normal(size=6), rng.normal(size=6)
    s1, s2 = random_covariance(rng, 6), random_covariance(rng, 6)
    root1 = scipy.linalg.sqrtm(s1).real
    eigenvalues = np.linalg.eigvalsh(root1 @ s2 @ root1)
    expected = np.sum((mu1 - mu2) ** 2) + np.trace(s1 + s2) - 2 * np.sum(np.sqrt(eigenvalues))
    assert metrics.frechet_distance(mu1, s1, mu2, s2) == pytest.approx(expected, rel=1e-9)


def test_frechet_distance_of_identical_statistics_is_zero():
    rng = np.random.default_rng(2)
    mu, sigma = rng.normal(size=8), random_covariance(rng, 8)
    assert metrics.frechet_distance(mu, sigma, mu, sigma) == pytest.approx(0.0, abs=1e-9)
    # Rank-deficient covariance (fewer samples than dimensions): still finite and ~0.
    mu, sigma = metrics.activation_statistics(rng.normal(size=(4, 8)))
    assert metrics.frechet_distance(mu, sigma, mu, sigma) == pytest.approx(0.0, abs=1e-6)


def test_frechet_distance_of_singular_product():
    # diag(1, 0) @ diag(0, 1) = 0: the square root is 0, the distance 1 + 1.
    got = metrics.frechet_distance(np.zeros(2), np.diag([1.0, 0.0]), np.zeros(2), np.diag([0.0, 1.0]))
    assert got == pytest.approx(2.0, abs=1e-12)


def test_frechet_distance_retries_with_offset_when_sqrtm_is_not_finite(monkeypatch):
    calls = []
    sqrtm = scipy.linalg.sqrtm

    def flaky_sqrtm(a):
        calls.append(a)
        return np.full_like(a, np.nan) if len(calls) == 1 else sqrtm(a)

    monkeypatch.setattr(scipy.linalg, "sqrtm", flaky_sqrtm)
    got = metrics.frechet_distance(np.zeros(3), np.eye(3), np.ones(3), np.eye(3), eps=1e-6)
    assert len(calls) == 2
    np.testing.assert_allclose(calls[1], (1 + 1e-6) ** 2 * np.eye(3))
    assert got == pytest.approx(3.0, abs=1e-5)


def test_frechet_distance_rejects_non_covariances():
    with pytest.raises(ValueError, match="imaginary"):
        metrics.frechet_distance(np.zeros(2), np.diag([1.0, -1.0]), np.zeros(2), np.eye(2))
    with pytest.raises(ValueError, match="Received: shapes"):
        metrics.frechet_distance(np.zeros(2), np.eye(2), np.zeros(3), np.eye(3))


def test_fid_from_gaussian_samples_approaches_closed_form():
    rng = np.random.default_rng(3)
    mu1, mu2 = np.array([0.0, 1.0, -1.0, 0.5]), np.array([0.5, 0.0, -1.0, 2.0])
    s1, s2 = np.array([1.0, 0.5, 2.0, 1.0]), np.array([2.0, 0.5, 1.0, 0.25])
    a = mu1 + np.sqrt(s1) * rng.normal(size=(50_000, 4))
    b = mu2 + np.sqrt(s2) * rng.normal(size=(50_000, 4))
    expected = diagonal_closed_form(mu1, s1, mu2, s2)
    assert metrics.frechet_distance_from_activations(a, b) == pytest.approx(expected, rel=0.02)


def test_activation_statistics():
    acts = np.array([[1.0, 2.0], [3.0, 6.0], [5.0, 4.0]])
    mu, sigma = metrics.activation_statistics(acts)
    np.testing.assert_allclose(mu, [3.0, 4.0])
    np.testing.assert_allclose(sigma, [[4.0, 2.0], [2.0, 4.0]])
    with pytest.raises(ValueError, match="n >= 2"):
        metrics.activation_statistics(acts[:1])


# --------------------------------------------------------------------------------------------
# Inception score
# --------------------------------------------------------------------------------------------


def test_inception_score_of_uniform_predictions_is_one():
    mean, std = metrics.inception_score(np.zeros((100, 10)), splits=10)
    assert mean == pytest.approx(1.0, abs=1e-12) and std == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("num_classes", [2, 10])
def test_inception_score_of_confident_balanced_predictions_is_num_classes(num_classes):
    labels = np.tile(np.arange(num_classes), 20)  # Every split of 2 * num_classes is balanced.
    logits = 100.0 * np.eye(num_classes)[labels]
    mean, std = metrics.inception_score(logits, splits=10)
    assert mean == pytest.approx(num_classes, rel=1e-9) and std == pytest.approx(0.0, abs=1e-9)


def test_inception_score_hand_computed():
    # p(y|x) = (3/4, 1/4) and (1/4, 3/4), p(y) = (1/2, 1/2): KL = 3/4 ln(3/2) + 1/4 ln(1/2).
    logits = np.log([[0.75, 0.25], [0.25, 0.75]])
    mean, _ = metrics.inception_score(logits, splits=1)
    assert mean == pytest.approx(math.exp(0.75 * math.log(1.5) + 0.25 * math.log(0.5)), rel=1e-12)


def test_inception_score_rejects_bad_splits():
    with pytest.raises(ValueError, match="splits"):
        metrics.inception_score(np.zeros((5, 3)), splits=6)


# --------------------------------------------------------------------------------------------
# Kernel inception distance
# --------------------------------------------------------------------------------------------


def test_kid_hand_computed():
    # d = 1: k(x, y) = (x y + 1)^3. X = {0, 1}, Y = {1, 2}:
    # off-diagonal k_xx: k(0, 1) = 1 -> mean 1; k_yy: k(1, 2) = 27 -> mean 27;
    # k_xy: 1, 1, 8, 27 -> mean 37 / 4.  MMD^2 = 1 + 27 - 2 * 37 / 4 = 9.5.
    mean, std = metrics.kernel_inception_distance([[0.0], [1.0]], [[1.0], [2.0]], num_subsets=3, subset_size=2)
    assert mean == pytest.approx(9.5, rel=1e-12) and std == pytest.approx(0.0, abs=1e-12)


def test_kid_of_same_distribution_is_near_zero_and_of_shifted_is_positive():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(600, 16)), rng.normal(size=(600, 16))
    same_mean, same_std = metrics.kernel_inception_distance(a, b, num_subsets=20, subset_size=300)
    shifted_mean, _ = metrics.kernel_inception_distance(a, b + 0.5, num_subsets=20, subset_size=300)
    assert abs(same_mean) < 3 * same_std
    assert shifted_mean > 0.1 and shifted_mean > 100 * abs(same_mean)


def test_kid_is_deterministic_given_seed_and_caps_subset_size():
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(50, 4)), rng.normal(size=(40, 4)) + 0.2
    first = metrics.kernel_inception_distance(a, b, num_subsets=5, subset_size=1000, seed=7)
    assert first == metrics.kernel_inception_distance(a, b, num_subsets=5, subset_size=1000, seed=7)
    assert first != metrics.kernel_inception_distance(a, b, num_subsets=5, subset_size=30, seed=8)
    with pytest.raises(ValueError, match="Received"):
        metrics.kernel_inception_distance(a, b[:, :3])


# --------------------------------------------------------------------------------------------
# Mode coverage
# --------------------------------------------------------------------------------------------

CENTERS, STD = data.mixture_spec("ring8")


def samples_at(modes, per_mode, rng, std=STD):
    return np.concatenate([CENTERS[m] + std * rng.normal(size=(per_mode, 2)) for m in modes])


def test_mode_coverage_all_modes():
    result = metrics.mode_coverage(samples_at(range(8), 200, np.random.default_rng(6)), CENTERS, STD)
    assert result["modes_covered"] == 8
    assert result["high_quality_fraction"] > 0.97  # 98.9% of a 2-D Gaussian lies within 3 std.
    assert result["counts"].shape == (8,) and result["counts"].sum() > 0.97 * 1600


def test_mode_coverage_some_modes_and_far_samples():
    rng = np.random.default_rng(7)
    on_modes = np.repeat(CENTERS[[0, 3, 5]], 10, axis=0)  # Exactly on 3 centers.
    far = rng.uniform(-0.5, 0.5, size=(30, 2))  # Near the origin, ~2 away from every mode.
    result = metrics.mode_coverage(np.concatenate([on_modes, far]), CENTERS, STD)
    assert result["modes_covered"] == 3
    assert result["high_quality_fraction"] == 0.5
    np.testing.assert_array_equal(result["counts"], [10, 0, 0, 10, 0, 10, 0, 0])
    far_only = metrics.mode_coverage(far, CENTERS, STD)
    assert far_only["modes_covered"] == 0 and far_only["high_quality_fraction"] == 0.0


def test_mode_coverage_threshold_and_min_samples():
    # A sample 2.5 std from mode 0 is high quality at 3 std but not at 2 std.
    samples = np.concatenate([CENTERS[:1] + [2.5 * STD, 0.0], np.repeat(CENTERS[1:2], 5, axis=0)])
    assert metrics.mode_coverage(samples, CENTERS, STD)["modes_covered"] == 2
    assert metrics.mode_coverage(samples, CENTERS, STD, threshold=2.0)["modes_covered"] == 1
    assert metrics.mode_coverage(samples, CENTERS, STD, min_samples=5)["modes_covered"] == 1


# --------------------------------------------------------------------------------------------
# Digits classifier
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def digits_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("digits_cache"))


@pytest.fixture(scope="module")
def classifier(digits_cache):
    return metrics.DigitsClassifier.load_or_train(digits_cache, image_size=16)


def test_digits_classifier_trains_accurately(classifier):
    assert classifier.trained
    assert classifier.test_accuracy > 0.9


def test_digits_classifier_cache_reloads_without_training(classifier, digits_cache):
    (name,) = os.listdir(digits_cache)
    assert name.endswith(".keras")
    mtime = os.path.getmtime(os.path.join(digits_cache, name))
    reloaded = metrics.DigitsClassifier.load_or_train(digits_cache, image_size=16)
    assert not reloaded.trained
    assert os.path.getmtime(os.path.join(digits_cache, name)) == mtime
    assert reloaded.test_accuracy == classifier.test_accuracy
    images = data.digits_array(16)[:20]
    np.testing.assert_allclose(reloaded.features(images), classifier.features(images), rtol=1e-5, atol=1e-6)


def test_digits_classifier_outputs(classifier):
    images = data.digits_array(16)[:300]
    features, logits = classifier.features(images, batch_size=128), classifier.logits(images)
    assert features.shape == (300, 128) and logits.shape == (300, 10)
    with pytest.raises(ValueError, match=r"\[n, 16, 16, channels\].*Received: shape \(3, 8, 8, 1\)"):
        classifier.features(np.zeros((3, 8, 8, 1)))


def test_digits_metrics_separate_real_from_noise(classifier):
    real = data.digits_array(16)
    rng = np.random.default_rng(8)
    noise = rng.uniform(-1, 1, size=real.shape).astype(np.float32)
    real_features = classifier.features(real)
    fid_real = metrics.frechet_distance_from_activations(real_features[:900], real_features[900:])
    fid_noise = metrics.frechet_distance_from_activations(real_features[:900], classifier.features(noise[:900]))
    assert fid_noise > 10 * fid_real
    assert metrics.inception_score(classifier.logits(real), splits=5)[0] > 7.0


# --------------------------------------------------------------------------------------------
# Reference statistics and FID from images
# --------------------------------------------------------------------------------------------


class CountingExtractor:
    """Flattens images; counts calls."""

    def __init__(self):
        self.calls = 0

    def features(self, images, batch_size=256):
        self.calls += 1
        return np.asarray(images, np.float64).reshape(len(images), -1)


def test_reference_statistics_are_cached(tmp_path):
    images = np.random.default_rng(9).normal(size=(50, 2, 2, 1))
    extractor, path = CountingExtractor(), tmp_path / "stats" / "ref.npz"
    mu, sigma = metrics.reference_statistics(extractor, images, path)
    assert extractor.calls == 1 and path.exists() and mu.shape == (4,) and sigma.shape == (4, 4)
    mu2, sigma2 = metrics.reference_statistics(extractor, None, path)
    assert extractor.calls == 1
    np.testing.assert_array_equal(mu, mu2)
    np.testing.assert_array_equal(sigma, sigma2)
    with pytest.raises(ValueError, match="images is None"):
        metrics.reference_statistics(extractor, None, tmp_path / "missing.npz")


def test_fid_from_images():
    rng = np.random.default_rng(10)
    real, fake = rng.normal(size=(400, 3, 1, 1)), rng.normal(size=(400, 3, 1, 1)) + 1.0
    extractor = CountingExtractor()
    ref = metrics.activation_statistics(extractor.features(real))
    assert metrics.fid_from_images(extractor, real, ref) == pytest.approx(0.0, abs=1e-9)
    expected = metrics.frechet_distance_from_activations(extractor.features(fake), extractor.features(real))
    assert metrics.fid_from_images(extractor, fake, ref, batch_size=7) == pytest.approx(expected, rel=1e-12)


# --------------------------------------------------------------------------------------------
# Inception features
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "where, reason",
    [("url", "which is a URL"), ("missing", "which does not exist"), ("empty", "which could not be loaded as a SavedModel")],
)
def test_inception_features_explains_what_to_pass(tmp_path, where, reason):
    received = {
        "url": metrics.InceptionFeatures.MODULE_URL,
        "missing": str(tmp_path / "no_such_dir"),
        "empty": str(tmp_path),  # Exists, but holds no SavedModel.
    }[where]
    with pytest.raises(metrics.InceptionModuleUnavailableError) as info:
        metrics.InceptionFeatures(received)
    message = str(info.value)
    assert isinstance(info.value, ValueError) and "\n" not in message
    assert f"received path_or_url={received!r}, {reason}" in message
    assert "pass its local directory" in message


class FakeInception(tf.Module):
    """Stands in for the TF-Hub module: pool_3 = per-channel means, logits = input height, width."""

    @tf.function(input_signature=[tf.TensorSpec([None, None, None, 3], tf.float32)])
    def __call__(self, images):
        size = tf.cast(tf.shape(images)[1:3], tf.float32)
        return {
            "pool_3": tf.reduce_mean(images, axis=[1, 2]),
            "logits": tf.tile(size[None], [tf.shape(images)[0], 1]),
        }


def test_inception_features_loads_saved_model_and_resizes(tmp_path):
    tf.saved_model.save(FakeInception(), str(tmp_path / "inception"))
    extractor = metrics.InceptionFeatures(str(tmp_path / "inception"))
    images = np.random.default_rng(11).uniform(-1, 1, size=(5, 8, 8, 1)).astype(np.float32)
    features = extractor.features(images, batch_size=2)
    logits = extractor.logits(images, batch_size=2)  # The fake's logits are its input size.
    np.testing.assert_array_equal(logits, np.full((5, 2), 299.0))
    assert features.shape == (5, 3)
    np.testing.assert_allclose(features[:, 0], features[:, 2])  # Gray images are repeated to RGB.
    np.testing.assert_allclose(features[:, 0], images.mean(axis=(1, 2, 3)), atol=0.05)
