"""callbacks: each callback on a tiny fit, checkpoints and resume."""

import json
import os

import keras
import numpy as np
import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop import FusedPropGAN, networks
from tf_fusedprop.experiment import callbacks, pictures, real_samples


def tiny_gan(seed=0):
    gan = FusedPropGAN(
        networks.mlp_generator(latent_dim=4, units=8, hidden_layers=1, output_activation=None),
        networks.mlp_discriminator(units=8, hidden_layers=1),
        seed=seed,
    )
    gan.compile(keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3))
    return gan


class CallbacksTest(tu.TestCase):
    def test_callbacks_during_fit(self):
        directory = self.get_temp_dir()
        writer = tf.summary.create_file_writer(os.path.join(directory, "logs"))
        throughput = callbacks.Throughput()
        evaluated = []

        def evaluate(generator):
            evaluated.append(len(evaluated))
            return {"score": float(len(evaluated))}

        evaluation = callbacks.Evaluation(evaluate, every=2, throughput=throughput)
        grid = callbacks.SampleGrid(
            np.zeros((10, 4), np.float32),
            os.path.join(directory, "samples"),
            render=lambda s: pictures.scatter_plot(s, extent=3.0),
            writer=writer,
        )
        backup = callbacks.BackupAndRestore(os.path.join(directory, "backup"))
        gan = tiny_gan()
        history = gan.fit(
            real_samples.ring8(16),
            epochs=3,
            steps_per_epoch=2,
            verbose=0,
            shuffle=False,
            callbacks=[throughput, evaluation, grid, callbacks.Scalars(writer), backup],
        )
        writer.close()

        self.assertEqual(evaluated, [0, 1])  # After epoch 2 (every=2) and after the last epoch.
        self.assertEqual(evaluation.last, {"score": 2.0})
        self.assertEqual(history.history["score"], [1.0, 2.0])
        self.assertEqual(
            [(h["epoch"], h["step"], h["metrics"], h["finite"]) for h in evaluation.history],
            [(2, 4, {"score": 1.0}, True), (3, 6, {"score": 2.0}, True)],
        )
        seconds = [h["train_seconds"] for h in evaluation.history]
        self.assertTrue(0 < seconds[0] < seconds[1] == throughput.seconds, seconds)
        self.assertEqual(throughput.steps, 6)
        self.assertGreater(throughput.steps_per_second, 0)
        self.assertLen(history.history["steps_per_second"], 3)
        self.assertEqual(
            sorted(os.listdir(os.path.join(directory, "samples"))),
            ["epoch_0001.png", "epoch_0002.png", "epoch_0003.png"],
        )
        self.assertEqual(grid.last_path, os.path.join(directory, "samples", "epoch_0003.png"))

        events = tu.read_events(os.path.join(directory, "logs"))
        self.assertEqual([step for step, _, _ in events["d_loss"]], [2, 4, 6])  # G updates, not epochs.
        self.assertEqual([step for step, _, _ in events["score"]], [4, 6])
        self.assertEqual([step for step, _, _ in events["samples"]], [2, 4, 6])

        self.assertEqual(backup.metadata(), {"epoch": 3, "steps": 6, "weights": "epoch_0003.weights.h5"})
        self.assertEqual(
            sorted(os.listdir(os.path.join(directory, "backup"))), ["checkpoint.json", "epoch_0003.weights.h5"]
        )
        restored = tiny_gan(seed=1)
        self.assertEqual(backup.restore(restored), 3)
        self.assertEqual(int(restored.g_optimizer.iterations.numpy()), 6)
        self.assertEqual(int(restored.d_optimizer.iterations.numpy()), 6)
        for a, b in zip(gan.variables + gan.d_optimizer.variables, restored.variables + restored.d_optimizer.variables):
            self.assertAllEqual(a.numpy(), b.numpy())
        self.assertAllEqual(gan.sampler.stream.state.numpy(), restored.sampler.stream.state.numpy())

    def test_history_flags_non_finite_losses_from_then_on(self):
        evaluation = callbacks.Evaluation(lambda generator: {"fid": np.float64(1.5), "modes": np.int64(3)})
        evaluation.set_model(tiny_gan())
        evaluation.set_params({"epochs": 4})
        for epoch, d_loss in enumerate([0.5, float("nan"), 0.7, 0.7]):
            evaluation.on_epoch_end(epoch, {"d_loss": d_loss, "g_loss": 1.0})
        self.assertEqual([h["finite"] for h in evaluation.history], [True, False, False, False])
        self.assertEqual(
            evaluation.history[0],
            {"epoch": 1, "step": 0, "train_seconds": None, "metrics": {"fid": 1.5, "modes": 3}, "finite": True},
        )
        self.assertEqual(json.loads(json.dumps(evaluation.history)), evaluation.history)  # plain numbers

    def test_fit_resumes_from_the_restored_epoch(self):
        directory = self.get_temp_dir()
        backup = callbacks.BackupAndRestore(directory)
        gan = tiny_gan()
        gan.fit(real_samples.ring8(16), epochs=2, steps_per_epoch=2, verbose=0, shuffle=False, callbacks=[backup])
        resumed = tiny_gan()
        epoch = backup.restore(resumed)
        history = resumed.fit(
            real_samples.ring8(16),
            epochs=5,
            steps_per_epoch=2,
            initial_epoch=epoch,
            verbose=0,
            shuffle=False,
            callbacks=[backup],
        )
        self.assertEqual(history.epoch, [2, 3, 4])
        self.assertEqual(int(resumed.g_optimizer.iterations.numpy()), 10)
        with open(os.path.join(directory, "checkpoint.json")) as f:
            self.assertEqual(json.load(f)["steps"], 10)

    def test_a_diverged_model_is_not_saved(self):
        directory = self.get_temp_dir()
        backup = callbacks.BackupAndRestore(directory)
        gan = tiny_gan()
        gan.d_optimizer.learning_rate = gan.g_optimizer.learning_rate = 1e30  # Step 2 is not finite.
        gan.fit(real_samples.ring8(16), epochs=3, steps_per_epoch=1, verbose=0, shuffle=False, callbacks=[backup])
        self.assertEqual(gan.divergence()["step"], 2)
        self.assertEqual(backup.metadata(), {"epoch": 1, "steps": 1, "weights": "epoch_0001.weights.h5"})
        self.assertEqual(sorted(os.listdir(directory)), ["checkpoint.json", "epoch_0001.weights.h5"])

    def test_restore_without_checkpoint_is_epoch_zero(self):
        backup = callbacks.BackupAndRestore(os.path.join(self.get_temp_dir(), "none"))
        self.assertIsNone(backup.metadata())
        self.assertEqual(backup.restore(tiny_gan()), 0)


if __name__ == "__main__":
    tf.test.main()
