"""callbacks: each callback on a tiny fit, checkpoints and resume."""

import json
import os

import keras
import numpy as np
import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop import FusedPropGAN, networks
from tf_fusedprop.experiment import callbacks, files, pictures, real_samples


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
            {
                "epoch": 1,
                "step": 0,
                "train_seconds": None,
                "metrics": {"fid": 1.5, "modes": 3},
                "finite": True,
                "d_loss": 0.5,
                "g_loss": 1.0,
            },
        )
        self.assertEqual([h["d_loss"] for h in evaluation.history], [0.5, None, 0.7, 0.7])  # JSON has no NaN
        self.assertEqual(json.loads(json.dumps(evaluation.history)), evaluation.history)  # plain numbers

    def test_history_keeps_the_epochs_training_signals_beside_the_metrics(self):
        evaluation = callbacks.Evaluation(lambda generator: {"fid": 2.0})
        evaluation.set_model(tiny_gan())
        evaluation.set_params({"epochs": 1})
        logs = {
            "d_loss": 0.5,
            "g_loss": 1.0,
            "real_logit": np.float32(2.0),
            "fake_spread": np.float32(0.0625),
            "fake_coverage": np.float32(0.875),
            "augment_p": np.float32(0.25),
            "stray": 0.125,
            "stray_cosine": 0.5,
            "steps_per_second": 9.0,
        }
        evaluation.on_epoch_end(0, logs)
        entry = evaluation.history[0]
        signals = (
            "d_loss",
            "g_loss",
            "real_logit",
            "fake_spread",
            "fake_coverage",
            "augment_p",
            "stray",
            "stray_cosine",
        )
        self.assertEqual([entry[key] for key in signals], [0.5, 1.0, 2.0, 0.0625, 0.875, 0.25, 0.125, 0.5])
        self.assertEqual([type(entry[key]) for key in signals], [float] * len(signals))  # plain JSON numbers
        self.assertNotIn("fake_logit", entry)  # not logged: not invented
        self.assertNotIn("steps_per_second", entry)  # throughput, not a training signal

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

    def test_every_few_minutes_a_checkpoint_within_the_epoch_with_its_metrics(self):
        directory = self.get_temp_dir()
        now = [0.0]
        backup = callbacks.BackupAndRestore(directory, steps_per_epoch=4, every_minutes=1, clock=lambda: now[0])

        class Clock(keras.callbacks.Callback):  # each step takes 25 s
            def on_train_batch_end(self, batch, logs=None):
                now[0] += 25.0

        gan = tiny_gan()
        seen = []
        record = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: seen.append(backup.metadata()))
        gan.fit(
            real_samples.ring8(16),
            epochs=2,
            steps_per_epoch=4,
            verbose=0,
            shuffle=False,
            callbacks=[Clock(), backup, record],
        )
        steps = [None if m is None else (m["epoch"], m["steps"], m.get("epoch_steps")) for m in seen]
        # 75 s after the start (step 3), then the epoch's end (4), then 75 s after that (7), then the end.
        self.assertEqual(steps, [None, None, (0, 3, 3), (0, 3, 3), (1, 4, None), (1, 4, None), (1, 7, 3), (1, 7, 3)])
        self.assertEqual(backup.metadata(), {"epoch": 2, "steps": 8, "weights": "epoch_0002.weights.h5"})
        self.assertEqual(sorted(os.listdir(directory)), ["checkpoint.json", "epoch_0002.weights.h5"])

    def test_a_checkpoint_within_an_epoch_resumes_its_logged_means(self):
        directory = self.get_temp_dir()
        keras.utils.set_random_seed(0)
        straight = tiny_gan()
        logged = straight.fit(real_samples.ring8(16), epochs=1, steps_per_epoch=4, verbose=0, shuffle=False).history
        backup = callbacks.BackupAndRestore(directory, steps_per_epoch=4)
        keras.utils.set_random_seed(0)
        gan = tiny_gan()
        gan.fit(real_samples.ring8(16), epochs=1, steps_per_epoch=3, verbose=0, shuffle=False)
        metadata = backup.save(gan)
        self.assertEqual((metadata["epoch"], metadata["steps"], metadata["epoch_steps"]), (0, 3, 3))
        self.assertEqual(metadata["weights"], "step_00000003.weights.h5")
        resumed = tiny_gan(seed=1)
        self.assertEqual(backup.restore(resumed), 0)
        batches = real_samples.ring8(16).skip(3)
        logs = resumed.fit(batches, epochs=1, steps_per_epoch=1, verbose=0, shuffle=False, callbacks=[backup]).history
        self.assertEqual(logs["d_loss"], logged["d_loss"])  # the mean of the epoch's 4 steps, not of its last
        for a, b in zip(straight.variables, resumed.variables):
            self.assertAllEqual(a.numpy(), b.numpy())

    def test_a_full_disk_keeps_the_last_good_checkpoint_and_leaves_no_temporary_file(self):
        directory = tu.small_disk(self, megabytes=1)
        backup = callbacks.BackupAndRestore(os.path.join(directory, "backup"), steps_per_epoch=2)
        gan = tiny_gan()
        gan.fit(real_samples.ring8(16), epochs=1, steps_per_epoch=2, verbose=0, shuffle=False, callbacks=[backup])
        kept = backup.metadata()
        tu.fill_disk(directory)
        gan.fit(real_samples.ring8(16), epochs=1, steps_per_epoch=1, verbose=0, shuffle=False)
        with self.assertRaises(files.WriteError) as caught:
            backup.save(gan)
        self.assertRegex(
            str(caught.exception),
            r"^cannot write the checkpoint to .*/backup/step_00000003.weights.h5: No space left on device "
            r"\(it needs [\d.]+ kB, 0 bytes free there\)$",
        )
        self.assertEqual(backup.metadata(), kept)
        self.assertEqual(
            sorted(os.listdir(os.path.join(directory, "backup"))), ["checkpoint.json", "epoch_0001.weights.h5"]
        )
        self.assertEqual(backup.restore(tiny_gan()), 1)

    def test_a_full_disk_under_the_sample_grid_or_the_summaries_is_one_line(self):
        directory = tu.small_disk(self, megabytes=1)
        writer = tf.summary.create_file_writer(os.path.join(directory, "logs"))
        grid = callbacks.SampleGrid(np.zeros((4, 4), np.float32), os.path.join(directory, "samples"))
        scalars = callbacks.Scalars(writer, os.path.join(directory, "logs"))
        gan = tiny_gan()
        for callback in (grid, scalars):
            callback.set_model(gan)
        grid.render = lambda samples: np.zeros((64, 64, 3), np.uint8)
        tu.fill_disk(directory)
        with self.assertRaisesRegex(files.WriteError, r"^cannot write the sample grid to .*/samples/epoch_0001.png"):
            grid.on_epoch_end(0)
        with self.assertRaisesRegex(files.WriteError, r"^cannot write the TensorBoard summaries to .*/logs: No space"):
            scalars.on_epoch_end(0, {"d_loss": 1.0})
        self.assertEqual(os.listdir(os.path.join(directory, "samples")), [])

    def test_progress_times_the_updates_says_when_the_run_ends_and_shows_samples_every_few_minutes(self):
        directory = self.get_temp_dir()
        now, said = [0.0], []
        grid = callbacks.SampleGrid(
            np.zeros((10, 4), np.float32),
            os.path.join(directory, "samples"),
            render=lambda s: pictures.scatter_plot(s, extent=3.0),
        )
        progress = callbacks.Progress(1000, grid, every_minutes=1, lines=True, log=said.append, clock=lambda: now[0])

        class Clock(keras.callbacks.Callback):  # the first call (tracing) takes 30 s, then 10 s per update
            def on_train_batch_end(self, batch, logs=None):
                now[0] += 30.0 if batch == 0 else 10.0

        gan = tiny_gan()
        before = [v.numpy() for v in gan.variables]
        gan.fit(
            real_samples.ring8(16),
            epochs=1,
            steps_per_epoch=12,
            verbose=0,
            shuffle=False,
            callbacks=[Clock(), grid, progress],
        )
        self.assertRegex(
            said[0],
            r"^Timed: 10 s per update; 997 updates left, about 2 h 46 min of training \(evaluations and "
            r"checkpoints on top\), until ~\w{3} \d\d:\d\d.$",
        )
        # 60 s after the start (step 4: 30 + 3 x 10 s) and 60 s after that (step 10).
        self.assertEqual([line.split(":")[0] for line in said[1:]], ["step 4/1,000", "step 10/1,000"])
        self.assertRegex(
            said[2],
            r"^step 10/1,000: 10 s/update, d_loss [\d.]+, g_loss [\d.]+, fake_spread [\d.]+, fake_coverage [\d.]+; about 2 h 45 min left; "
            r"samples: .*latest.png$",
        )
        self.assertEqual(sorted(os.listdir(os.path.join(directory, "samples"))), ["epoch_0001.png", "latest.png"])
        quiet = callbacks.Progress(1000, None, every_minutes=1, lines=False, log=said.append, clock=lambda: now[0])
        said.clear()
        restored = tiny_gan()
        for variable, value in zip(restored.variables, before):
            variable.assign(value)
        restored.fit(
            real_samples.ring8(16), epochs=1, steps_per_epoch=12, verbose=0, shuffle=False, callbacks=[Clock(), quiet]
        )
        self.assertLen(said, 1)  # on a terminal: the estimate, no progress lines (Keras's bar is there)
        for a, b in zip(gan.variables, restored.variables):  # the early grids changed nothing
            self.assertAllEqual(a.numpy(), b.numpy())

    def test_progress_lines_quote_the_rate_since_the_last_line_without_evaluations(self):
        now, said = [0.0], []
        progress = callbacks.Progress(1000, None, every_minutes=1, lines=True, log=said.append, clock=lambda: now[0])
        gan = tiny_gan()
        progress.set_model(gan)

        def call(seconds, updates=10):  # one train-function call, as fit makes it
            progress.on_train_batch_begin(0)
            now[0] += seconds
            gan.g_optimizer.iterations.assign_add(updates)
            progress.on_train_batch_end(0)

        progress.on_train_begin()
        for seconds in (30.0, 10.0, 10.0):  # the first call traces; then 1 s an update
            call(seconds)
        self.assertRegex(said[-1], r"^Timed: 1 s per update; 970 updates left, about 16 min of training")
        now[0] += 300.0  # an evaluation and a checkpoint between two calls
        call(10.0)
        self.assertEqual(said[-1], "step 40/1,000: 1 s/update; about 16 min left")
        for _ in range(12):  # a warm start's switch: 0.5 s an update from here on
            call(5.0)
        self.assertEqual(said[-1], "step 160/1,000: 0.5 s/update; about 7 min left")
        self.assertLen(said, 3)

    def test_restore_without_checkpoint_is_epoch_zero(self):
        backup = callbacks.BackupAndRestore(os.path.join(self.get_temp_dir(), "none"))
        self.assertIsNone(backup.metadata())
        self.assertEqual(backup.restore(tiny_gan()), 0)


if __name__ == "__main__":
    tf.test.main()
