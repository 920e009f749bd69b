"""FusedPropGAN: every form trains with fit; exact SGD steps; accumulation; save/load/export."""

import os
from unittest import mock

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

import tf_fusedprop as fp
from tests import testing_utils as tu
from tf_fusedprop import replicas

FORMS = ("fused", "inverse", "adaptive", "simultaneous", "alternating")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def images(n, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, (n,) + tu.IMAGE).astype("float32")


def make_gan(
    form="fused",
    loss="nonsaturating",
    iter_size=1,
    n_dis=1,
    batch_norm=False,
    spectral_norm=False,
    d_optimizer=None,
    g_optimizer=None,
    seed=0,
):
    keras.utils.set_random_seed(seed)
    generator = tu.tiny_generator(batch_norm=batch_norm)
    discriminator = tu.tiny_discriminator(spectral_norm=spectral_norm)
    gan = fp.FusedPropGAN(
        generator, discriminator, loss=loss, form=fp.forms.get(form, n_dis=n_dis), iter_size=iter_size, seed=7
    )
    gan.compile(
        d_optimizer=d_optimizer or keras.optimizers.Adam(1e-3), g_optimizer=g_optimizer or keras.optimizers.Adam(1e-3)
    )
    return gan


def weights(gan):
    return [w.numpy() for w in gan.discriminator.trainable_weights + gan.generator.trainable_weights]


class LatentsFromList(fp.FusedPropGAN):
    """Test double for the latent sampler only: returns given latents in order (eager use)."""

    def use_latents(self, latents):
        queue = list(latents)
        self.sampler.latents = lambda n: queue.pop(0)


class FitTest(tu.TestCase):
    @parameterized.product(form=FORMS, iter_size=(1, 2))
    def test_every_form_trains_with_fit(self, form, iter_size):
        loss = "hinge" if form == "inverse" else "nonsaturating"
        gan = make_gan(form, loss=loss, iter_size=iter_size, batch_norm=True, spectral_norm=True)
        before = weights(gan)
        history = gan.fit(images(32), batch_size=8, epochs=1, verbose=0)
        self.assertEqual(
            set(history.history), {"d_loss", "g_loss", "real_logit", "fake_logit", "fake_spread", "fake_coverage"}
        )
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
        self.assertEqual(
            (gan.form.name, gan.gan_loss.name, gan.iter_size, gan.latent_dim),
            ("adaptive", "least_squares", 2, tu.LATENT),
        )
        self.assertIsInstance(gan.d_optimizer, keras.optimizers.Adam)


class ExactStepTest(tu.TestCase):
    @parameterized.parameters("fused", "inverse", "adaptive", "simultaneous")
    def test_sgd_step_is_minus_lr_times_compute_gradients(self, form):
        lr = 0.1
        gan = make_gan(
            form,
            loss="least_squares",
            spectral_norm=True,
            batch_norm=True,
            d_optimizer=keras.optimizers.SGD(lr),
            g_optimizer=keras.optimizers.SGD(lr),
        )
        real = tf.constant(images(8))
        state = tu.StateSnapshot(gan)
        z = gan.sampler.latents(8)
        d_grads, g_grads = fp.compute_gradients(gan.generator, gan.discriminator, real, z, "least_squares", form)
        expected = [w - lr * g.numpy() for w, g in zip(weights(gan), list(d_grads) + list(g_grads))]
        state.restore()
        gan.train_step(real)
        for actual, want in zip(weights(gan), expected):
            self.assertAllClose(actual, want, rtol=1e-6, atol=1e-7)


class NDisTest(tu.TestCase):
    """n_dis > 1 with a simultaneous form: n_dis - 1 D steps, then one SimGD step of both players."""

    @parameterized.product(form=("fused", "inverse", "simultaneous"), iter_size=(1, 2))
    def test_equals_d_steps_then_compute_gradients_at_the_same_latents(self, form, iter_size):
        lr, n_dis = 0.1, 3
        keras.utils.set_random_seed(0)
        gan = LatentsFromList(
            tu.tiny_generator(batch_norm=False),
            tu.tiny_discriminator(),
            loss="least_squares",
            form=fp.forms.get(form, n_dis=n_dis),
            iter_size=iter_size,
            seed=7,
        )
        gan.compile(d_optimizer=keras.optimizers.SGD(lr), g_optimizer=keras.optimizers.SGD(lr))
        real = tf.constant(images(8))
        latents = [tf.constant(np.random.default_rng(i).normal(size=(8, tu.LATENT)), tf.float32) for i in range(3)]
        start = weights(gan)
        d_vars, g_vars = gan.discriminator.trainable_variables, gan.generator.trainable_variables
        for z in latents[:-1]:
            step = fp.steps.discriminator_step(gan.generator, gan.discriminator, fp.Batch(real, z), "least_squares")
            for variable, grad in zip(d_vars, step.d_grads):
                variable.assign_sub(lr * grad)
        d_grads, g_grads = fp.compute_gradients(
            gan.generator, gan.discriminator, real, latents[-1], "least_squares", form
        )
        expected = [w - lr * g.numpy() for w, g in zip(weights(gan), list(d_grads) + list(g_grads))]
        for variable, value in zip(d_vars + g_vars, start):
            variable.assign(value)
        gan.use_latents(latents)
        gan.train_step(real)
        self.assertEqual((int(gan.d_optimizer.iterations), int(gan.g_optimizer.iterations)), (n_dis, 1))
        for actual, want in zip(weights(gan), expected):
            self.assertAllClose(actual, want, rtol=1e-5, atol=1e-6)


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
        micro = [
            (tf.constant(images(8, seed=i)), tf.constant(rng.normal(size=(8, tu.LATENT)), tf.float32))
            for i in range(12)
        ]

        keras.utils.set_random_seed(0)
        generator, discriminator = tu.tiny_generator(batch_norm=False), tu.tiny_discriminator()
        d_opt, g_opt = (
            keras.optimizers.Adam(1e-2, gradient_accumulation_steps=4),
            keras.optimizers.Adam(1e-2, gradient_accumulation_steps=4),
        )
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


class PartialBatchTest(tu.TestCase):
    """A batch that does not split evenly into iter_size micro-batches gives the whole batch's update."""

    @parameterized.parameters(
        ("fused", 20, 8, 4), ("alternating", 20, 8, 4), ("inverse", 18, 8, 4), ("fused", 16, 8, 3)
    )
    def test_uneven_batches_equal_iter_size_1(self, form, size, batch_size, iter_size):
        data = tf.data.Dataset.from_tensor_slices(images(size)).batch(batch_size)  # last batch partial
        results = []
        for k in (1, iter_size):
            gan = make_gan(form, iter_size=k)
            history = gan.fit(data, epochs=1, verbose=0)
            self.assertEqual(int(gan.d_optimizer.iterations), -(-size // batch_size))
            self.assertTrue(np.isfinite(history.history["d_loss"][-1]))
            results.append(weights(gan))
        for a, b in zip(*results):
            self.assertAllClose(a, b, rtol=1e-5, atol=1e-6)


class SubclassedGenerator(keras.Model):
    """A generator without symbolic `inputs`."""

    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(int(np.prod(tu.IMAGE)), activation="tanh")

    def call(self, z, training=False):
        return tf.reshape(self.dense(z), (-1,) + tu.IMAGE)


class ErrorTest(tu.TestCase):
    def test_bad_arguments(self):
        generator, discriminator = tu.tiny_generator(), tu.tiny_discriminator()
        with self.assertRaisesRegex(ValueError, "Received: iter_size=0"):
            fp.FusedPropGAN(generator, discriminator, iter_size=0)
        with self.assertRaisesRegex(ValueError, "Received: n_dis=0"):
            fp.FusedPropGAN(generator, discriminator, form=fp.forms.get("fused", n_dis=0))
        with self.assertRaisesRegex(ValueError, "hinge loss does not support form='fused'"):
            fp.FusedPropGAN(generator, discriminator, loss="hinge")

    def test_shapes_are_refused_in_one_line_naming_the_expected_shape(self):
        other = keras.Sequential([keras.Input((4, 4, 3)), keras.layers.Flatten(), fp.layers.Dense(1)])
        with self.assertRaisesRegex(
            ValueError, r"^The generator makes samples of shape \(8, 8, 3\) but the discriminator takes .*\(4, 4, 3\)"
        ):
            fp.FusedPropGAN(tu.tiny_generator(), other)
        gan = make_gan()
        with self.assertRaisesRegex(
            ValueError,
            r"^FusedPropGAN trains on samples of shape \(8, 8, 3\) .*; fit received a batch of shape \(4, 4, 4, 3\)\.$",
        ):
            gan.fit(np.zeros((8, 4, 4, 3), "float32"), batch_size=4, verbose=0)

    def test_fit_without_compile(self):
        gan = fp.FusedPropGAN(tu.tiny_generator(), tu.tiny_discriminator())
        with self.assertRaisesRegex(ValueError, "compile"):
            gan.fit(images(8), batch_size=8, verbose=0)

    def test_subclassed_generator(self):
        built = SubclassedGenerator()
        built.build((None, tu.LATENT))
        gan = fp.FusedPropGAN(built, tu.tiny_discriminator())
        self.assertEqual(gan.latent_dim, tu.LATENT)
        gan.compile(d_optimizer=keras.optimizers.Adam(1e-3), g_optimizer=keras.optimizers.Adam(1e-3))
        gan.fit(images(16), batch_size=8, epochs=1, verbose=0)
        self.assertEqual(int(gan.g_optimizer.iterations), 2)
        unbuilt = SubclassedGenerator()
        with self.assertRaisesRegex(ValueError, "Cannot tell the latent size.*latent_dim=\\.\\.\\."):
            fp.FusedPropGAN(unbuilt, tu.tiny_discriminator())
        unbuilt.build((None, tu.LATENT))  # an explicit latent_dim also works
        self.assertEqual(
            fp.FusedPropGAN(unbuilt, tu.tiny_discriminator(), latent_dim=tu.LATENT, form="simultaneous").latent_dim,
            tu.LATENT,
        )

    def test_coupled_discriminator_is_refused_at_construction_unless_opted_out(self):
        coupled = tu.tiny_discriminator(extra=[keras.layers.Lambda(lambda x: x - tf.reduce_mean(x, axis=0))])
        with self.assertRaisesRegex(ValueError, "form='fused' needs a discriminator that treats samples independently"):
            fp.FusedPropGAN(tu.tiny_generator(), coupled)
        fp.FusedPropGAN(tu.tiny_generator(), coupled, form="alternating")
        gan = fp.FusedPropGAN(tu.tiny_generator(), coupled, form=fp.SinglePass("fused", check_independence=False))
        self.assertFalse(gan.form.check_independence)


def mixed_float16_pair(logit):
    """G and D under mixed_float16 (D's last layer float32) whose logits are all near `logit`."""
    keras.utils.set_random_seed(3)
    half = "mixed_float16"
    generator = keras.Sequential(
        [
            keras.Input((tu.LATENT,)),
            keras.layers.Dense(16, activation="relu", dtype=half),
            keras.layers.Dense(int(np.prod(tu.IMAGE)), activation="tanh", dtype=half),
            keras.layers.Reshape(tu.IMAGE, dtype=half),
        ]
    )
    discriminator = keras.Sequential(
        [
            keras.Input(tu.IMAGE),
            fp.layers.Conv2D(4, 3, strides=2, padding="same", dtype=half),
            keras.layers.LeakyReLU(0.1, dtype=half),
            keras.layers.Flatten(dtype=half),
            fp.layers.Dense(1, dtype="float32"),
        ]
    )
    last = discriminator.layers[-1]
    last.set_weights([np.full(last.kernel.shape, 0.01, "float32"), np.array([logit], "float32")])
    return generator, discriminator


class MixedFloat16Test(tu.TestCase):
    """The factors (exp(12) > float16's max) are applied in float32; loss scaling is shared."""

    @parameterized.parameters(("fused", -12.0), ("inverse", 12.0), ("adaptive", -12.0), ("adaptive", 12.0))
    def test_factors_at_large_logits_give_finite_gradients(self, form, logit):
        generator, discriminator = mixed_float16_pair(logit)
        real, z = tu.tiny_batch()
        for loss_scale in (None, 2.0**15):
            scale_loss = None if loss_scale is None else (lambda objective, s=loss_scale: objective * s)
            result = fp.forms.simgd_step(
                generator,
                discriminator,
                fp.Batch(real, z),
                "nonsaturating",
                form,
                options=fp.steps.StepOptions(scale_loss=scale_loss),
            )
            self.assertAllClose(result.fake_logits, tf.fill([6], logit), atol=0.5)
            for grad in list(result.d_grads) + list(result.g_grads):
                self.assertTrue(np.all(np.isfinite(grad.numpy())), msg=f"{form} at {logit}, scale {loss_scale}")

    @parameterized.parameters(("fused", -12.0), ("inverse", 12.0))
    def test_loss_scaled_gradients_match_float32(self, form, logit):
        generator, discriminator = mixed_float16_pair(logit)
        real, z = tu.tiny_batch()
        state = tu.StateSnapshot(generator, discriminator)
        scale = 2.0**15
        scaled = fp.forms.simgd_step(
            generator,
            discriminator,
            fp.Batch(real, z),
            "nonsaturating",
            form,
            options=fp.steps.StepOptions(scale_loss=lambda objective: objective * scale),
        )
        state.restore()
        reference = fp.forms.simgd_step(generator, discriminator, fp.Batch(real, z), "nonsaturating", "simultaneous")
        # float16 carries ~3 decimal digits: compare the unscaled gradients at that precision.
        actual = [g.numpy().astype("float64") / scale for g in list(scaled.d_grads) + list(scaled.g_grads)]
        expected = [g.numpy().astype("float64") for g in list(reference.d_grads) + list(reference.g_grads)]
        self.assertLess(tu.max_relative_difference(actual, expected), 1e-2)

    def test_one_loss_scale_for_both_players(self):
        def lso(initial_scale=2.0**15):
            return keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(1e-3), initial_scale=initial_scale)

        gan = make_gan("fused")
        with self.assertRaisesRegex(
            ValueError, "wrap both optimizers in keras.optimizers.LossScaleOptimizer, or neither"
        ):
            gan.compile(d_optimizer=lso(), g_optimizer=keras.optimizers.Adam(1e-3))
        with self.assertRaisesRegex(ValueError, "same initial_scale"):
            gan.compile(d_optimizer=lso(), g_optimizer=lso(2.0**10))

    def test_non_finite_step_skips_both_players(self):
        keras.utils.set_random_seed(0)
        # G's output gains a term whose gradient is NaN (sqrt at 0): D's gradients stay finite.
        generator = keras.Sequential(
            [
                keras.Input((tu.LATENT,)),
                tu.tiny_generator(batch_norm=False),
                keras.layers.Lambda(lambda x: x + tf.sqrt(tf.abs(x) * 0.0)),
            ]
        )
        gan = fp.FusedPropGAN(generator, tu.tiny_discriminator(), form="inverse", seed=7)
        gan.compile(
            d_optimizer=keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(1e-3), initial_scale=2.0**10),
            g_optimizer=keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(1e-3), initial_scale=2.0**10),
        )
        before = weights(gan)
        gan.train_step(tf.constant(images(8)))
        for a, b in zip(before, weights(gan)):
            self.assertAllEqual(a, b)
        self.assertEqual(float(gan.d_optimizer.dynamic_scale), 2.0**9)
        self.assertEqual(float(gan.g_optimizer.dynamic_scale), 2.0**9)
        self.assertEqual(int(gan.d_optimizer.iterations), 0)
        self.assertIsNone(gan.divergence())  # loss scaling handled it: not a divergence

    def test_loss_scaled_step_equals_unscaled_step(self):
        results = []
        for scaled in (False, True):
            gan = make_gan("adaptive", loss="least_squares")
            optimizers = [keras.optimizers.SGD(0.1) for _ in range(2)]
            if scaled:
                optimizers = [keras.optimizers.LossScaleOptimizer(o, initial_scale=2.0**10) for o in optimizers]
            gan.compile(d_optimizer=optimizers[0], g_optimizer=optimizers[1])
            gan.train_step(tf.constant(images(8)))
            results.append(weights(gan))
        for a, b in zip(*results):
            self.assertAllClose(a, b, rtol=1e-5, atol=1e-6)


class DivergenceTest(tu.TestCase):
    def test_first_non_finite_update_is_recorded(self):
        gan = make_gan("fused", d_optimizer=keras.optimizers.Adam(1e30), g_optimizer=keras.optimizers.Adam(1e30))
        gan.fit(images(64), batch_size=8, epochs=1, verbose=0)
        divergence = gan.divergence()
        self.assertIsNotNone(divergence)
        self.assertBetween(divergence["step"], 1, 8)
        self.assertNotEmpty(divergence["players"])
        self.assertContainsSubset(divergence["players"], ["discriminator", "generator"])

    def test_healthy_run_records_nothing(self):
        gan = make_gan("alternating")
        gan.fit(images(32), batch_size=8, epochs=1, verbose=0)
        self.assertIsNone(gan.divergence())


class ConditionalGANTest(tu.TestCase):
    @parameterized.parameters(*FORMS)
    def test_fit_on_images_and_labels(self, form):
        generator, discriminator = tu.tiny_conditional_pair(num_classes=3, spectral_norm=True)
        gan = fp.FusedPropGAN(
            generator,
            discriminator,
            form=form,
            num_classes=3,
            iter_size=2,
            seed=1,
            loss="hinge" if form == "inverse" else "nonsaturating",
        )
        gan.compile(d_optimizer=keras.optimizers.Adam(1e-3), g_optimizer=keras.optimizers.Adam(1e-3))
        x = np.random.default_rng(0).uniform(-1, 1, (16, 8, 8, 1)).astype("float32")
        y = np.random.default_rng(1).integers(0, 3, 16).astype("int32")
        history = gan.fit(x, y, batch_size=8, epochs=1, verbose=0)
        self.assertTrue(all(np.isfinite(v[-1]) for v in history.history.values()))
        self.assertEqual(int(gan.g_optimizer.iterations), 2)
        labels = gan.sampler.labels(1000).numpy()
        self.assertEqual(set(labels), {0, 1, 2})

    def test_labels_are_required(self):
        generator, discriminator = tu.tiny_conditional_pair(num_classes=3)
        gan = fp.FusedPropGAN(generator, discriminator, num_classes=3)
        gan.compile(d_optimizer="adam", g_optimizer="adam")
        with self.assertRaisesRegex(
            ValueError, r"conditional FusedPropGAN \(num_classes=3\) is fit on \(samples, labels\)"
        ):
            gan.train_step(tf.zeros([4, 8, 8, 1]))
        with self.assertRaisesRegex(ValueError, "num_classes=K"):
            make_gan().sampler.labels(3)


class EMATest(tu.TestCase):
    def test_ema_generator_follows_g_and_is_what_is_sampled_saved_and_exported(self):
        keras.utils.set_random_seed(0)
        gan = fp.FusedPropGAN(
            tu.tiny_generator(batch_norm=True),
            tu.tiny_discriminator(),
            form="adaptive",
            seed=3,
            ema=fp.EMA(0.5, start=1),
        )
        gan.compile(d_optimizer=keras.optimizers.Adam(1e-2), g_optimizer=keras.optimizers.Adam(1e-2))
        self.assertIs(gan.sampling_generator, gan.ema_generator)
        expected = None
        for step in (1, 2, 3):
            gan.train_step(tf.constant(images(8, seed=step)))
            current = [w.numpy() for w in gan.generator.trainable_variables]
            expected = current if step <= 1 else [0.5 * e + 0.5 * c for e, c in zip(expected, current)]
        for average, want in zip(gan.ema_generator.trainable_variables, expected):
            self.assertAllClose(average, want, rtol=1e-5, atol=1e-7)
        self.assertNotAllClose(gan.ema_generator.trainable_variables[0], gan.generator.trainable_variables[0])
        path = os.path.join(self.get_temp_dir(), "ema.keras")
        gan.save(path)
        loaded = keras.models.load_model(path)
        for a, b in zip(loaded.ema_generator.weights, gan.ema_generator.weights):
            self.assertAllClose(a, b)
        directory = os.path.join(self.get_temp_dir(), "generator")
        gan.export_generator(directory)
        info = fp.export.read_export_info(directory)
        self.assertEqual((info["weights"], info["ema_decay"], info["step"]), ("ema", 0.5, 3))
        z = np.random.default_rng(0).normal(size=(2, tu.LATENT)).astype("float32")
        served = tf.saved_model.load(directory)  # held: its variables live as long as the object
        self.assertAllClose(served.serve(z), gan.ema_generator(z, training=False), atol=1e-6)


class RegularizedGANTest(tu.TestCase):
    @parameterized.parameters("inverse", "simultaneous", "alternating")
    def test_lazy_r1_is_applied_every_reg_every_steps_with_scaled_weight(self, form):
        keras.utils.set_random_seed(0)
        gan = LatentsFromList(
            tu.tiny_generator(batch_norm=False),
            tu.tiny_discriminator(),
            form=form,
            seed=7,
            regularizers=[fp.R1(0.5, every=2)],
        )
        gan.compile(d_optimizer=keras.optimizers.SGD(0.1), g_optimizer=keras.optimizers.SGD(0.1))
        rng = np.random.default_rng(3)
        for step in range(3):
            real = tf.constant(images(8, seed=step))
            z = tf.constant(rng.normal(size=(8, tu.LATENT)), tf.float32)
            penalty = (fp.regularizers.R1(1.0),) if step % 2 == 0 else ()
            before = [w.numpy() for w in gan.discriminator.trainable_variables]
            d_grads = fp.steps.discriminator_step(
                gan.generator, gan.discriminator, fp.Batch(real, z), options=fp.steps.StepOptions(regularizers=penalty)
            ).d_grads
            tu.StateSnapshot(gan.discriminator).restore()
            for variable, value in zip(gan.discriminator.trainable_variables, before):
                variable.assign(value)
            gan.use_latents([z, z])  # alternating draws a second z for its G step
            state = tu.StateSnapshot(gan.generator, gan.discriminator)
            expected = [w - 0.1 * g.numpy() for w, g in zip(before, d_grads)]
            state.restore()
            gan.train_step(real)
            for actual, want in zip(gan.discriminator.trainable_variables, expected):
                self.assertAllClose(actual, want, rtol=1e-5, atol=1e-6)


class AugmentedGANTest(tu.TestCase):
    def test_fit_with_diffaugment_and_gradient_penalty(self):
        keras.utils.set_random_seed(0)
        gan = fp.FusedPropGAN(
            tu.tiny_generator(),
            tu.tiny_discriminator(),
            form="adaptive",
            loss="wasserstein",
            augment=fp.DiffAugment("translation,cutout,color"),
            regularizers=[fp.GradientPenalty(10.0)],
            seed=2,
        )
        gan.compile(d_optimizer=keras.optimizers.Adam(1e-3), g_optimizer=keras.optimizers.Adam(1e-3))
        history = gan.fit(images(16), batch_size=8, epochs=1, verbose=0)
        self.assertTrue(all(np.isfinite(v[-1]) for v in history.history.values()))
        config = gan.get_config()
        self.assertEqual(
            (config["augment"]["config"]["policy"], config["regularizers"][0]["config"]["weight"]),
            ("color,translation,cutout", 10.0),
        )
        with self.assertRaisesRegex(ValueError, "Unknown DiffAugment policy"):
            fp.FusedPropGAN(tu.tiny_generator(), tu.tiny_discriminator(), augment=fp.DiffAugment("rotate"))


class SeedStreamTest(tu.TestCase):
    def test_plugins_do_not_shift_the_latents(self):
        latents = []
        for plugins in ({}, {"regularizers": [fp.GradientPenalty(10.0)], "augment": fp.DiffAugment("translation")}):
            keras.utils.set_random_seed(0)
            gan = fp.FusedPropGAN(tu.tiny_generator(), tu.tiny_discriminator(), form="adaptive", seed=4, **plugins)
            gan.compile(d_optimizer=keras.optimizers.Adam(1e-3), g_optimizer=keras.optimizers.Adam(1e-3))
            gan.train_step(tf.constant(images(8)))
            latents.append(gan.sampler.latents(8).numpy())
        self.assertAllEqual(latents[0], latents[1])

    def test_plugins_are_objects(self):
        generator, discriminator = tu.tiny_generator(), tu.tiny_discriminator()
        with self.assertRaisesRegex(ValueError, r"augment takes tf_fusedprop.DiffAugment .*Received: augment='color'"):
            fp.FusedPropGAN(generator, discriminator, augment="color")
        with self.assertRaisesRegex(ValueError, r"regularizers takes tf_fusedprop.Regularizer .*R1\(0.1, every=16\)"):
            fp.FusedPropGAN(generator, discriminator, regularizers=[10.0])
        with self.assertRaisesRegex(ValueError, r"ema takes tf_fusedprop.EMA .*Received: ema=0.999"):
            fp.FusedPropGAN(generator, discriminator, ema=0.999)


class MultiWorkerResultsTest(tu.TestCase):
    def test_across_workers_each_step_result_is_a_vector_of_one(self):
        gan = make_gan("fused")
        with mock.patch.object(replicas, "multi_worker", return_value=True):
            results = gan.train_step(tf.constant(images(8)))
        self.assertEqual({name: tuple(value.shape) for name, value in results.items()}, dict.fromkeys(results, (1,)))
        self.assertEqual(tuple(gan.train_step(tf.constant(images(8)))["d_loss"].shape), ())


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
        self.assertAllClose(
            resumed.discriminator.non_trainable_weights[0], straight.discriminator.non_trainable_weights[0]
        )

    def test_exported_generator_reloads_serves_and_refuses_a_wrong_latent(self):
        """Reloaded here; export_test reloads SavedModels in a fresh process."""
        gan = make_gan(batch_norm=True)
        gan.fit(images(16), batch_size=8, epochs=1, verbose=0)
        directory = os.path.join(self.get_temp_dir(), "generator")
        gan.export_generator(directory)
        z = np.random.default_rng(0).normal(size=(5, tu.LATENT)).astype("float32")
        model = tf.saved_model.load(directory)
        self.assertAllClose(model.serve(tf.constant(z)), gan.generator(z, training=False), rtol=1e-5, atol=1e-6)
        with self.assertRaisesRegex(TypeError, rf"shape=\(2, {tu.LATENT + 1}\)(.|\n)*shape=\(None, {tu.LATENT}\)"):
            model.serve(tf.zeros([2, tu.LATENT + 1]))


class MirroredStrategyTest(tu.TestCase):
    def test_accumulation_under_mirrored_strategy(self):
        data = np.random.default_rng(0).uniform(-1, 1, (64,) + tu.IMAGE).astype("float32")
        strategy = tu.two_cpu_strategy()
        results = {}
        for iter_size in (1, 2):
            with strategy.scope():
                gan = make_gan(form="inverse", iter_size=iter_size)
            history = gan.fit(data, batch_size=16, epochs=1, shuffle=False, verbose=0)
            results[iter_size] = [w.numpy() for w in gan.trainable_weights]
            self.assertEqual(gan.d_optimizer.iterations.numpy(), 4)
            self.assertTrue(all(np.isfinite(v[-1]) for v in history.history.values()))
        self.assertLess(max(float(np.max(np.abs(a - b))) for a, b in zip(results[1], results[2])), 1e-5)
        z = strategy.run(tf.function(lambda: gan.sampler.latents(4)))
        z0, z1 = [t.numpy() for t in strategy.experimental_local_results(z)]
        self.assertNotAllClose(z0, z1)  # each replica its own latents
        # Spectral norm inside the accumulation loop: each replica updates its own (equal) copy of u.
        with strategy.scope():
            gan = make_gan(form="inverse", iter_size=2, spectral_norm=True)
        u_before = gan.discriminator.layers[0].sn_u.numpy()
        gan.fit(data, batch_size=16, epochs=1, shuffle=False, verbose=0)
        u0, u1 = [v.numpy() for v in strategy.experimental_local_results(gan.discriminator.layers[0].sn_u.value)]
        self.assertAllEqual(u0, u1)
        self.assertNotAllClose(u0, u_before)


if __name__ == "__main__":
    tf.test.main()
