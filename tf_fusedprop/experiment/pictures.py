"""The pictures a run draws: sample images rendered with numpy only and written as PNG with `tf.io.encode_png` (no
Pillow, no matplotlib): a grid of generated images, a scatter plot of 2-D samples.
"""

import math

import numpy as np
import tensorflow as tf

from tf_fusedprop.experiment import files

__all__ = ["image_grid", "scatter_plot", "write_png"]


def write_png(path, image, what="the sample grid"):
    """Writes a uint8 `[height, width, channels]` array as a PNG file, atomically (`files.atomic_write`:
    `files.WriteError` naming `what` when the disk is full or not writable)."""
    data = tf.io.encode_png(np.asarray(image, dtype=np.uint8)).numpy()

    def write(tmp_path):
        with open(tmp_path, "wb") as f:
            f.write(data)

    files.atomic_write(path, write, what, len(data))


def image_grid(images, columns=None, padding=1, min_cell=32):
    """Tiles images in [-1, 1] into one uint8 image.

    Args:
      images: float array `[n, height, width, channels]`, values in [-1, 1] (clipped; NaN, as a
        diverged generator makes, is drawn black).
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
    pixels = np.round((np.clip(np.nan_to_num(images, nan=-1.0), -1.0, 1.0) + 1.0) * 127.5).astype(np.uint8)
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
      points: array `[n, 2]`; points outside the square (or not finite) are not drawn.
      extent: the square `[-extent, extent]^2` is plotted.
      centers: optional array `[m, 2]`.
      size: width and height in pixels.

    Returns:
      A uint8 array `[size, size, 3]`.
    """
    image = np.full((size, size, 3), 255, np.uint8)

    def to_pixels(xy):
        xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        xy = xy[np.isfinite(xy).all(axis=1)]
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
