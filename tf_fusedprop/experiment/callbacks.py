"""Keras callbacks for `FusedPropGAN` runs: sample grids, evaluation, throughput, scalars and
checkpoints that survive SIGKILL.

Their step counter is the number of G updates, `model.g_optimizer.iterations`, so TensorBoard
curves of a resumed run continue where the killed run stopped. Per-epoch callbacks that add
values (`Throughput`, `Evaluation`) write them into the epoch's `logs`, so the progress bar,
`History` and `Scalars` (placed after them) see them too. Images are rendered with numpy
only and written with `tf.io.encode_png` (no Pillow, no matplotlib).
"""

import json
import math
import os
import time

import keras
import numpy as np
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

__all__ = [
    "BackupAndRestore",
    "Evaluation",
    "SampleGrid",
    "Scalars",
    "Throughput",
    "image_grid",
    "scatter_plot",
    "summary_image",
    "summary_scalar",
    "summary_text",
    "write_png",
]


def _plugin(name):
    return summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=name))


# TensorBoard's own `tf.summary.scalar/image/text` need the tensorboard package, which
# TensorFlow no longer installs; these write the same records with core TensorFlow only.
def summary_scalar(name, value, step):
    """Writes a scalar to the default `tf.summary` writer, as TensorBoard's scalars plugin reads it."""
    return tf.summary.write(name, tf.constant(value, tf.float32), step=step, metadata=_plugin("scalars"))


def summary_image(name, image, step):
    """Writes a uint8 `[height, width, channels]` image, as TensorBoard's images plugin reads it."""
    image = np.asarray(image, dtype=np.uint8)
    tensor = tf.stack([tf.as_string(image.shape[1]), tf.as_string(image.shape[0]), tf.io.encode_png(image)])
    return tf.summary.write(name, tensor, step=step, metadata=_plugin("images"))


def summary_text(name, text, step):
    """Writes a (markdown) string, as TensorBoard's text plugin reads it."""
    return tf.summary.write(name, tf.constant(text), step=step, metadata=_plugin("text"))


def _global_step(model):
    return int(model.g_optimizer.iterations.numpy())


def _replace_atomically(path, write):
    """Calls `write(tmp_path)`, then renames the file to `path` (readers never see half a file)."""
    directory, name = os.path.split(path)
    tmp_path = os.path.join(directory, f".tmp{os.getpid()}-{name}")
    write(tmp_path)
    os.replace(tmp_path, path)


def write_png(path, image):
    """Writes a uint8 `[height, width, channels]` array as a PNG file, atomically."""
    data = tf.io.encode_png(np.asarray(image, dtype=np.uint8)).numpy()

    def write(tmp_path):
        with open(tmp_path, "wb") as f:
            f.write(data)

    _replace_atomically(path, write)


def image_grid(images, columns=None, padding=1, min_cell=32):
    """Tiles images in [-1, 1] into one uint8 image.

    Args:
      images: float array `[n, height, width, channels]`, values in [-1, 1] (clipped).
      columns: images per row; `None` for `ceil(sqrt(n))`.
      padding: black pixels between cells (before upscaling).
      min_cell: each image is enlarged by an integer factor (nearest neighbour) until it is
        at least this many pixels high.

    Returns:
      A uint8 array `[rows * (h + padding) + padding, ..., channels]` (times the factor).
    """
    images = np.asarray(images, dtype=np.float32)
    n, h, w, c = images.shape
    columns = columns or math.ceil(math.sqrt(n))
    rows = math.ceil(n / columns)
    pixels = np.round((np.clip(images, -1.0, 1.0) + 1.0) * 127.5).astype(np.uint8)
    grid = np.zeros((rows * (h + padding) + padding, columns * (w + padding) + padding, c), np.uint8)
    for i, image in enumerate(pixels):
        top, left = padding + (i // columns) * (h + padding), padding + (i % columns) * (w + padding)
        grid[top : top + h, left : left + w] = image
    factor = max(1, math.ceil(min_cell / h))
    return grid.repeat(factor, axis=0).repeat(factor, axis=1)


def scatter_plot(points, extent, centers=None, size=384):
    """A scatter plot of 2-D points rasterised with numpy, as a uint8 RGB image.

    White background, grey axes through the origin, samples as blue 2x2 dots, and `centers`
    (e.g. the modes of the true mixture) as red crosses drawn on top.

    Args:
      points: array `[n, 2]`; points outside the square are not drawn.
      extent: the square `[-extent, extent]^2` is plotted.
      centers: optional array `[m, 2]`.
      size: width and height in pixels.

    Returns:
      A uint8 array `[size, size, 3]`.
    """
    image = np.full((size, size, 3), 255, np.uint8)

    def to_pixels(xy):
        xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        cols = np.floor((xy[:, 0] + extent) / (2 * extent) * (size - 1) + 0.5).astype(np.int64)
        rows = np.floor((extent - xy[:, 1]) / (2 * extent) * (size - 1) + 0.5).astype(np.int64)
        inside = (cols >= 0) & (cols < size) & (rows >= 0) & (rows < size)
        return rows[inside], cols[inside]

    origin_row, origin_col = to_pixels([0.0, 0.0])
    image[origin_row, :] = image[:, origin_col] = 200
    rows, cols = to_pixels(points)
    for dr in (0, 1):
        for dc in (0, 1):
            image[np.minimum(rows + dr, size - 1), np.minimum(cols + dc, size - 1)] = (31, 119, 180)
    if centers is not None:
        rows, cols = to_pixels(centers)
        for d in range(-4, 5):
            image[np.clip(rows + d, 0, size - 1), cols] = (214, 39, 40)
            image[rows, np.clip(cols + d, 0, size - 1)] = (214, 39, 40)
    return image


class SampleGrid(keras.callbacks.Callback):
    """After every epoch, renders G's samples of fixed latents to `directory/epoch_XXXX.png`
    (epochs numbered from 1) and, with a `writer`, to TensorBoard as image "samples".

    Args:
      latents: the fixed latents, array `[n, latent_dim]`.
      directory: where the PNGs go (created if missing).
      render: maps float32 samples `[n, ...]` to a uint8 `[height, width, channels]` image,
        e.g. `image_grid` or a `scatter_plot` partial.
      writer: an optional `tf.summary` writer.

    Attributes:
      last_path: the path of the last PNG written, or None.
    """

    def __init__(self, latents, directory, render=image_grid, writer=None):
        super().__init__()
        self.latents = np.asarray(latents, dtype=np.float32)
        self.directory = directory
        self.render = render
        self.writer = writer
        self.last_path = None

    def path(self, epoch):
        """The PNG of (0-based) `epoch`."""
        return os.path.join(self.directory, f"epoch_{epoch + 1:04d}.png")

    def on_epoch_end(self, epoch, logs=None):
        samples = np.asarray(self.model.generator(self.latents, training=False), dtype=np.float32)
        image = self.render(samples)
        os.makedirs(self.directory, exist_ok=True)
        self.last_path = self.path(epoch)
        write_png(self.last_path, image)
        if self.writer is not None:
            with self.writer.as_default():
                summary_image("samples", image, step=_global_step(self.model))
            self.writer.flush()


class Evaluation(keras.callbacks.Callback):
    """Evaluates G every `every` epochs and after the last epoch; adds the metrics to the logs.

    Args:
      evaluate: maps the generator (a Keras model) to a dict of float metrics.
      every: epochs between evaluations.

    Attributes:
      last: the metrics of the last evaluation of this run, or None.
    """

    def __init__(self, evaluate, every=1):
        super().__init__()
        self.evaluate = evaluate
        self.every = every
        self.last = None

    def on_epoch_end(self, epoch, logs=None):
        last_epoch = self.params.get("epochs")
        if (epoch + 1) % self.every and epoch + 1 != last_epoch:
            return
        self.last = dict(self.evaluate(self.model.generator))
        if logs is not None:
            logs.update(self.last)


class Throughput(keras.callbacks.Callback):
    """Measures training speed: G updates per second of epoch time, this run.

    Epoch time runs from `on_epoch_begin` to this callback's `on_epoch_end`; place it first
    so that evaluation and sample grids are not counted. The first epoch includes tracing.
    Adds `steps_per_second` (of the epoch) to the logs.

    Attributes:
      steps: G updates trained in this run.
      seconds: their epoch time.
    """

    def __init__(self):
        super().__init__()
        self.steps = 0
        self.seconds = 0.0
        self._start = None

    @property
    def steps_per_second(self):
        """`steps / seconds` over this run's epochs (None before the first epoch ends)."""
        return self.steps / self.seconds if self.seconds else None

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        seconds = time.perf_counter() - self._start
        steps = self.params["steps"]
        self.steps += steps
        self.seconds += seconds
        if logs is not None:
            logs["steps_per_second"] = steps / seconds


class Scalars(keras.callbacks.Callback):
    """Writes every numeric value of the epoch logs as a TensorBoard scalar.

    The step is the number of G updates. Place it after the callbacks that add to the logs.
    """

    def __init__(self, writer):
        super().__init__()
        self.writer = writer

    def on_epoch_end(self, epoch, logs=None):
        step = _global_step(self.model)
        with self.writer.as_default():
            for name, value in (logs or {}).items():
                if np.ndim(value) == 0 and np.isfinite(float(value)):
                    summary_scalar(name, float(value), step=step)
        self.writer.flush()


class BackupAndRestore(keras.callbacks.Callback):
    """Saves the whole training state after every epoch, so that a killed run can resume.

    The equivalent of `keras.callbacks.BackupAndRestore`, made safe against SIGKILL at any
    instant: each epoch's state goes to a new file `epoch_XXXX.weights.h5` (both networks,
    both optimizers, the latent sampler), written under a temporary name and renamed; then
    `checkpoint.json` (epoch, steps, file) is replaced atomically; only then are older weight
    files deleted. `restore` loads the state the JSON names and returns the epoch to pass to
    `fit(initial_epoch=...)`. Checkpoints are kept after training.

    Args:
      backup_dir: a directory used by this callback only.
    """

    METADATA = "checkpoint.json"

    def __init__(self, backup_dir):
        super().__init__()
        self.backup_dir = backup_dir

    def metadata(self):
        """The last checkpoint's `{"epoch", "steps", "weights"}`, or None if there is none."""
        path = os.path.join(self.backup_dir, self.METADATA)
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return json.load(f)

    def restore(self, model):
        """Loads the last checkpoint into the (compiled) `model`; returns its epoch, or 0."""
        metadata = self.metadata()
        if metadata is None:
            return 0
        model.load_weights(os.path.join(self.backup_dir, metadata["weights"]))
        return int(metadata["epoch"])

    def on_epoch_end(self, epoch, logs=None):
        os.makedirs(self.backup_dir, exist_ok=True)
        weights = f"epoch_{epoch + 1:04d}.weights.h5"
        path = os.path.join(self.backup_dir, weights)
        _replace_atomically(path, lambda tmp: self.model.save_weights(tmp, overwrite=True))
        metadata = {"epoch": epoch + 1, "steps": _global_step(self.model), "weights": weights}

        def write(tmp_path):
            with open(tmp_path, "w") as f:
                json.dump(metadata, f)

        _replace_atomically(os.path.join(self.backup_dir, self.METADATA), write)
        for name in os.listdir(self.backup_dir):
            if name.endswith(".weights.h5") and name != weights:
                os.remove(os.path.join(self.backup_dir, name))
