"""Callbacks: rendering, PNG and TensorBoard records, and each callback on a tiny fit."""

import glob
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from tf_fusedprop import FusedPropGAN
from tf_fusedprop import networks
from tf_fusedprop.experiment import callbacks
from tf_fusedprop.experiment import data


def read_events(directory):
    """`{tag: [(step, plugin_name, tensor as numpy)]}` of every event file in `directory`."""
    records = {}
    for path in sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*"))):
        for raw in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(raw.numpy())
            for value in event.summary.value:
                tensor = tf.make_ndarray(value.tensor)
                records.setdefault(value.tag, []).append((event.step, value.metadata.plugin_data.plugin_name, tensor))
    return records


def tiny_gan(seed=0):
    gan = FusedPropGAN(
        networks.mlp_generator(latent_dim=4, units=8, hidden_layers=1, output_activation=None),
        networks.mlp_discriminator(units=8, hidden_layers=1),
        seed=seed,
    )
    gan.compile(keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3))
    return gan


def test_image_grid_layout_values_and_upscaling():
    images = np.stack([np.full((4, 4, 1), v, np.float32) for v in (-1.0, 0.0, 1.0, 2.0, -3.0)])
    grid = callbacks.image_grid(images, padding=1, min_cell=4)
    assert grid.dtype == np.uint8 and grid.shape == (2 * 5 + 1, 3 * 5 + 1, 1)  # ceil(sqrt(5)) = 3 columns.
    cell = lambda i: grid[1 + (i // 3) * 5 : 5 + (i // 3) * 5, 1 + (i % 3) * 5 : 5 + (i % 3) * 5]
    assert [int(cell(i).mean()) for i in range(5)] == [0, 128, 255, 255, 0]  # Clipped to [-1, 1].
    assert grid[0].max() == 0 and cell(5).max() == 0  # Padding and the empty cell stay black.
    assert callbacks.image_grid(images, min_cell=16).shape == (4 * 11, 4 * 16, 1)


def test_scatter_plot_draws_points_axes_and_centers():
    image = callbacks.scatter_plot(np.array([[1.0, 1.0], [50.0, 0.0]]), extent=2.0, centers=np.array([[-1.0, -1.0]]), size=101)
    assert image.shape == (101, 101, 3) and image.dtype == np.uint8
    np.testing.assert_array_equal(image[25, 75], (31, 119, 180))  # (1, 1): y up, so row 25.
    np.testing.assert_array_equal(image[75, 25], (214, 39, 40))  # The center's cross.
    np.testing.assert_array_equal(image[50, 10], (200, 200, 200))  # The x axis.
    assert (image == 255).all(axis=-1).mean() > 0.9  # The far point is not drawn.


def test_write_png_round_trips_and_leaves_no_temporary_file(tmp_path):
    image = np.random.default_rng(0).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    path = str(tmp_path / "x.png")
    callbacks.write_png(path, image)
    np.testing.assert_array_equal(tf.io.decode_png(tf.io.read_file(path)).numpy(), image)
    assert os.listdir(tmp_path) == ["x.png"]


def test_summary_records_use_tensorboard_plugin_formats(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    image = np.zeros((3, 5, 1), np.uint8)
    with writer.as_default():
        callbacks.summary_scalar("loss", 1.5, step=7)
        callbacks.summary_image("grid", image, step=7)
        callbacks.summary_text("config", "hello", step=0)
    writer.close()
    events = read_events(str(tmp_path))
    (step, plugin, value), = events["loss"]
    assert (step, plugin, float(value)) == (7, "scalars", 1.5)
    (step, plugin, value), = events["grid"]
    assert plugin == "images" and value[0] == b"5" and value[1] == b"3"  # Width, height, PNG.
    np.testing.assert_array_equal(tf.io.decode_png(value[2]).numpy(), image)
    (_, plugin, value), = events["config"]
    assert plugin == "text" and value == b"hello"


def test_callbacks_during_fit(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path / "logs"))
    throughput = callbacks.Throughput()
    evaluated = []

    def evaluate(generator):
        evaluated.append(len(evaluated))
        return {"score": float(len(evaluated))}

    evaluation = callbacks.Evaluation(evaluate, every=2)
    grid = callbacks.SampleGrid(
        np.zeros((10, 4), np.float32), str(tmp_path / "samples"),
        render=lambda s: callbacks.scatter_plot(s, extent=3.0), writer=writer,
    )
    backup = callbacks.BackupAndRestore(str(tmp_path / "backup"))
    gan = tiny_gan()
    history = gan.fit(
        data.ring8(16), epochs=3, steps_per_epoch=2, verbose=0, shuffle=False,
        callbacks=[throughput, evaluation, grid, callbacks.Scalars(writer), backup],
    )
    writer.close()

    assert evaluated == [0, 1]  # After epoch 2 (every=2) and after the last epoch.
    assert evaluation.last == {"score": 2.0}
    assert history.history["score"] == [1.0, 2.0]
    assert throughput.steps == 6 and throughput.steps_per_second > 0
    assert len(history.history["steps_per_second"]) == 3
    assert sorted(os.listdir(tmp_path / "samples")) == ["epoch_0001.png", "epoch_0002.png", "epoch_0003.png"]
    assert grid.last_path == str(tmp_path / "samples" / "epoch_0003.png")

    events = read_events(str(tmp_path / "logs"))
    assert [step for step, _, _ in events["d_loss"]] == [2, 4, 6]  # G updates, not epochs.
    assert [step for step, _, _ in events["score"]] == [4, 6]
    assert [step for step, _, _ in events["samples"]] == [2, 4, 6]

    assert backup.metadata() == {"epoch": 3, "steps": 6, "weights": "epoch_0003.weights.h5"}
    assert sorted(os.listdir(tmp_path / "backup")) == ["checkpoint.json", "epoch_0003.weights.h5"]
    restored = tiny_gan(seed=1)
    assert backup.restore(restored) == 3
    assert int(restored.g_optimizer.iterations.numpy()) == 6 and int(restored.d_optimizer.iterations.numpy()) == 6
    for a, b in zip(gan.variables + gan.d_optimizer.variables, restored.variables + restored.d_optimizer.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(gan.seed_generator.state.numpy(), restored.seed_generator.state.numpy())


def test_fit_resumes_from_the_restored_epoch(tmp_path):
    backup = callbacks.BackupAndRestore(str(tmp_path))
    gan = tiny_gan()
    gan.fit(data.ring8(16), epochs=2, steps_per_epoch=2, verbose=0, shuffle=False, callbacks=[backup])
    resumed = tiny_gan()
    epoch = backup.restore(resumed)
    history = resumed.fit(
        data.ring8(16), epochs=5, steps_per_epoch=2, initial_epoch=epoch, verbose=0, shuffle=False, callbacks=[backup]
    )
    assert history.epoch == [2, 3, 4]
    assert int(resumed.g_optimizer.iterations.numpy()) == 10
    assert json.loads((tmp_path / "checkpoint.json").read_text())["steps"] == 10


def test_restore_without_checkpoint_is_epoch_zero(tmp_path):
    backup = callbacks.BackupAndRestore(str(tmp_path / "none"))
    assert backup.metadata() is None
    assert backup.restore(tiny_gan()) == 0


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__]))
