"""divergence: the monitor stops fit at the diverged batch; the message; the suggested rates and command."""

import hashlib
import os
import re
import shlex

import keras
import numpy as np
import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop import FusedPropGAN, networks
from tf_fusedprop.experiment import callbacks, divergence, real_samples


def tiny_gan(learning_rate=1e-3):
    gan = FusedPropGAN(
        networks.mlp_generator(latent_dim=4, units=8, hidden_layers=1, output_activation=None),
        networks.mlp_discriminator(units=8, hidden_layers=1),
        seed=0,
    )
    gan.compile(keras.optimizers.Adam(learning_rate), keras.optimizers.Adam(learning_rate))
    return gan


def md5(path):
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


class DivergenceMonitorTest(tu.TestCase):
    def test_an_absurd_learning_rate_stops_fit_at_the_diverged_batch_and_the_last_good_checkpoint_stays(self):
        directory = self.get_temp_dir()
        backup = callbacks.BackupAndRestore(os.path.join(directory, "backup"))
        grid = callbacks.SampleGrid(
            np.zeros((4, 4), np.float32),
            os.path.join(directory, "samples"),
            render=lambda s: np.zeros((2, 2, 3), np.uint8),
        )
        run = [divergence.DivergenceMonitor(backup, workdir=directory), grid, backup]
        gan = tiny_gan()
        gan.fit(real_samples.ring8(16), epochs=1, steps_per_epoch=3, verbose=0, shuffle=False, callbacks=run)
        weights = os.path.join(directory, "backup", "epoch_0001.weights.h5")
        good = md5(weights)

        gan.d_optimizer.learning_rate = gan.g_optimizer.learning_rate = 1e30  # Step 4 blows the weights up.
        with self.assertRaises(divergence.TrainingDivergedError) as info:
            gan.fit(
                real_samples.ring8(16),
                epochs=3,
                initial_epoch=1,
                steps_per_epoch=3,
                verbose=0,
                shuffle=False,
                callbacks=run,
            )
        error = info.exception
        self.assertEqual(error.step, 5)  # The first update computed from non-finite values.
        self.assertEqual(int(gan.g_optimizer.iterations.numpy()), 5)  # Stopped at that batch.
        self.assertEqual(error.checkpoint, {"epoch": 1, "steps": 3, "weights": "epoch_0001.weights.h5"})
        self.assertEqual(error.learning_rates, (1e30, 1e30))
        self.assertEqual(run[0].divergence, {"step": 5, "players": error.players})
        self.assertNotEmpty(error.players)
        message = str(error)
        self.assertNotIn("\n", message)
        self.assertRegex(
            message,
            r"^training diverged at step 5: (D's|G's|D's and G's) (loss|losses) or gradients became non-finite "
            r"\(NaN or infinite\) with d_lr=1e\+30, g_lr=1e\+30; the last good checkpoint \(epoch 1, step 3\) is kept in "
            + re.escape(f"{directory}/backup; resume from it with a smaller learning rate: python train.py ")
            + re.escape(shlex.quote(f"--workdir={directory}"))
            + r" --config.d_lr=1e\+29 --config.g_lr=1e\+29$",
        )
        # No epoch-end callback ran for the diverged epoch: no checkpoint, no sample grid.
        self.assertEqual(
            sorted(os.listdir(os.path.join(directory, "backup"))), ["checkpoint.json", "epoch_0001.weights.h5"]
        )
        self.assertEqual(md5(weights), good)
        self.assertTrue(tu.weights_are_finite(weights))
        self.assertEqual(os.listdir(os.path.join(directory, "samples")), ["epoch_0001.png"])

    def test_it_names_the_configs_rates_where_given(self):
        gan = tiny_gan()
        gan.d_optimizer.learning_rate = gan.g_optimizer.learning_rate = 1e30  # the rates in effect (scaled)
        monitor = divergence.DivergenceMonitor(learning_rates=(1e30, 2e29))  # the config's, unscaled
        with self.assertRaises(divergence.TrainingDivergedError) as info:
            gan.fit(real_samples.ring8(16), epochs=2, steps_per_epoch=3, verbose=0, shuffle=False, callbacks=[monitor])
        self.assertEqual(info.exception.learning_rates, (1e30, 2e29))
        self.assertTrue(str(info.exception).endswith("d_lr=1e+29, g_lr=2e+28"), str(info.exception))

    def test_a_finite_run_is_not_stopped(self):
        monitor = divergence.DivergenceMonitor()
        history = tiny_gan().fit(
            real_samples.ring8(16), epochs=2, steps_per_epoch=2, verbose=0, shuffle=False, callbacks=[monitor]
        )
        self.assertEqual(history.epoch, [0, 1])
        self.assertIsNone(monitor.divergence)


class MessageTest(tu.TestCase):
    def test_without_a_checkpoint_it_says_so_and_suggests_a_restart(self):
        error = divergence.TrainingDivergedError({"step": 2, "players": ["generator"]}, (2e-4, 2e-4), workdir="runs/x")
        self.assertEqual(
            str(error),
            "training diverged at step 2: G's loss or gradients became non-finite (NaN or infinite) with d_lr=0.0002, "
            "g_lr=0.0002; no checkpoint was saved before it (it diverged in the first epoch), so there is nothing to "
            "resume: restart with a smaller learning rate: python train.py --workdir=runs/x --config.d_lr=2e-05 "
            "--config.g_lr=2e-05",
        )

    def test_without_a_workdir_it_names_the_rates(self):
        error = divergence.TrainingDivergedError({"step": 9, "players": ["discriminator"]}, (1.0, 0.5))
        self.assertTrue(str(error).endswith("restart with a smaller learning rate: d_lr=0.1, g_lr=0.05"), str(error))


class SuggestionTest(tu.TestCase):
    def test_a_tenth_at_most_the_cap(self):
        self.assertAllClose(divergence.suggested_learning_rates((2e-3, 1e-3)), (2e-4, 1e-4))
        self.assertAllClose(divergence.suggested_learning_rates((1e30, 1e-3), caps=(2e-3, 1e-3)), (2e-3, 1e-4))

    def test_resume_command_replaces_workdir_and_rates_in_both_flag_forms(self):
        args = [
            "--config=configs/ring8.py",
            "--config.d_lr=1",
            "--config.g_lr",
            "2",
            "--workdir",
            "old dir",
            "--config.steps=10",
        ]
        command = divergence.resume_command("runs/my run", (0.1, 2e-05), args, program="../train.py")
        self.assertEqual(
            shlex.split(command),
            [
                "python",
                "../train.py",
                "--config=configs/ring8.py",
                "--config.steps=10",
                "--workdir=runs/my run",
                "--config.d_lr=0.1",
                "--config.g_lr=2e-05",
            ],
        )


if __name__ == "__main__":
    tf.test.main()
