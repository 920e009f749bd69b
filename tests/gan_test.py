"""FusedPropGAN: every form trains with fit; exact SGD steps; accumulation; save/load/export."""

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

import tf_fusedprop as fp
from tests import testing_utils as tu

FORMS = ("fused", "inverse", "adaptive", "simultaneous", "alternating")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def images(n, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, (n,) + tu.IMAGE).astype("float32")


def make_gan(form="fused", loss="nonsaturating", iter_size=1, n_dis=1, batch_norm=False, spectral_norm=False,
             d_optimizer=None, g_optimizer=None, seed=0):
    keras.utils.set_random_seed(seed)
    generator = tu.tiny_generator(batch_norm=batch_norm)
    discriminator = tu.tiny_discriminator(spectral_norm=spectral_norm)
    gan = fp.FusedPropGAN(generator, discriminator, loss=loss, form=form, n_dis=n_dis, iter_size=iter_size, seed=7)
    gan.compile(d_optimizer=d_optimizer or keras.optimizers.Adam(1e-3), g_optimizer=g_optimizer or keras.optimizers.Adam(1e-3))
    return gan


def weights(gan):
    return [w.numpy() for w in gan.discriminator.trainable_weights + gan.generator.trainable_weights]


class LatentsFromList(fp.FusedPropGAN):
    """Test double for the latent sampler only: returns given latents in order (eager use)."""

    def use_latents(self, latents):
        self._latents = list(latents)

    def sample_latents(self, n):
        return self._latents.pop(0)


class FitTest(tu.TestCase):
    @parameterized.product(form=FORMS, iter_size=(1, 2))
    def test_every_form_trains_with_fit(self, form, iter_size):
        loss = "hinge" if form == "inverse" else "nonsaturating"
        gan = make_gan(form, loss=loss, iter_size=iter_size, batch_norm=True, spectral_norm=True)
        before = weights(gan)
        history = gan.fit(images(32), batch_size=8, epochs=1, verbose=0)
        self.assertEqual(set(history.history), {"d_loss", "g_loss", "real_logit", "fake_logit"})
        self.assertTrue(all(np.isfinite(v[-1]) for v in history.history.values()))
        changed = [not np.allclose(a, b) for a, b in zip(before, weights(gan))]
        n_d = len(gan.discriminator.trainable_weights)
        d_kernels = [c for c, w in zip(changed[:n_d], before) if w.ndim > 1]
        self.assertTrue(all(d_kernels), "every D kernel changes")
        self.assertTrue(any(changed[n_d:]), "G changes")
        self.assertEqual(int(gan.d_optimizer.iterations), 4)
        self.assertEqual(int(gan.g_optimizer.iterations), 4)

    def test_labels_are_ignored_and_n_dis_counts_d_updates(self):
        gan = make_gan("alternating", n_dis=3)
        gan.fit(images(16), np.zeros(16), batch_size=8, epochs=1, verbose=0)
        self.assertEqual(int(gan.d_optimizer.iterations), 6)
        self.assertEqual(int(gan.g_optimizer.iterations), 2)

    def test_public_attributes(self):
        gan = make_gan("adaptive", loss="least_squares", iter_size=2)
        self.assertEqual((gan.form, gan.gan_loss.name, gan.iter_size, gan.latent_dim), ("adaptive", "least_squares", 2, tu.LATENT))
        self.assertIsInstance(gan.d_optimizer, keras.optimizers.Adam)


class ExactStepTest(tu.TestCase):
    @parameterized.parameters("fused", "inverse", "adaptive", "simultaneous")
    def test_sgd_step_is_minus_lr_times_compute_gradients(self, form):
        lr = 0.1
        gan = make_gan(form, loss="least_squares", spectral_norm=True, batch_norm=True,
                       d_optimizer=keras.optimizers.SGD(lr), g_optimizer=keras.optimizers.SGD(lr))
        real = tf.constant(images(8))
        state = tu.StateSnapshot(gan)
        z = gan.sample_latents(8)
        d_grads, g_grads = fp.compute_gradients(gan.generator, gan.discriminator, real, z, "least_squares", form)
        expected = [w - lr * g.numpy() for w, g in zip(weights(gan), list(d_grads) + list(g_grads))]
        state.restore()
        gan.train_step(real)
        for actual, want in zip(weights(gan), expected):
            self.assertAllClose(actual, want, rtol=1e-6, atol=1e-7)


class AccumulationTest(tu.TestCase):
    @parameterized.parameters("fused", "inverse", "alternating")
    def test_iter_size_4_equals_one_big_batch_with_adam(self, form):
        data = images(96)
        results = []
        for iter_size in (1, 4):
            # No spectral norm: its u advances once per D forward, i.e. per micro-batch.
            gan = make_gan(form, iter_size=iter_size)
            gan.fit(data, batch_size=32, epochs=1, shuffle=False, verbose=0)
            self.assertEqual(int(gan.d_optimizer.iterations), 3)
            results.append(weights(gan))
        for a, b in zip(*results):
            self.assertAllClose(a, b, rtol=1e-5, atol=1e-6)

    def test_equals_keras_gradient_accumulation_steps(self):
        rng = np.random.default_rng(5)
        micro = [(tf.constant(images(8, seed=i)), tf.constant(rng.normal(size=(8, tu.LATENT)), tf.float32)) for i in range(12)]

        keras.utils.set_random_seed(0)
        generator, discriminator = tu.tiny_generator(batch_norm=False), tu.tiny_discriminator()
        d_opt, g_opt = keras.optimizers.Adam(1e-2, gradient_accumulation_steps=4), keras.optimizers.Adam(1e-2, gradient_accumulation_steps=4)
        for real, z in micro:
            d_grads, g_grads = fp.compute_gradients(generator, discriminator, real, z, "nonsaturating", "fused")
            d_opt.apply_gradients(zip(d_grads, discriminator.trainable_variables))
            g_opt.apply_gradients(zip(g_grads, generator.trainable_variables))

        keras.utils.set_random_seed(0)
        gan = LatentsFromList(tu.tiny_generator(batch_norm=False), tu.tiny_discriminator(), iter_size=4)
        gan.compile(d_optimizer=keras.optimizers.Adam(1e-2), g_optimizer=keras.optimizers.Adam(1e-2))
        gan.use_latents([tf.concat([z for _, z in micro[i : i + 4]], 0) for i in (0, 4, 8)])
        for i in (0, 4, 8):
            gan.train_step(tf.concat([real for real, _ in micro[i : i + 4]], 0))

        self.assertEqual(int(gan.d_optimizer.iterations), 3)
        theirs = [w.numpy() for w in discriminator.trainable_weights + generator.trainable_weights]
        for a, b in zip(weights(gan), theirs):
            self.assertAllClose(a, b, rtol=1e-5, atol=1e-6)

    def test_accumulator_normalises_by_iter_size(self):
        variable = tf.Variable([1.0, 2.0])
        accumulator = fp.GradientAccumulator([variable], iter_size=4)
        for g in ([1.0, 0.0], [3.0, 4.0], [0.0, 0.0], [4.0, 4.0]):
            accumulator.accumulate([tf.constant(g)])
        self.assertAllClose(accumulator.gradients()[0], [2.0, 2.0])
        accumulator.reset()
        self.assertAllClose(accumulator.gradients()[0], [0.0, 0.0])
        self.assertFalse(accumulator.shadows[0].trainable)


class ErrorTest(tu.TestCase):
    def test_batch_not_divisible_by_iter_size(self):
        gan = make_gan(iter_size=3)
        with self.assertRaisesRegex(ValueError, "divisible by iter_size=3. Received: batch size 8"):
            gan.fit(images(16), batch_size=8, epochs=1, verbose=0)

    def test_bad_arguments(self):
        generator, discriminator = tu.tiny_generator(), tu.tiny_discriminator()
        with self.assertRaisesRegex(ValueError, "Received: iter_size=0"):
            fp.FusedPropGAN(generator, discriminator, iter_size=0)
        with self.assertRaisesRegex(ValueError, "n_dis applies to form='alternating' only"):
            fp.FusedPropGAN(generator, discriminator, form="fused", n_dis=5)
        with self.assertRaisesRegex(ValueError, "hinge loss does not support form='fused'"):
            fp.FusedPropGAN(generator, discriminator, loss="hinge")

    def test_fit_without_compile(self):
        gan = fp.FusedPropGAN(tu.tiny_generator(), tu.tiny_discriminator())
        with self.assertRaisesRegex(ValueError, "compile"):
            gan.fit(images(8), batch_size=8, verbose=0)


class SavingTest(tu.TestCase):
    def test_save_load_continue_equals_straight_through(self):
        data = images(32)
        straight = make_gan("inverse", spectral_norm=True, batch_norm=True)
        straight.fit(data, batch_size=8, epochs=2, shuffle=False, verbose=0)

        first = make_gan("inverse", spectral_norm=True, batch_norm=True)
        first.fit(data, batch_size=8, epochs=1, shuffle=False, verbose=0)
        path = os.path.join(self.get_temp_dir(), "gan.keras")
        first.save(path)
        resumed = keras.models.load_model(path)
        self.assertIsInstance(resumed, fp.FusedPropGAN)
        self.assertEqual(int(resumed.d_optimizer.iterations), 4)
        resumed.fit(data, batch_size=8, epochs=1, shuffle=False, verbose=0)
        for a, b in zip(weights(resumed), weights(straight)):
            self.assertAllClose(a, b, rtol=1e-5, atol=1e-6)
        self.assertAllClose(resumed.discriminator.non_trainable_weights[0], straight.discriminator.non_trainable_weights[0])

    def test_exported_generator_reloads_in_a_fresh_process(self):
        gan = make_gan(batch_norm=True)
        gan.fit(images(16), batch_size=8, epochs=1, verbose=0)
        directory = os.path.join(self.get_temp_dir(), "generator")
        gan.export_generator(directory)
        z = np.random.default_rng(0).normal(size=(5, tu.LATENT)).astype("float32")
        np.save(os.path.join(self.get_temp_dir(), "z.npy"), z)
        script = textwrap.dedent(f"""
            import json, numpy as np, tensorflow as tf
            model = tf.saved_model.load({directory!r})
            out = model.serve(tf.constant(np.load({os.path.join(self.get_temp_dir(), 'z.npy')!r})))
            print(json.dumps(out.numpy().tolist()))
        """)
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        served = np.array(json.loads(result.stdout.strip().splitlines()[-1]))
        self.assertAllClose(served, gan.generator(z, training=False), rtol=1e-5, atol=1e-6)


MIRRORED_SCRIPT = """
import numpy as np, tensorflow as tf, keras
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import tf_fusedprop as fp
from tests import testing_utils as tu
data = np.random.default_rng(0).uniform(-1, 1, (64,) + tu.IMAGE).astype("float32")
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
results = {}
for iter_size in (1, 2):
    with strategy.scope():
        keras.utils.set_random_seed(0)
        gan = fp.FusedPropGAN(tu.tiny_generator(batch_norm=False), tu.tiny_discriminator(),
                              form="inverse", iter_size=iter_size, seed=3)
        gan.compile(d_optimizer=keras.optimizers.Adam(1e-3), g_optimizer=keras.optimizers.Adam(1e-3))
    history = gan.fit(data, batch_size=16, epochs=1, shuffle=False, verbose=0)
    results[iter_size] = [w.numpy() for w in gan.trainable_weights]
    assert gan.d_optimizer.iterations.numpy() == 4, gan.d_optimizer.iterations.numpy()
    assert all(np.isfinite(v[-1]) for v in history.history.values())
z = strategy.run(tf.function(lambda: gan.sample_latents(4)))
z0, z1 = [t.numpy() for t in strategy.experimental_local_results(z)]
print("MAXDIFF", max(float(np.max(np.abs(a - b))) for a, b in zip(results[1], results[2])))
print("REPLICA_LATENTS_DIFFER", not np.allclose(z0, z1))
"""


class MirroredStrategyTest(tu.TestCase):
    def test_accumulation_under_mirrored_strategy(self):
        result = subprocess.run([sys.executable, "-c", MIRRORED_SCRIPT], capture_output=True, text=True, cwd=ROOT,
                                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if line.startswith(("MAXDIFF", "REPLICA")))
        self.assertLess(float(lines["MAXDIFF"]), 1e-5)
        self.assertEqual(lines["REPLICA_LATENTS_DIFFER"], "True")


if __name__ == "__main__":
    tf.test.main()
