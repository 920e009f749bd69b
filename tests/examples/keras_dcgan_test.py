"""examples/keras_dcgan.py: the ported keras-io DCGAN runs a few steps in a fresh process, its
callback, ModelCheckpoint, reload and export work (the export loaded and served here); and keras.callbacks.TensorBoard writes events."""

import glob
import os
import runpy

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

import tf_fusedprop as fp
from tests import testing_utils as tu

SCRIPT = """
import sys
sys.argv = ["keras_dcgan.py", "--out", {out!r}, "--steps", "2", "--epochs", "2", "--batch_size", "8", "--form", {form!r}]
import runpy
runpy.run_path("examples/keras_dcgan.py", run_name="__main__")
"""


class KerasDCGANTest(tu.TestCase):
    def test_a_few_steps_with_the_callback_checkpoint_reload_and_export(self):
        out = self.get_temp_dir()
        result = tu.run_script(SCRIPT.format(out=out, form="fused"), timeout=600)
        self.assertEqual(result.returncode, 0, result.stdout[-2000:] + result.stderr[-3000:])
        self.assertLen(glob.glob(os.path.join(out, "images", "*.png")), 96)
        self.assertLen(glob.glob(os.path.join(out, "samples", "epoch_*_*.png")), 6)  # 2 epochs x 3 images
        self.assertTrue(os.path.exists(os.path.join(out, "gan.keras")))
        self.assertRegex(result.stdout, r"\|G_reloaded\(z\) - G\(z\)\| <= 0\.0e\+00")
        self.assertIn("serve(z) has shape (4, 32, 32, 3)", result.stdout)
        # The documented use of the export: load into a variable, then serve (in this process:
        # export_test loads SavedModels in fresh ones).
        generator = tf.saved_model.load(os.path.join(out, "generator"))
        self.assertEqual(generator.serve(tf.random.normal([3, 64])).shape, (3, 32, 32, 3))


class DiscriminatorForTest(tu.TestCase):
    @parameterized.parameters("inverse", "adaptive")
    def test_the_forms_that_scale_inside_d_get_tf_fusedprop_layers_and_train(self, form):
        example = runpy.run_path("examples/keras_dcgan.py")
        discriminator = example["discriminator_for"](form)
        self.assertTrue(
            all(
                isinstance(layer, (fp.layers.Conv2D, fp.layers.Dense))
                for layer in discriminator.layers
                if layer.weights
            )
        )
        keras.utils.set_random_seed(0)
        gan = fp.FusedPropGAN(example["generator"](), discriminator, form=form, seed=0)
        gan.compile(d_optimizer=keras.optimizers.Adam(1e-3), g_optimizer=keras.optimizers.Adam(1e-3))
        images = np.random.default_rng(0).uniform(-1, 1, (8, 32, 32, 3)).astype("float32")
        history = gan.fit(images, batch_size=4, epochs=1, verbose=0)
        self.assertTrue(np.isfinite(history.history["d_loss"][-1]))
        with self.assertRaisesRegex(ValueError, r"keras\.layers\.Conv2D.*tf_fusedprop\.layers\.Conv2D"):
            fp.FusedPropGAN(example["generator"](), example["discriminator_for"]("fused"), form=form)


class TensorBoardCallbackTest(tu.TestCase):
    def test_kerass_tensorboard_callback_writes_the_gan_metrics(self):
        log_dir = self.get_temp_dir()
        keras.utils.set_random_seed(0)
        gan = fp.FusedPropGAN(tu.tiny_generator(), tu.tiny_discriminator(), seed=0)
        gan.compile(d_optimizer=keras.optimizers.Adam(1e-3), g_optimizer=keras.optimizers.Adam(1e-3))
        images = np.random.default_rng(0).uniform(-1, 1, (16,) + tu.IMAGE).astype("float32")
        gan.fit(images, batch_size=8, epochs=2, verbose=0, callbacks=[keras.callbacks.TensorBoard(log_dir)])
        events = tu.read_events(os.path.join(log_dir, "train"))
        self.assertEqual([step for step, _, _ in events["epoch_d_loss"]], [0, 1])
        self.assertTrue({"epoch_g_loss", "epoch_real_logit", "epoch_fake_logit"} <= set(events))


if __name__ == "__main__":
    tf.test.main()
