"""pictures: the grid and scatter-plot rasterizers and the atomic PNG writer."""

import os

import numpy as np
import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop.experiment import pictures


class ImageGridTest(tu.TestCase):
    def test_layout_values_and_upscaling(self):
        tiles = np.stack([np.full((4, 4, 1), v, np.float32) for v in (-1.0, 0.0, 1.0, 2.0, -3.0)])
        grid = pictures.image_grid(tiles, padding=1, min_cell=4)
        self.assertEqual(grid.dtype, np.uint8)
        self.assertEqual(grid.shape, (2 * 5 + 1, 3 * 5 + 1, 1))  # ceil(sqrt(5)) = 3 columns.
        cell = lambda i: grid[1 + (i // 3) * 5 : 5 + (i // 3) * 5, 1 + (i % 3) * 5 : 5 + (i % 3) * 5]
        self.assertEqual([int(cell(i).mean()) for i in range(5)], [0, 128, 255, 255, 0])  # Clipped to [-1, 1].
        self.assertEqual(grid[0].max(), 0)  # Padding ...
        self.assertEqual(cell(5).max(), 0)  # ... and the empty cell stay black.
        self.assertEqual(pictures.image_grid(tiles, min_cell=16).shape, (4 * 11, 4 * 16, 1))

    def test_nan_is_black_without_warnings(self):
        with np.errstate(all="raise"):
            grid = pictures.image_grid(np.full((1, 4, 4, 1), np.nan, np.float32), padding=0, min_cell=4)
        self.assertEqual(grid.max(), 0)


class ScatterPlotTest(tu.TestCase):
    def test_draws_points_axes_and_centers(self):
        image = pictures.scatter_plot(
            np.array([[1.0, 1.0], [50.0, 0.0]]), extent=2.0, centers=np.array([[-1.0, -1.0]]), size=101
        )
        self.assertEqual(image.shape, (101, 101, 3))
        self.assertEqual(image.dtype, np.uint8)
        self.assertAllEqual(image[25, 75], (31, 119, 180))  # (1, 1): y up, so row 25.
        self.assertAllEqual(image[75, 25], (214, 39, 40))  # The center's cross.
        self.assertAllEqual(image[50, 10], (200, 200, 200))  # The x axis.
        self.assertGreater((image == 255).all(axis=-1).mean(), 0.9)  # The far point is not drawn.

    def test_non_finite_points_are_not_drawn(self):
        with np.errstate(all="raise"):
            image = pictures.scatter_plot(np.array([[np.nan, 0.0], [np.inf, 1.0]]), extent=2.0, size=101)
        self.assertAllEqual(image, pictures.scatter_plot(np.zeros((0, 2)), extent=2.0, size=101))


class WritePngTest(tu.TestCase):
    def test_round_trips_and_leaves_no_temporary_file(self):
        directory = self.get_temp_dir()
        image = np.random.default_rng(0).integers(0, 256, (5, 7, 3), dtype=np.uint8)
        path = os.path.join(directory, "x.png")
        pictures.write_png(path, image)
        self.assertAllEqual(tf.io.decode_png(tf.io.read_file(path)).numpy(), image)
        self.assertEqual(os.listdir(directory), ["x.png"])


if __name__ == "__main__":
    tf.test.main()
