"""Sample-quality metrics for GANs: FID, IS, KID, mode coverage, and their feature extractors.

The metrics are plain numpy/scipy functions of activations (float64 inside), so they are
cheap to test and independent of the network that produced the activations:

* `frechet_distance`, `activation_statistics`, `frechet_distance_from_activations`: the
  Frechet Inception Distance (FID; Heusel et al. 2017, "GANs Trained by a Two Time-Scale Update
  Rule Converge to a Local Nash Equilibrium"), computed like the TTUR reference code.
* `inception_score`: the Inception Score (IS; Salimans et al. 2016, "Improved Techniques for
  Training GANs"), from classifier logits.
* `kernel_inception_distance`: the Kernel Inception Distance (KID; Binkowski et al. 2018,
  "Demystifying MMD GANs"), an unbiased MMD^2 with a cubic polynomial kernel.
* `mode_coverage`: modes captured and fraction of high-quality samples for the 2-D Gaussian
  mixtures of Metz et al. 2017 (`tf_fusedprop.data.mixture_spec` gives their ground truth).

Feature extractors map images in [-1, 1] to activations; both have `features(images)` (for
FID/KID) and `logits(images)` (for IS):

* `DigitsClassifier`: a small CNN trained here, in seconds, on scikit-learn's digits. Its
  scores are only comparable with scores from the same classifier (same `image_size`, seed).
* `InceptionFeatures`: TF-GAN's Inception, the standard network of CIFAR-10 FID/IS. Its
  weights cannot be downloaded by this package: pass a local copy of the module.

`reference_statistics` caches the real data's `(mu, sigma)` as `.npz`; `fid_from_images`
scores generated images against them.
"""

import os
import warnings

import keras
import numpy as np
import scipy.linalg
import scipy.special
import tensorflow as tf

from tf_fusedprop.experiment import data as _data

__all__ = [
    "DigitsClassifier",
    "InceptionFeatures",
    "InceptionModuleUnavailableError",
    "activation_statistics",
    "fid_from_images",
    "frechet_distance",
    "frechet_distance_from_activations",
    "inception_score",
    "kernel_inception_distance",
    "mode_coverage",
    "reference_statistics",
]


# --------------------------------------------------------------------------------------------
# Frechet distance (FID)
# --------------------------------------------------------------------------------------------


def activation_statistics(acts):
    """Mean and covariance of activations, the Gaussian that FID fits to a set of samples.

    Args:
      acts: array of shape `[n, d]` with `n >= 2` (one row of activations per sample).

    Returns:
      `(mu, sigma)`: float64 arrays of shapes `[d]` and `[d, d]`; `sigma` is the unbiased
      sample covariance (`np.cov`, divisor `n - 1`), as in the TTUR reference code.
    """
    acts = np.asarray(acts, dtype=np.float64)
    if acts.ndim != 2 or acts.shape[0] < 2:
        raise ValueError(f"acts must have shape [n, d] with n >= 2. Received: shape {acts.shape}")
    return acts.mean(axis=0), np.cov(acts, rowvar=False)


def frechet_distance(mu1, sigma1, mu2, sigma2, eps=1e-6):
    """Frechet distance between the Gaussians `N(mu1, sigma1)` and `N(mu2, sigma2)`.

        d^2 = ||mu1 - mu2||^2 + Tr(sigma1 + sigma2 - 2 (sigma1 sigma2)^(1/2))

    (Dowson & Landau 1982; as FID: Heusel et al. 2017). Computed like the TTUR reference code
    (`fid.py`): `scipy.linalg.sqrtm` of the product; if that is not finite (a numerically
    singular product), `eps * I` is added to both covariances and the square root retried;
    the real part of the square root is used. Singular covariances (e.g. fewer samples than
    dimensions, or features that are always 0) are fine: their warning is silenced.

    Args:
      mu1, mu2: mean vectors of shape `[d]`.
      sigma1, sigma2: covariance matrices of shape `[d, d]`.
      eps: diagonal offset used only when the first square root is not finite.

    Returns:
      The squared Frechet distance, a Python float (>= 0 up to rounding).

    Raises:
      ValueError: mismatched shapes, or a square root whose imaginary part is not negligible
        (more than 1e-3 relative to the trace; the covariances are then not valid).
    """
    mu1, mu2 = np.atleast_1d(np.asarray(mu1, np.float64)), np.atleast_1d(np.asarray(mu2, np.float64))
    sigma1, sigma2 = np.atleast_2d(np.asarray(sigma1, np.float64)), np.atleast_2d(np.asarray(sigma2, np.float64))
    d = mu1.shape[0]
    if mu1.shape != (d,) or mu2.shape != (d,) or sigma1.shape != (d, d) or sigma2.shape != (d, d):
        raise ValueError(
            "Expected mu1, mu2 of shape [d] and sigma1, sigma2 of shape [d, d]. Received: shapes "
            f"mu1 {mu1.shape}, sigma1 {sigma1.shape}, mu2 {mu2.shape}, sigma2 {sigma2.shape}"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
        covmean = scipy.linalg.sqrtm(sigma1 @ sigma2)
        if not np.isfinite(covmean).all():
            offset = eps * np.eye(d)
            covmean = scipy.linalg.sqrtm((sigma1 + offset) @ (sigma2 + offset))
    if np.iscomplexobj(covmean):
        scale = max(1.0, abs(np.trace(covmean.real)))
        if np.max(np.abs(np.diagonal(covmean).imag)) > 1e-3 * scale:
            raise ValueError(
                "The square root of sigma1 @ sigma2 has a large imaginary part "
                f"({np.max(np.abs(np.diagonal(covmean).imag)):.3g}); are sigma1 and sigma2 covariances?"
            )
        covmean = covmean.real
    diff = mu1 - mu2
    return float(diff @ diff + np.trace(sigma1) + np.trace(sigma2) - 2.0 * np.trace(covmean))


def frechet_distance_from_activations(a, b):
    """FID between two sets of activations: `frechet_distance` of their `activation_statistics`.

    Args:
      a, b: arrays of shapes `[n_a, d]` and `[n_b, d]`.

    Returns:
      The Frechet distance, a Python float. It is biased upwards for small `n` (Binkowski et
      al. 2018): compare only scores computed from the same numbers of samples.
    """
    return frechet_distance(*activation_statistics(a), *activation_statistics(b))


# --------------------------------------------------------------------------------------------
# Inception score (IS)
# --------------------------------------------------------------------------------------------


def inception_score(logits, splits=10):
    """Inception Score from classifier logits (Salimans et al. 2016).

        IS = exp(E_x KL(p(y|x) || p(y))),   p(y|x) = softmax(logits(x)),  p(y) = E_x p(y|x)

    computed, as in the reference code, on each of `splits` consecutive parts of the samples
    (`np.array_split`) with `p(y)` the mean over that part. It ranges from 1 (every sample gives
    the same prediction) to `K` (confident predictions spread evenly over all K classes).

    Args:
      logits: array of shape `[n, K]` of unnormalized log-probabilities.
      splits: positive int <= n, the number of parts.

    Returns:
      `(mean, std)` of the per-part scores, Python floats.
    """
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 2 or logits.shape[0] == 0:
        raise ValueError(f"logits must have shape [n, num_classes] with n >= 1. Received: shape {logits.shape}")
    if not 1 <= splits <= logits.shape[0]:
        raise ValueError(f"splits must be in [1, n={logits.shape[0]}]. Received: splits={splits!r}")
    scores = []
    for part in np.array_split(logits, splits):
        log_p = scipy.special.log_softmax(part, axis=1)
        log_py = np.log(np.exp(log_p).mean(axis=0))
        kl = np.sum(np.exp(log_p) * (log_p - log_py), axis=1)
        scores.append(np.exp(kl.mean()))
    return float(np.mean(scores)), float(np.std(scores))


# --------------------------------------------------------------------------------------------
# Kernel inception distance (KID)
# --------------------------------------------------------------------------------------------


def _polynomial_kernel(x, y):
    """The KID kernel `k(x, y) = (x . y / d + 1)^3` for all pairs of rows."""
    return (x @ y.T / x.shape[1] + 1.0) ** 3


def _mmd2_unbiased(x, y):
    """Unbiased MMD^2 (Gretton et al. 2012, eq. 3): off-diagonal means of k_xx and k_yy minus
    twice the mean of k_xy."""
    m, n = len(x), len(y)
    k_xx, k_yy, k_xy = _polynomial_kernel(x, x), _polynomial_kernel(y, y), _polynomial_kernel(x, y)
    xx = (k_xx.sum() - np.trace(k_xx)) / (m * (m - 1))
    yy = (k_yy.sum() - np.trace(k_yy)) / (n * (n - 1))
    return xx + yy - 2.0 * k_xy.mean()


def kernel_inception_distance(a, b, num_subsets=100, subset_size=1000, seed=0):
    """Kernel Inception Distance (Binkowski et al. 2018, "Demystifying MMD GANs").

    The unbiased estimate of MMD^2 between the distributions of `a` and `b` with the cubic
    polynomial kernel `k(x, y) = (x . y / d + 1)^3`, averaged over `num_subsets` random subsets
    of `subset_size` rows drawn without replacement from each set (the authors' code). Unlike
    FID it is unbiased: it is ~0 (and may be slightly negative) for equal distributions.

    Args:
      a, b: arrays of shapes `[n_a, d]` and `[n_b, d]`.
      num_subsets: positive int, the number of subsets.
      subset_size: rows per subset; capped at `min(n_a, n_b)` (must end up >= 2).
      seed: seed of the subset draws; equal seeds give equal results.

    Returns:
      `(mean, std)` of the per-subset MMD^2 estimates, Python floats.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"a and b must have shapes [n_a, d] and [n_b, d]. Received: {a.shape} and {b.shape}")
    size = min(subset_size, len(a), len(b))
    if size < 2 or num_subsets < 1:
        raise ValueError(
            "Need num_subsets >= 1 and at least 2 rows per subset. Received: "
            f"num_subsets={num_subsets}, subset_size={subset_size}, n_a={len(a)}, n_b={len(b)}"
        )
    rng = np.random.default_rng(seed)
    estimates = [
        _mmd2_unbiased(a[rng.choice(len(a), size, replace=False)], b[rng.choice(len(b), size, replace=False)])
        for _ in range(num_subsets)
    ]
    return float(np.mean(estimates)), float(np.std(estimates))


# --------------------------------------------------------------------------------------------
# Mode coverage for the 2-D mixtures
# --------------------------------------------------------------------------------------------


def mode_coverage(samples, centers, std, threshold=3.0, min_samples=1):
    """Modes captured and fraction of high-quality samples for a Gaussian mixture.

    The convention used to score the 2-D ring and grid of Metz et al. 2017 ("Unrolled
    Generative Adversarial Networks") by VEEGAN (Srivastava et al. 2017) and later papers
    (PacGAN, Lin et al. 2018): each sample is assigned to its nearest center; it is
    *high quality* if its Euclidean distance to that center is at most `threshold * std`
    (3 standard deviations); a mode is *captured* if at least `min_samples` high-quality
    samples are assigned to it. (In 2-D, 98.9% of a mode's own samples lie within 3 std.)

    Args:
      samples: array of shape `[n, dim]` of generated samples.
      centers: array of shape `[num_modes, dim]` (e.g. from `data.mixture_spec`).
      std: positive float, the per-axis standard deviation of each mode.
      threshold: the high-quality radius, in units of `std`.
      min_samples: high-quality samples a mode needs to count as captured.

    Returns:
      A dict with `modes_covered` (int), `high_quality_fraction` (float in [0, 1]) and
      `counts` (int array `[num_modes]`, high-quality samples per mode).
    """
    samples, centers = np.asarray(samples, np.float64), np.asarray(centers, np.float64)
    if samples.ndim != 2 or centers.ndim != 2 or samples.shape[1] != centers.shape[1] or not len(samples):
        raise ValueError(
            f"samples and centers must have shapes [n, dim] and [num_modes, dim] with n >= 1. "
            f"Received: {samples.shape} and {centers.shape}"
        )
    if not std > 0:
        raise ValueError(f"std must be positive. Received: std={std!r}")
    distances = np.linalg.norm(samples[:, None, :] - centers[None, :, :], axis=-1)
    nearest = distances.argmin(axis=1)
    high_quality = distances[np.arange(len(samples)), nearest] <= threshold * std
    counts = np.bincount(nearest[high_quality], minlength=len(centers))
    return {
        "modes_covered": int(np.sum(counts >= min_samples)),
        "high_quality_fraction": float(high_quality.mean()),
        "counts": counts,
    }


# --------------------------------------------------------------------------------------------
# Feature extractors
# --------------------------------------------------------------------------------------------


def _check_images(images, image_size=None):
    images = np.asarray(images, dtype=np.float32)
    if images.ndim != 4 or (image_size is not None and images.shape[1:3] != (image_size, image_size)):
        expected = f"[n, {image_size}, {image_size}, channels]" if image_size else "[n, height, width, channels]"
        raise ValueError(f"images must have shape {expected}, values in [-1, 1]. Received: shape {images.shape}")
    return images


def _batched(fn, images, batch_size):
    """Concatenates the numpy outputs (a tuple) of `fn` over batches of `images`."""
    outputs = [fn(images[i : i + batch_size]) for i in range(0, len(images), batch_size)]
    return tuple(np.concatenate([np.asarray(o[k]) for o in outputs]) for k in range(len(outputs[0])))


class DigitsClassifier:
    """A small CNN classifier of scikit-learn's handwritten digits, a feature extractor for
    FID/KID/IS on digits.

    Trained here (no download) on `tf_fusedprop.data.digits_array(image_size)`: the 1,797 8x8
    digits scaled to [-1, 1] and bilinearly resized to `image_size`, 1 channel; 20% of the
    images (stratified, fixed split) are held out and give `test_accuracy`. Architecture:
    two 3x3 conv + 2x2 max-pool blocks (16, 32 channels, ReLU), a 128-unit ReLU layer (the
    features), and a 10-way linear layer (the logits).

    Training is seeded through `keras.utils.set_random_seed(seed)`, which also reseeds the
    global Python, numpy and TensorFlow generators of the calling process.

    Attributes:
      model: the `keras.Model` (image -> logits).
      image_size: the input height and width.
      test_accuracy: accuracy on the held-out split.
      trained: True if this object was trained in this process, False if loaded from a file.
    """

    FEATURES_LAYER = "features"
    LOGITS_LAYER = "logits"
    #: Bump when the architecture, data or training recipe changes: it is part of cache names.
    VERSION = 1

    def __init__(self, model, trained=False):
        """Wraps a trained digits model (as built by `train`); use `train` or `load_or_train`."""
        self.model = model
        self.image_size = int(model.input.shape[1])
        self.trained = trained
        self._heads = keras.Model(
            model.input, [model.get_layer(self.FEATURES_LAYER).output, model.get_layer(self.LOGITS_LAYER).output]
        )
        _, x_test, _, y_test = self._split(self.image_size)
        self.test_accuracy = float(np.mean(self.logits(x_test).argmax(axis=1) == y_test))

    @staticmethod
    def _split(image_size):
        from sklearn.model_selection import train_test_split  # Lazy, like data.digits_array.
        from sklearn.datasets import load_digits

        labels = load_digits().target
        return train_test_split(_data.digits_array(image_size), labels, test_size=0.2, stratify=labels, random_state=0)

    @classmethod
    def _build(cls, image_size):
        inputs = keras.Input((image_size, image_size, 1))
        x = inputs
        for filters in (16, 32):
            x = keras.layers.Conv2D(filters, 3, padding="same", activation="relu")(x)
            x = keras.layers.MaxPooling2D(2)(x)
        x = keras.layers.Flatten()(x)
        x = keras.layers.Dense(128, activation="relu", name=cls.FEATURES_LAYER)(x)
        return keras.Model(inputs, keras.layers.Dense(10, name=cls.LOGITS_LAYER)(x), name="digits_classifier")

    @classmethod
    def train(cls, image_size=16, epochs=10, seed=0):
        """Trains a classifier from scratch (a few seconds on CPU).

        Args:
          image_size: input height and width (at least 4: two 2x2 poolings).
          epochs: passes over the 1,437 training images (batch 64, Adam 1e-3).
          seed: seed of the weights and the shuffling.

        Returns:
          A `DigitsClassifier` with `trained=True`.
        """
        x_train, _, y_train, _ = cls._split(image_size)
        keras.utils.set_random_seed(seed)
        model = cls._build(image_size)
        model.compile(
            optimizer=keras.optimizers.Adam(1e-3),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
        model.fit(x_train, y_train, batch_size=64, epochs=epochs, shuffle=True, verbose=0)
        return cls(model, trained=True)

    @classmethod
    def load_or_train(cls, cache_dir, image_size=16, seed=0):
        """Loads the classifier cached in `cache_dir`, or trains and caches it.

        The file is `cache_dir/digits_classifier_{image_size}px_seed{seed}_v{VERSION}.keras`,
        written atomically. `test_accuracy` is recomputed on the held-out split after loading.

        Args:
          cache_dir: directory of the cached model (created if missing).
          image_size: input height and width.
          seed: training seed.

        Returns:
          A `DigitsClassifier`; its `trained` attribute says whether it was trained now.
        """
        os.makedirs(cache_dir, exist_ok=True)
        path = os.path.join(cache_dir, f"digits_classifier_{image_size}px_seed{seed}_v{cls.VERSION}.keras")
        if os.path.exists(path):
            return cls(keras.saving.load_model(path, compile=False), trained=False)
        classifier = cls.train(image_size=image_size, seed=seed)
        tmp_path = f"{path[: -len('.keras')]}.tmp{os.getpid()}.keras"
        classifier.model.save(tmp_path)
        os.replace(tmp_path, path)
        return classifier

    def _outputs(self, images, batch_size):
        images = _check_images(images, self.image_size)
        if images.shape[-1] != 1:
            raise ValueError(f"images must have 1 channel. Received: shape {images.shape}")
        return _batched(lambda x: self._heads(x, training=False), images, batch_size)

    def features(self, images, batch_size=256):
        """Penultimate-layer activations (128 ReLU units), for FID and KID.

        Args:
          images: float array `[n, image_size, image_size, 1]` in [-1, 1].
          batch_size: images per forward pass.

        Returns:
          A float32 array of shape `[n, 128]`.
        """
        return self._outputs(images, batch_size)[0]

    def logits(self, images, batch_size=256):
        """Class logits (10 digits), for the Inception Score.

        Args:
          images: float array `[n, image_size, image_size, 1]` in [-1, 1].
          batch_size: images per forward pass.

        Returns:
          A float32 array of shape `[n, 10]`.
        """
        return self._outputs(images, batch_size)[1]


class InceptionModuleUnavailableError(ValueError):
    """The TF-GAN Inception module is not available as a local SavedModel directory."""


class InceptionFeatures:
    """TF-GAN's Inception network, the standard feature extractor for CIFAR-10 FID and IS.

    The network is the TF-Hub module `MODULE_URL`, the graph of TTUR's and pytorch-fid's
    reference FID. This package never downloads it: fetch it on a machine with internet
    access (e.g. `MODULE_URL + "?tf-hub-format=compressed"` is a .tar.gz), extract it, and pass
    the directory. It is loaded with `tf.saved_model.load` (tensorflow_hub is not needed) and
    called like TF-GAN's `classifier_fn_from_tfhub`: the loaded object maps a batch
    `[n, 299, 299, 3]` in [-1, 1] to a dict with `pool_3` (2048 features) and `logits`.

    Inputs are preprocessed like TF-GAN's `preprocess_image`: bilinear resize to 299x299 with
    TF1 semantics (`align_corners=False, half_pixel_centers=False`); images are expected in
    [-1, 1] already (TF-GAN's `(x - 128) / 128` of uint8 images); 1-channel images are repeated
    to 3 channels. ~12 images/s on 2 CPU cores: prefer a GPU.
    """

    MODULE_URL = "https://tfhub.dev/tensorflow/tfgan/eval/inception/1"
    IMAGE_SIZE = 299

    def __init__(self, path_or_url, features_key="pool_3", logits_key="logits"):
        """Loads the module.

        Args:
          path_or_url: the local directory of the extracted module (any path `tf.io.gfile`
            reads). A URL is refused: nothing is downloaded.
          features_key, logits_key: output keys of the features and of the logits.

        Raises:
          InceptionModuleUnavailableError (a ValueError): `path_or_url` is a URL, does not
            exist, or is not a loadable SavedModel.
        """
        path = os.fspath(path_or_url)
        if path.startswith(("http://", "https://")):
            raise self._unavailable(path_or_url, "is a URL, and this package downloads nothing")
        if not tf.io.gfile.exists(path):
            raise self._unavailable(path_or_url, "does not exist")
        try:
            self._module = tf.saved_model.load(path)
        except Exception as err:  # Any load failure: not a SavedModel, corrupt, wrong format.
            cause = " ".join(str(err).split())[:150]  # One line.
            reason = f"could not be loaded as a SavedModel ({type(err).__name__}: {cause})"
            raise self._unavailable(path_or_url, reason) from err
        if not callable(self._module):
            raise self._unavailable(path_or_url, "loads, but is not callable as module(images)")
        self.path = path
        self.features_key, self.logits_key = features_key, logits_key

    @classmethod
    def _unavailable(cls, path_or_url, reason):
        return InceptionModuleUnavailableError(
            f"InceptionFeatures needs the TF-GAN Inception module as a local SavedModel directory; "
            f"received path_or_url={str(path_or_url)!r}, which {reason}. Download {cls.MODULE_URL} "
            "(append ?tf-hub-format=compressed for a .tar.gz) on a machine with internet, extract it, "
            "and pass its local directory."
        )

    def _outputs(self, images, batch_size):
        images = _check_images(images)
        if images.shape[-1] not in (1, 3):
            raise ValueError(f"images must have 1 or 3 channels. Received: shape {images.shape}")

        def run(batch):
            batch = tf.convert_to_tensor(batch)
            if batch.shape[-1] == 1:
                batch = tf.repeat(batch, 3, axis=-1)
            batch = tf.raw_ops.ResizeBilinear(
                images=batch, size=[self.IMAGE_SIZE, self.IMAGE_SIZE], align_corners=False, half_pixel_centers=False
            )
            outputs = self._module(batch)
            missing = {self.features_key, self.logits_key} - set(outputs)
            if missing:
                raise ValueError(
                    f"The Inception module's outputs lack {sorted(missing)}. Received keys: {sorted(outputs)}"
                )
            flat = lambda t: tf.reshape(t, [tf.shape(t)[0], -1]).numpy()
            return flat(outputs[self.features_key]), flat(outputs[self.logits_key])

        return _batched(run, images, batch_size)

    def features(self, images, batch_size=64):
        """`pool_3` activations (2048 for the standard module), for FID and KID.

        Args:
          images: float array `[n, height, width, 1 or 3]` in [-1, 1], any height and width.
          batch_size: images per forward pass.

        Returns:
          A float32 array of shape `[n, features]`.
        """
        return self._outputs(images, batch_size)[0]

    def logits(self, images, batch_size=64):
        """Class logits (1008 for the standard module), for the Inception Score.

        Args:
          images: float array `[n, height, width, 1 or 3]` in [-1, 1].
          batch_size: images per forward pass.

        Returns:
          A float32 array of shape `[n, classes]`.
        """
        return self._outputs(images, batch_size)[1]


# --------------------------------------------------------------------------------------------
# Reference statistics and FID from images
# --------------------------------------------------------------------------------------------


def reference_statistics(extractor, images, cache_path, batch_size=256):
    """`(mu, sigma)` of the real data's activations, computed once and cached as `.npz`.

    The cache is keyed by `cache_path` only: use one path per (extractor, dataset, split).
    It is written atomically, with arrays `mu`, `sigma` and `num_images`.

    Args:
      extractor: an object with `features(images, batch_size=...)` (e.g. `DigitsClassifier`,
        `InceptionFeatures`).
      images: real images, as `extractor.features` takes them; may be `None` when the cache
        exists.
      cache_path: path of the `.npz` file (its directory is created if missing).
      batch_size: images per forward pass.

    Returns:
      `(mu, sigma)`: float64 arrays of shapes `[d]` and `[d, d]`.
    """
    cache_path = os.fspath(cache_path)
    if os.path.exists(cache_path):
        with np.load(cache_path) as cached:
            return cached["mu"], cached["sigma"]
    if images is None:
        raise ValueError(
            f"No cached statistics at cache_path={cache_path!r}, and images is None: pass the real images."
        )
    mu, sigma = activation_statistics(extractor.features(images, batch_size=batch_size))
    os.makedirs(os.path.dirname(os.path.abspath(cache_path)), exist_ok=True)
    tmp_path = f"{cache_path}.tmp{os.getpid()}"
    with open(tmp_path, "wb") as f:
        np.savez(f, mu=mu, sigma=sigma, num_images=len(images))
    os.replace(tmp_path, cache_path)
    return mu, sigma


def fid_from_images(extractor, fake_images, ref_stats, batch_size=256):
    """FID of generated images against reference statistics.

    Args:
      extractor: an object with `features(images, batch_size=...)`.
      fake_images: generated images, as `extractor.features` takes them (at least 2).
      ref_stats: `(mu, sigma)` of the real data, e.g. from `reference_statistics`.
      batch_size: images per forward pass.

    Returns:
      The Frechet distance, a Python float.
    """
    mu, sigma = activation_statistics(extractor.features(fake_images, batch_size=batch_size))
    return frechet_distance(mu, sigma, *ref_stats)
