"""train_lib: a few steps of every config, building every variant, reruns and bad workdirs."""

import contextlib
import copy
import io
import json
import os
from unittest import mock

import keras
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds
from absl.testing import parameterized

from tests import testing_utils as tu
from tf_fusedprop import FusedPropGAN, conv_weight_gradients
from tf_fusedprop import forms as fp_forms
from tf_fusedprop.experiment import callbacks, features, real_samples, train_lib, training_plan
from tf_fusedprop.experiment import workdir as fp_workdir
from tf_fusedprop.experiment.config import ConfigError, validate
from tf_fusedprop.experiment.interrupt import TrainingInterrupted


def quiet_train(config, workdir, **kwargs):
    """`train_lib.train` without its output; returns (summary, printed text)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        summary = train_lib.train(config, workdir=str(workdir), verbose=0, **kwargs)
    return summary, out.getvalue()


def read_json(path):
    with open(path) as f:
        return json.load(f)


class PixelFeatures:
    """Stands in for TF-GAN's Inception (not available offline): pixels as features."""

    def __init__(self, path, **kwargs):  # cache_dir=, log= of the real one.
        self.path = path

    def features(self, images, batch_size=64):
        return np.asarray(images).reshape(len(images), -1)[:, :16]

    def logits(self, images, batch_size=64):
        return np.asarray(images).reshape(len(images), -1)[:, :10]


class EpochLogs(keras.callbacks.Callback):
    """Records each epoch's log keys."""

    def __init__(self):
        super().__init__()
        self.epochs = []

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append((epoch, set(logs)))


class TrainTest(tu.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.cache_dir = tu.class_temp_dir(cls)  # One digits classifier and reference statistics.

    @parameterized.parameters(
        ("digits", "", "fused"),
        ("ring8", "", "fused"),
        ("grid25", "", "fused"),
        ("cifar10_cnn_ns", "", "alternating"),
        ("cifar10_cnn_hinge", "inverse", "inverse"),
        ("cifar10_resnet_ns", "fused", "fused"),
        ("digits_conditional", "", "fused"),
        ("cifar10_resnet_projection", "inverse", "inverse"),
    )
    def test_a_few_steps_of_every_config(self, name, variant, form):
        directory = self.get_temp_dir()
        config = tu.tiny_config(name, variant, self.cache_dir)
        self.assertEqual(config.form, form)
        cifar10 = config.dataset == "cifar10"
        with contextlib.ExitStack() as stack:
            if cifar10:
                stack.enter_context(mock.patch.object(features, "InceptionFeatures", PixelFeatures))
                stack.enter_context(tfds.testing.mock_data(num_examples=16))
                config.inception_path = directory
            seen = EpochLogs()
            pair = stack.enter_context(mock.patch.object(fp_forms, "check_form", wraps=fp_forms.check_form))
            summary, printed = quiet_train(config, os.path.join(directory, "run"), extra_callbacks=[seen])
        # The walk from the config to the step checks the (loss, form) pair once (config.check),
        # and builds the GAN from what that check built.
        self.assertEqual(pair.call_count, 1)
        run = os.path.join(directory, "run")
        self.assertEqual((summary["steps"], summary["d_steps"], summary["epochs"]), (2, 2, 2))
        self.assertEqual(sorted(os.listdir(os.path.join(run, "samples"))), ["epoch_0001.png", "epoch_0002.png"])
        self.assertEqual(summary["samples"], os.path.join(run, "samples", "epoch_0002.png"))
        self.assertEqual(read_json(os.path.join(run, "summary.json")), json.loads(json.dumps(summary)))
        self.assertEqual(read_json(os.path.join(run, "config.json")), config.to_dict())
        self.assertTrue(os.path.exists(os.path.join(run, "generator", "saved_model.pb")))
        self.assertNotEmpty(os.listdir(os.path.join(run, "logs")))
        image_data = config.dataset in ("digits", "cifar10")
        score = "classifier_score" if config.dataset == "digits" else "inception_score"  # cifar10: Inception
        metric_names = {"fid", score} if image_data else {"modes_covered", "high_quality"}
        if config.dataset == "digits":
            metric_names |= {"kid"} | (
                {"class_accuracy"} if config.num_classes else set()
            )  # the classifier knows the classes
        self.assertEqual(set(summary["metrics"]), metric_names)
        self.assertEqual(
            [(h["epoch"], h["step"], h["finite"]) for h in summary["history"]], [(1, 1, True), (2, 2, True)]
        )
        # A caller's callbacks run after the evaluation: its metrics are in their logs.
        self.assertEqual([(epoch, metric_names <= keys) for epoch, keys in seen.epochs], [(0, True), (1, True)])
        self.assertEqual(summary["history"][-1]["metrics"], summary["metrics"])
        self.assertEqual(summary["history"][-1]["train_seconds"], summary["train_seconds"])
        self.assertEqual(summary["final_metric"]["value"], summary["metrics"][summary["final_metric"]["name"]])
        self.assertIn("FID (" if image_data else "modes covered: ", printed)
        if cifar10:
            self.assertNotEmpty([f for f in os.listdir(self.cache_dir) if f.startswith("cifar10_train16_inception")])

    def test_conditional_grid_has_a_class_per_row(self):
        config = tu.tiny_config("digits_conditional", cache_dir=self.cache_dir)
        config.grid_samples, config.eval_samples = 30, 0  # 10 classes x 3 columns
        summary, printed = quiet_train(config, self.get_temp_dir())
        grid = tf.io.decode_png(tf.io.read_file(summary["samples"])).numpy()
        # 16 px images, 1 px padding, then enlarged twice (image_grid's min_cell 32)
        self.assertEqual(grid.shape[:2], ((10 * 17 + 1) * 2, (3 * 17 + 1) * 2))

    def test_features_precision_and_ema_export(self):
        config = tu.tiny_config("digits", cache_dir=self.cache_dir)
        config.update(augment="translation,color", mixed_precision="float32")
        config.ema.decay, config.r1.gamma, config.r1.every = 0.9, 0.1, 2
        config.lookahead.every = 2
        directory = self.get_temp_dir()
        summary, printed = quiet_train(config, directory)
        self.assertEqual(summary["precision"], {"policy": "float32", "reason": "set explicitly"})
        self.assertIn("precision: float32 (set explicitly)", printed)
        self.assertEqual(read_json(os.path.join(directory, "generator", "fusedprop_export.json"))["weights"], "ema")
        config.mixed_precision = "auto"
        gan = train_lib.build_gan(config)
        self.assertEqual(gan.ema.decay, 0.9)
        (r1,) = gan.regularizers
        self.assertEqual((gan.augment.policy, r1.gamma, r1.every), ("color,translation", 0.1, 2))
        self.assertEqual((gan.lookahead.every, gan.lookahead.alpha), (2, 0.5))

    def test_mixed_float16_wraps_both_optimizers_in_loss_scaling(self):
        config = tu.tiny_config("ring8")
        config.mixed_precision = "mixed_float16"
        summary, _ = quiet_train(config, self.get_temp_dir())
        self.assertEqual(summary["steps"], 2)
        gan = train_lib.build_gan(config)
        self.assertIsInstance(gan.d_optimizer, keras.optimizers.LossScaleOptimizer)
        self.assertIsInstance(gan.g_optimizer, keras.optimizers.LossScaleOptimizer)

    def test_an_adaptive_augmentation_with_held_out_digits_compares_with_those_training_never_reads(self):
        config = tu.tiny_config("mnist1k64", cache_dir=self.cache_dir)
        config.update(image_size=16, eval_samples=0, augment="translation")
        config.adaptive_augment.update(target=0.6, interval=1, held_out=8)

        class HeldOut(keras.callbacks.Callback):
            def on_train_end(self, logs=None):
                self.images = self.model.augment.adaptive.variables[3].numpy()

        seen = HeldOut()
        summary, _ = quiet_train(config, self.get_temp_dir(), extra_callbacks=[seen])
        self.assertEqual(summary["steps"], 2)
        expected = real_samples.mnist1k_held_out(8, 16)
        self.assertAllEqual(seen.images, expected)
        training = real_samples.mnist1k_array(16).reshape(1000, -1)
        self.assertFalse(any((training == image.reshape(1, -1)).all(axis=1).any() for image in expected))

    def test_mixed_bfloat16_keeps_its_weight_gradient_choices_in_the_workdir(self):
        config = tu.tiny_config("digits", cache_dir=self.cache_dir)
        config.mixed_precision = "mixed_bfloat16"
        directory = self.get_temp_dir()
        summary, _ = quiet_train(config, directory)
        self.assertEqual(summary["steps"], 2)
        table = read_json(os.path.join(directory, "weight_gradients.json"))
        # D's two convolutions and G's two transposed ones (their input gradients as the
        # convolution's input), per batch size that fit traced.
        self.assertEqual(
            {key.split("x", 1)[1] for key in table},
            {"16x16x1 4x4x1x4 2x2 SAME bfloat16", "8x8x4 4x4x4x8 2x2 SAME bfloat16"},
        )
        self.assertIn("16x16x16x1 4x4x1x4 2x2 SAME bfloat16", table)  # D on 8 real + 8 fake images
        chosen = {conv_weight_gradients._key_text(k): v for k, v in conv_weight_gradients.chosen().items()}
        self.assertEqual(table, {key: chosen[key] for key in table})

    def test_a_run_is_the_same_whatever_ran_before_it_in_the_process(self):
        """TF's global seed left by earlier work (another run, a classifier trained for the
        metrics) does not reach the run's data order: benchmarks/quality.py trains its grid in
        one process, and a run resumed in a fresh process must read the order it started with."""
        finals = {}
        for i, seed in enumerate((1, 2, 1)):  # the run of seed 2 leaves TF's global seed at 2
            config = tu.tiny_config("digits", cache_dir=self.cache_dir)
            config.steps, config.steps_per_epoch, config.seed = 4, 4, seed
            directory = os.path.join(self.get_temp_dir(), f"run{i}")
            quiet_train(config, directory)
            gan = train_lib.build_gan(config)
            callbacks.BackupAndRestore(os.path.join(directory, "backup")).restore(gan)
            finals.setdefault(seed, []).append(
                [np.asarray(v) for v in gan.generator.weights + gan.discriminator.weights]
            )
        for first, second in zip(*finals[1]):
            self.assertAllEqual(first, second)

    def test_a_damaged_weight_gradient_table_is_one_line(self):
        directory = self.get_temp_dir()
        with open(os.path.join(directory, "weight_gradients.json"), "w") as f:
            f.write("{not json")
        with self.assertRaisesRegex(ConfigError, r"weight_gradients.json is not a table .* Delete it to time"):
            quiet_train(tu.tiny_config("ring8"), directory)

    def test_a_workdir_of_another_config_is_refused_and_a_finished_run_is_not_retrained(self):
        directory = self.get_temp_dir()
        config = tu.tiny_config("ring8")
        summary, _ = quiet_train(config, directory)
        again, printed = quiet_train(config, directory)
        self.assertEqual(again, json.loads(json.dumps(summary)))
        self.assertIn("already complete", printed)
        config.seed = 3
        with self.assertRaisesRegex(ConfigError, r"different config \(config.seed: 0 there, 3 now\)"):
            quiet_train(config, directory)

    def test_a_rerun_trains_with_its_own_learning_rates_not_those_in_the_checkpoint(self):
        directory = self.get_temp_dir()
        config = tu.tiny_config("ring8")
        config.steps = 3
        absurd = copy.deepcopy(config)
        absurd.d_lr = absurd.g_lr = 1e30
        # A checkpoint of epoch 1 saved while the rates were absurd (its weights are the initial ones).
        fp_workdir.make_workdir(directory, absurd)
        backup = callbacks.BackupAndRestore(os.path.join(directory, "backup"))
        backup.set_model(train_lib.build_gan(absurd))
        backup.on_epoch_end(0)
        # With the checkpoint's rates, the second step of this rerun would not be finite.
        summary, printed = quiet_train(config, directory)
        self.assertEqual((summary["resumed_from_epoch"], summary["steps"]), (1, 2))
        change = {"epoch": 1, "step": 0, "d_lr": {"from": 1e30, "to": 2e-3}, "g_lr": {"from": 1e30, "to": 1e-3}}
        self.assertEqual(summary["learning_rate_changes"], [change])
        self.assertEqual((summary["config"]["d_lr"], summary["config"]["g_lr"]), (2e-3, 1e-3))
        self.assertIn("Learning rates changed from epoch 1 (step 0): d_lr 1e+30 -> 0.002, g_lr 1e+30 -> 0.001", printed)

    def test_a_finished_run_trained_on_to_a_longer_schedule_ends_as_a_run_of_that_length(self):
        extended, straight = (os.path.join(self.get_temp_dir(), name) for name in ("extended", "straight"))
        config = tu.tiny_config("ring8")
        config.steps, config.steps_per_epoch, config.eval_samples = 2, 1, 0
        quiet_train(config, extended)
        config.steps = 4
        summary, printed = quiet_train(config, extended)
        self.assertIn("Resuming from epoch 2/4 (2 steps done).", printed)
        self.assertIn("Schedule changed from 2 to 4 steps", printed)
        self.assertEqual((summary["steps"], summary["resumed_from_epoch"], summary["config"]["steps"]), (4, 2, 4))
        self.assertEqual(read_json(os.path.join(extended, "summary_2.json"))["steps"], 2)
        quiet_train(config, straight)
        final = [tu.h5_arrays(os.path.join(d, "backup", "epoch_0004.weights.h5")) for d in (extended, straight)]
        self.assertEqual(sorted(final[0]), sorted(final[1]))
        for name in final[0]:
            self.assertAllEqual(final[0][name], final[1][name], msg=name)

    def test_a_warm_start_switches_once_and_a_run_recorded_before_warmup_existed_resumes(self):
        directory = self.get_temp_dir()
        config = tu.tiny_config("ring8")
        config.steps, config.steps_per_epoch, config.warmup = 4, 2, 2
        summary, printed = quiet_train(config, directory)
        self.assertEqual(printed.count("G update 2: alternating -> fused\n"), 1)
        self.assertIn("Warmup(SinglePass('fused'", printed)
        self.assertEqual((summary["steps"], read_json(os.path.join(directory, "config.json"))["warmup"]), (4, 2))
        # A config.json written before config.warmup existed is the run of warmup 0.
        plain = os.path.join(directory, "plain")
        config.steps, config.warmup = 2, 0
        quiet_train(config, plain)
        recorded = read_json(os.path.join(plain, "config.json"))
        del recorded["warmup"]
        with open(os.path.join(plain, "config.json"), "w") as f:
            json.dump(recorded, f)
        _, printed = quiet_train(config, plain)
        self.assertIn("already complete", printed)

    def test_gs_rate_after_the_warm_start_follows_the_update_count_also_across_a_resume(self):
        config = tu.tiny_config("ring8")
        config.update(steps=2, steps_per_epoch=1, eval_samples=0, warmup=2, warmup_g_lr_scale=3.0)
        rate = training_plan.plan(config).g_learning_rate()
        self.assertAllClose([rate(0), rate(1), rate(2), rate(9)], [config.g_lr] * 2 + [3 * config.g_lr] * 2)
        config.warmup_g_lr_scale = 1.0
        self.assertEqual(training_plan.plan(config).g_learning_rate(), config.g_lr)
        config.warmup_g_lr_scale = 3.0
        resumed, straight, unscaled = (
            os.path.join(self.get_temp_dir(), n) for n in ("resumed", "straight", "unscaled")
        )
        quiet_train(config, resumed)  # stops at the switch, then trains on past it
        config.steps = 4
        quiet_train(config, resumed)
        quiet_train(config, straight)
        config.warmup_g_lr_scale = 1.0
        quiet_train(config, unscaled)
        final = {
            d: tu.h5_arrays(os.path.join(d, "backup", "epoch_0004.weights.h5")) for d in (resumed, straight, unscaled)
        }
        for name in final[straight]:
            self.assertAllEqual(final[resumed][name], final[straight][name], msg=name)
        self.assertTrue(any(not np.array_equal(final[straight][n], final[unscaled][n]) for n in final[straight]))

    def test_unwritable_workdir(self):
        blocker = os.path.join(self.get_temp_dir(), "file")
        open(blocker, "w").close()
        with self.assertRaisesRegex(ConfigError, r"cannot write to workdir .*file/run.*--workdir"):
            quiet_train(tu.tiny_config("ring8"), os.path.join(blocker, "run"))


class BuildGanTest(tu.TestCase):
    @parameterized.parameters(("cifar10_cnn_ns", "fused"), ("cifar10_cnn_hinge", ""), ("cifar10_resnet_ns", ""))
    def test_the_other_variants_validate_and_build(self, name, variant):
        config = tu.tiny_config(name, variant)
        validate(config)
        gan = train_lib.build_gan(config)
        self.assertEqual(gan.form.name, config.form)
        self.assertEqual(gan.generator.output.shape[1:], (32, 32, 3))

    def test_a_builder_refusing_its_arguments_is_a_config_error(self):
        config = tu.tiny_config("ring8")
        config.generator.units = -1
        with self.assertRaisesRegex(ConfigError, r"^cannot build network 'mlp': "):
            train_lib.build_gan(config)


class InterruptTest(tu.TestCase):
    def test_ctrl_c_while_the_results_are_written_keeps_the_checkpoint_and_the_rerun_writes_them(self):
        config = tu.tiny_config("ring8")
        config.eval_samples = 0
        workdir = self.get_temp_dir()
        with mock.patch.object(FusedPropGAN, "export_generator", side_effect=KeyboardInterrupt):
            with self.assertRaises(TrainingInterrupted) as caught:
                quiet_train(config, workdir)
        self.assertEqual((caught.exception.trained, caught.exception.step), (True, 2))
        self.assertRegex(
            caught.exception.describe(),
            r"^interrupted after the last step \(2\), while the generator and the summary were written; the last "
            r"checkpoint \(epoch 2, step 2\) is kept in .*backup; rerun the same command to write them$",
        )
        self.assertFalse(os.path.exists(os.path.join(workdir, "summary.json")))
        summary, printed = quiet_train(config, workdir)
        self.assertIn("Resuming from epoch 2/2 (2 steps done).", printed)
        self.assertEqual((summary["steps"], summary["resumed_from_epoch"]), (2, 2))
        self.assertTrue(os.path.exists(os.path.join(workdir, "generator", "saved_model.pb")))


if __name__ == "__main__":
    tf.test.main()
