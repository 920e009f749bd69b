"""The forms: exactness of every single-pass form against two-tape SimGD, the conventional
steps, the (loss, form) checks and the refusals."""

import functools
import itertools

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

import tf_fusedprop as fp
from tests import testing_utils as tu
from tf_fusedprop import forms, regularizers, steps
from tf_fusedprop.augment import DiffAugment

VALID_PAIRS = [
    (loss, form)
    for loss, form in itertools.product(fp.losses.names(), ("fused", "inverse", "adaptive", "simultaneous"))
    if forms.supports(loss, form)
]


def two_tape_simgd(
    generator,
    discriminator,
    real,
    z,
    loss,
    real_labels=None,
    fake_labels=None,
    augment=None,
    regularizers=(),
    seed=None,
):
    """The reference: D's gradient from D's loss (plus penalties), G's from L_G, both at the
    same parameters, D called once on concat(real, fake[, interpolates])."""
    loss = fp.losses.get(loss)
    n = real.shape[0]
    with tf.GradientTape() as d_tape, tf.GradientTape() as g_tape:
        fake = generator(z if fake_labels is None else [z, fake_labels], training=True)
        samples = [real, fake]
        labels = None if real_labels is None else [real_labels, fake_labels]
        on_interpolates = [r for r in regularizers if isinstance(r, fp.GradientPenalty)]
        if on_interpolates:
            eps = tf.random.stateless_uniform([n] + [1] * (len(real.shape) - 1), seed=seed, dtype=real.dtype)
            samples.append(eps * real + (1 - eps) * tf.stop_gradient(fake))
            labels = None if labels is None else labels + [real_labels]
        x = tf.concat(samples, 0)
        with tf.GradientTape() as inner:
            inner.watch(x)
            seen = x if augment is None else augment(x)
            y = tf.reshape(discriminator(seen if labels is None else [seen, tf.concat(labels, 0)], training=True), [-1])
            target = tf.reduce_sum(y[:n]) + tf.reduce_sum(y[2 * n :])
        input_grads = inner.gradient(target, x) if regularizers else None
        penalty = 0.0
        for r in regularizers:
            penalty += r(input_grads[:n] if isinstance(r, fp.R1) else input_grads[2 * n :])
        d_loss = tf.reduce_mean(loss.d_real(y[:n])) + tf.reduce_mean(loss.d_fake(y[n : 2 * n])) + penalty
        g_loss = tf.reduce_mean(loss.g(y[n : 2 * n]))
    return (
        d_tape.gradient(d_loss, discriminator.trainable_variables),
        g_tape.gradient(g_loss, generator.trainable_variables),
    )


@functools.cache
def shared_pair(dtype, spectral_norm):
    """One tiny pair per (dtype, spectral norm) for the 76 exactness cases, built once: computing
    gradients changes no weight, and each case snapshots the state it starts from and restores it
    before every run."""
    return tu.tiny_pair(dtype=dtype, spectral_norm=spectral_norm)


class ExactnessTest(tu.TestCase):
    @parameterized.product(pair=VALID_PAIRS, spectral_norm=(False, True), dtype=("float32", "float64"))
    def test_matches_two_tape_simgd(self, pair, spectral_norm, dtype):
        loss, form = pair
        generator, discriminator = shared_pair(dtype, spectral_norm)
        real, z = tu.tiny_batch(dtype=dtype)
        state = tu.StateSnapshot(generator, discriminator)
        expected = two_tape_simgd(generator, discriminator, real, z, loss)
        tolerance = 1e-5 if dtype == "float32" else 1e-10
        # Graph mode is checked in float32, the dtype that is trained; float64 runs eagerly.
        runs = (
            (fp.compute_gradients,) if dtype == "float64" else (fp.compute_gradients, tf.function(fp.compute_gradients))
        )
        for run in runs:
            state.restore()
            d_grads, g_grads = run(generator, discriminator, real, z, loss=loss, form=form)
            diff = tu.max_relative_difference(list(d_grads) + list(g_grads), list(expected[0]) + list(expected[1]))
            self.assertLess(diff, tolerance, msg=f"{loss}/{form} ({run})")
            self.assertLen(d_grads, len(discriminator.trainable_variables))
            self.assertLen(g_grads, len(generator.trainable_variables))

    def test_step_result_reports_losses_and_logits(self):
        generator, discriminator = tu.tiny_pair()
        real, z = tu.tiny_batch()
        state = tu.StateSnapshot(generator, discriminator)
        result = forms.simgd_step(generator, discriminator, fp.Batch(real, z), "least_squares", "adaptive")
        state.restore()
        fake = generator(z, training=True)
        y = tf.reshape(discriminator(tf.concat([real, fake], 0), training=True), [-1])
        self.assertAllClose(result.real_logits, y[:6])
        self.assertAllClose(result.fake_logits, y[6:])
        self.assertAllClose(result.d_loss, np.mean((y[:6] - 1) ** 2) + np.mean(y[6:] ** 2))
        self.assertAllClose(result.g_loss, np.mean((y[6:] - 1) ** 2))
        self.assertAllClose(result.fake_spread, numpy_spread(fake) / numpy_spread(real), rtol=1e-5)
        self.assertAllClose(result.fake_coverage, numpy_coverage(fake, real, k=5))


def numpy_spread(samples):
    """The mean over features of the standard deviation across the batch, in float64."""
    x = np.asarray(samples, np.float64).reshape(len(samples), -1)
    return np.mean(np.sqrt(np.mean((x - x.mean(axis=0)) ** 2, axis=0)))


class SpreadTest(tu.TestCase):
    """`spread_ratio`: how far apart G's samples are, against the real batch's."""

    def test_spread_ratio_is_the_ratio_of_mean_standard_deviations(self):
        rng = np.random.default_rng(0)
        real = rng.normal(size=(16, 4, 4, 3)).astype(np.float32)
        fake = (0.3 * rng.normal(size=(16, 4, 4, 3)) + 5.0).astype(np.float32)
        self.assertAllClose(steps.spread_ratio(fake, real), numpy_spread(fake) / numpy_spread(real), rtol=1e-5)
        self.assertAllClose(steps.spread_ratio(2.0 * real + 1.0, real), 2.0, rtol=1e-5)

    def test_one_sample_for_every_latent_has_no_spread(self):
        real = np.random.default_rng(1).normal(size=(8, 5)).astype(np.float32)
        self.assertEqual(float(steps.spread_ratio(np.repeat(real[:1], 8, axis=0), real)), 0.0)
        self.assertEqual(float(steps.spread_ratio(real, np.zeros_like(real))), 0.0)  # no spread to compare with


def numpy_coverage(fake, real, k):
    """Naeem et al.'s coverage of `real` by `fake` within one batch, by loops in float64."""
    fake = np.asarray(fake, np.float64).reshape(len(fake), -1)
    real = np.asarray(real, np.float64).reshape(len(real), -1)
    covered = 0
    for i, row in enumerate(real):
        others = sorted(np.sum((other - row) ** 2) for j, other in enumerate(real) if j != i)
        radius = others[min(k, len(others)) - 1]
        covered += min(np.sum((f - row) ** 2) for f in fake) < radius
    return covered / len(real)


class CoverageTest(tu.TestCase):
    """`coverage`: the share of the real batch with a fake sample among its nearest neighbours."""

    def test_coverage_equals_the_definition_by_loops(self):
        rng = np.random.default_rng(0)
        real = rng.normal(size=(24, 3, 3, 2)).astype(np.float32)
        fake = (rng.normal(size=(24, 3, 3, 2)) + 0.7).astype(np.float32)
        for k in (1, 3, 5):
            expected = numpy_coverage(fake, real, k)
            self.assertGreater(expected, 0.0)
            self.assertLess(expected, 1.0)
            self.assertAllClose(steps.coverage(fake, real, k=k), expected, msg=f"k={k}")

    def test_samples_drawn_as_the_data_cover_it_and_missing_modes_are_not_covered(self):
        rng = np.random.default_rng(1)
        modes = 10.0 * np.eye(8, dtype=np.float32)  # eight well-separated modes
        real = modes[rng.integers(0, 8, size=256)] + rng.normal(size=(256, 8)).astype(np.float32) * 0.3
        alike = modes[rng.integers(0, 8, size=256)] + rng.normal(size=(256, 8)).astype(np.float32) * 0.3
        self.assertAllClose(steps.coverage(alike, real), 1 - 2.0**-5, atol=0.04)
        half = alike[np.argmax(alike, axis=1) < 4]  # G drawing four of the eight modes, widely
        share_in_them = np.mean(np.argmax(real, axis=1) < 4)
        self.assertAllClose(steps.coverage(half, real), share_in_them, atol=0.04)

    def test_k_is_clipped_to_the_batch_and_one_real_row_covers_nothing(self):
        real = np.array([[0.0], [1.0], [3.0]], np.float32)
        self.assertAllClose(steps.coverage(np.array([[0.9]], np.float32), real, k=5), numpy_coverage([[0.9]], real, 5))
        self.assertEqual(float(steps.coverage(real[:1], real[:1])), 0.0)


def saturated_discriminator(logit, dtype):
    """A D whose logits are all close to `logit` but still depend on every parameter."""
    discriminator = tu.tiny_discriminator(dtype)
    dense = discriminator.layers[-1]
    kernel = np.full(dense.kernel.shape, 0.01, dtype)
    dense.set_weights([kernel, np.array([logit], dtype)])
    return discriminator


class SaturationTest(tu.TestCase):
    """At |y| = 100 in float32 no form may produce NaN; the forms named in the guide stay exact."""

    def _grads(self, logit, dtype, form, loss="nonsaturating"):
        keras.utils.set_random_seed(3)
        source_g, source_d = tu.tiny_generator(), saturated_discriminator(logit, "float32")
        generator, discriminator = tu.tiny_generator(dtype), tu.tiny_discriminator(dtype)
        for target, source in ((generator, source_g), (discriminator, source_d)):
            target.set_weights([w.astype(dtype) for w in source.get_weights()])
        real, z = tu.tiny_batch(dtype=dtype)
        d_grads, g_grads = fp.compute_gradients(generator, discriminator, real, z, loss, form)
        return [g.numpy().astype("float64") for g in list(d_grads) + list(g_grads)]

    @parameterized.product(
        logit=(100.0, -100.0),
        form=("fused", "inverse", "adaptive"),
        loss=("nonsaturating", "least_squares", "minimax", "wasserstein"),
    )
    def test_always_finite(self, logit, form, loss):
        for grad in self._grads(logit, "float32", form, loss):
            self.assertTrue(np.all(np.isfinite(grad)), msg=f"{loss}/{form} at y={logit}")

    @parameterized.parameters(("fused", 100.0), ("inverse", -100.0), ("adaptive", 100.0), ("adaptive", -100.0))
    def test_exact_where_the_form_is_exact(self, form, logit):
        in32 = self._grads(logit, "float32", form)
        in64 = self._grads(logit, "float64", "simultaneous")
        scale = max(np.max(np.abs(g)) for g in in64)
        self.assertGreater(scale, 0.0)
        for a, b in zip(in32, in64):
            self.assertAllClose(a, b, rtol=1e-5, atol=1e-6 * scale)


class ConditionalExactnessTest(tu.TestCase):
    """With class labels (conditional BatchNorm in G, projection D with layers.Embedding) every
    valid (loss, form) gives the two-pass SimGD gradients."""

    @parameterized.product(pair=VALID_PAIRS, dtype=("float32", "float64"))
    def test_matches_two_tape_simgd(self, pair, dtype):
        loss, form = pair
        generator, discriminator = tu.tiny_conditional_pair(dtype=dtype, spectral_norm=True)
        real, z, real_labels, fake_labels = tu.tiny_labelled_batch(dtype=dtype)
        state = tu.StateSnapshot(generator, discriminator)
        expected = two_tape_simgd(generator, discriminator, real, z, loss, real_labels, fake_labels)
        state.restore()
        d_grads, g_grads = fp.compute_gradients(
            generator, discriminator, real, z, loss, form, real_labels=real_labels, fake_labels=fake_labels
        )
        diff = tu.max_relative_difference(list(d_grads) + list(g_grads), list(expected[0]) + list(expected[1]))
        self.assertLess(diff, 1e-5 if dtype == "float32" else 1e-10, msg=f"{loss}/{form}")


PENALTIES = {
    "r1": (regularizers.R1(2.0),),
    "gp": (regularizers.GradientPenalty(10.0),),
    "both": (regularizers.R1(0.5), regularizers.GradientPenalty(1.0)),
}


class PenaltyExactnessTest(tu.TestCase):
    """R1 and WGAN-GP join D's objective in the same pass: every form equals two-pass SimGD
    with the same penalty (float64 <= 1e-10), spectral norm on; also traced (float32)."""

    @parameterized.product(pair=VALID_PAIRS, penalty=tuple(PENALTIES))
    def test_matches_two_tape_simgd_in_float64(self, pair, penalty):
        loss, form = pair
        generator, discriminator = tu.tiny_pair(dtype="float64", spectral_norm=True)
        real, z = tu.tiny_batch(dtype="float64")
        state = tu.StateSnapshot(generator, discriminator)
        seed = tf.constant([4, 2], tf.int64)
        expected = two_tape_simgd(generator, discriminator, real, z, loss, regularizers=PENALTIES[penalty], seed=seed)
        state.restore()
        d_grads, g_grads = fp.compute_gradients(
            generator, discriminator, real, z, loss, form, regularizers=PENALTIES[penalty], seed=seed
        )
        diff = tu.max_relative_difference(list(d_grads) + list(g_grads), list(expected[0]) + list(expected[1]))
        self.assertLess(diff, 1e-10, msg=f"{loss}/{form}/{penalty}")

    @parameterized.parameters("fused", "inverse", "adaptive")
    def test_traced_in_float32(self, form):
        generator, discriminator = tu.tiny_pair(spectral_norm=True)
        real, z = tu.tiny_batch()
        state = tu.StateSnapshot(generator, discriminator)
        seed = tf.constant([4, 2], tf.int64)
        expected = two_tape_simgd(
            generator, discriminator, real, z, "nonsaturating", regularizers=PENALTIES["both"], seed=seed
        )
        state.restore()
        run = tf.function(
            lambda: fp.compute_gradients(
                generator, discriminator, real, z, "nonsaturating", form, regularizers=PENALTIES["both"], seed=seed
            )
        )
        d_grads, g_grads = run()
        diff = tu.max_relative_difference(list(d_grads) + list(g_grads), list(expected[0]) + list(expected[1]))
        self.assertLess(diff, 1e-5)

    def test_penalty_changes_d_but_not_g(self):
        generator, discriminator = tu.tiny_pair(dtype="float64")
        real, z = tu.tiny_batch(dtype="float64")
        plain = fp.compute_gradients(generator, discriminator, real, z, "wasserstein", "inverse")
        penalised = fp.compute_gradients(
            generator, discriminator, real, z, "wasserstein", "inverse", regularizers=PENALTIES["both"], seed=[1, 2]
        )
        self.assertGreater(tu.max_relative_difference(penalised[0], plain[0]), 1e-3)
        self.assertLess(tu.max_relative_difference(penalised[1], plain[1]), 1e-12)


class AugmentedExactnessTest(tu.TestCase):
    """DiffAugment keeps D per-sample, so every form stays exact (and conditional too), with
    every operation applied or each with a probability."""

    @parameterized.product(form=("fused", "inverse", "adaptive"), conditional=(False, True), p=(1.0, 0.5))
    def test_matches_two_tape_simgd(self, form, conditional, p):
        augment = DiffAugment("color,translation,cutout", p=p).bind(tf.constant([7, 9], tf.int64))
        if conditional:
            generator, discriminator = tu.tiny_conditional_pair(dtype="float64", spectral_norm=True)
            real, z, real_labels, fake_labels = tu.tiny_labelled_batch(dtype="float64")
        else:
            generator, discriminator = tu.tiny_pair(dtype="float64", spectral_norm=True)
            (real, z), real_labels, fake_labels = tu.tiny_batch(dtype="float64"), None, None
        state = tu.StateSnapshot(generator, discriminator)
        expected = two_tape_simgd(
            generator, discriminator, real, z, "nonsaturating", real_labels, fake_labels, augment, PENALTIES["r1"]
        )
        state.restore()
        d_grads, g_grads = fp.compute_gradients(
            generator,
            discriminator,
            real,
            z,
            "nonsaturating",
            form,
            real_labels=real_labels,
            fake_labels=fake_labels,
            augment=augment,
            regularizers=PENALTIES["r1"],
        )
        diff = tu.max_relative_difference(list(d_grads) + list(g_grads), list(expected[0]) + list(expected[1]))
        self.assertLess(diff, 1e-10)


class ConventionalStepTest(tu.TestCase):
    """`discriminator_step` and `generator_step` give each player's gradient of its own loss."""

    def test_discriminator_step(self):
        generator, discriminator = tu.tiny_pair(spectral_norm=False)
        real, z = tu.tiny_batch()
        state = tu.StateSnapshot(generator, discriminator)
        result = steps.discriminator_step(generator, discriminator, fp.Batch(real, z), "nonsaturating")
        state.restore()
        fake = generator(z, training=True)
        self.assertAllClose(result.fake_spread, numpy_spread(fake) / numpy_spread(real), rtol=1e-5)
        self.assertAllClose(result.fake_coverage, numpy_coverage(fake, real, k=5))
        expected, _ = two_tape_simgd(generator, discriminator, real, z, "nonsaturating")
        self.assertLess(tu.max_relative_difference(result.d_grads, expected), 1e-6)

    def test_generator_step_forms_discriminator_gradients_only_on_request(self):
        generator, discriminator = tu.tiny_pair(spectral_norm=False)
        _, z = tu.tiny_batch()
        batch = fp.Batch(None, z)
        efficient = steps.generator_step(generator, discriminator, batch, "nonsaturating")
        paper_style = steps.generator_step(
            generator, discriminator, batch, "nonsaturating", discriminator_gradients=True
        )
        self.assertIsNone(efficient.d_grads)
        self.assertLen(paper_style.d_grads, len(discriminator.trainable_variables))
        with tf.GradientTape(persistent=True) as tape:
            logits = tf.reshape(discriminator(generator(z, training=True), training=True), [-1])
            g_loss = tf.reduce_mean(tf.nn.softplus(-logits))
        self.assertLess(
            tu.max_relative_difference(efficient.g_grads, tape.gradient(g_loss, generator.trainable_variables)), 1e-6
        )
        self.assertLess(
            tu.max_relative_difference(paper_style.d_grads, tape.gradient(g_loss, discriminator.trainable_variables)),
            1e-6,
        )


def batch_mean_subtracted():
    """A weight-free layer that couples samples: it subtracts the batch mean."""
    return keras.layers.Lambda(lambda x: x - tf.reduce_mean(x, axis=0, keepdims=True), name="minus_batch_mean")


def minibatch_std():
    """Minibatch standard deviation (ProGAN): one feature shared by the whole batch."""
    return keras.layers.Lambda(
        lambda x: tf.concat([x, tf.ones_like(x[:, :1]) * tf.reduce_mean(tf.math.reduce_std(x, axis=0))], axis=1),
        name="minibatch_std",
    )


class IndependenceProbeTest(tu.TestCase):
    """Single-pass forms refuse a D that mixes samples, whatever layer does it."""

    def setUp(self):
        super().setUp()
        self.generator = tu.tiny_generator()
        self.real, self.z = tu.tiny_batch()

    @parameterized.product(layer=(batch_mean_subtracted, minibatch_std), form=("fused", "inverse", "adaptive"))
    def test_coupling_layers_are_refused(self, layer, form):
        discriminator = tu.tiny_discriminator(extra=[layer()])
        with self.assertRaisesRegex(
            ValueError, f"form='{form}' needs a discriminator that treats samples independently.*mixes them"
        ):
            fp.compute_gradients(self.generator, discriminator, self.real, self.z, "nonsaturating", form)

    def test_refused_while_tracing_a_tf_function(self):
        discriminator = tu.tiny_discriminator(extra=[batch_mean_subtracted()])
        with self.assertRaisesRegex(ValueError, "mixes them"):
            tf.function(fp.compute_gradients)(
                self.generator, discriminator, self.real, self.z, "nonsaturating", "fused"
            )

    def test_the_refused_gradients_would_be_wrong(self):
        # What the probe prevents: with the check off, fused is far from SimGD on such a D.
        discriminator = tu.tiny_discriminator(extra=[batch_mean_subtracted()])
        state = tu.StateSnapshot(self.generator, discriminator)
        expected = fp.compute_gradients(
            self.generator, discriminator, self.real, self.z, "nonsaturating", "simultaneous"
        )
        state.restore()
        actual = fp.compute_gradients(
            self.generator, discriminator, self.real, self.z, "nonsaturating", "fused", check_independence=False
        )
        self.assertGreater(tu.max_relative_difference(actual[1], expected[1]), 1e-2)

    def test_per_sample_discriminators_pass(self):
        with_dropout = tu.tiny_discriminator(spectral_norm=True, extra=[keras.layers.Dropout(0.5)])
        for discriminator in (tu.tiny_discriminator(spectral_norm=True), with_dropout):
            u = discriminator.non_trainable_variables[0].numpy()
            x = self.generator(self.z, training=False)
            self.assertEqual(steps.sample_coupling(discriminator, x), 0.0)
            self.assertAllEqual(discriminator.non_trainable_variables[0], u)  # state restored
            fp.compute_gradients(self.generator, discriminator, self.real, self.z, "nonsaturating", "adaptive")

    def test_coupling_is_measured(self):
        coupled = tu.tiny_discriminator(extra=[batch_mean_subtracted()])
        self.assertGreater(steps.sample_coupling(coupled, self.generator(self.z, training=False)), 1e-2)

    def test_simultaneous_accepts_coupling(self):
        discriminator = tu.tiny_discriminator(extra=[batch_mean_subtracted()])
        d_grads, _ = fp.compute_gradients(
            self.generator, discriminator, self.real, self.z, "nonsaturating", "simultaneous"
        )
        self.assertLen(d_grads, len(discriminator.trainable_variables))


class RefusalTest(tu.TestCase):
    def setUp(self):
        super().setUp()
        self.generator, self.discriminator = tu.tiny_pair()
        self.real, self.z = tu.tiny_batch()

    def _call(self, discriminator=None, loss="nonsaturating", form="fused"):
        return fp.compute_gradients(self.generator, discriminator or self.discriminator, self.real, self.z, loss, form)

    def test_unknown_form(self):
        with self.assertRaisesRegex(ValueError, "Received: form='fusedprop'.*Valid forms: fused, inverse"):
            self._call(form="fusedprop")

    def test_unknown_loss(self):
        with self.assertRaisesRegex(ValueError, "Received: loss='ns'.*nonsaturating"):
            self._call(loss="ns")

    def test_alternating_is_a_training_loop(self):
        with self.assertRaisesRegex(ValueError, "FusedPropGAN"):
            self._call(form="alternating")

    @parameterized.parameters("fused", "inverse", "adaptive")
    def test_batch_norm_in_discriminator(self, form):
        discriminator = tu.tiny_discriminator(extra=[keras.layers.BatchNormalization(name="bn_in_d")])
        with self.assertRaisesRegex(ValueError, "BatchNormalization layer 'bn_in_d'.*simultaneous"):
            self._call(discriminator, form=form)

    @parameterized.parameters("inverse", "adaptive")
    def test_plain_keras_layer_in_discriminator(self, form):
        discriminator = tu.tiny_discriminator(extra=[keras.layers.Dense(3, name="plain_dense")])
        with self.assertRaisesRegex(ValueError, "layer 'plain_dense' is a keras.*Dense.*tf_fusedprop.layers"):
            self._call(discriminator, form=form)
        with self.assertRaisesRegex(
            ValueError, r"layer 'plain_dense' is a keras.layers.Dense: use tf_fusedprop.layers.Dense instead"
        ) as raised:
            self._call(discriminator, form=form)
        self.assertNotIn("keras.src", str(raised.exception))

    def test_plain_keras_layer_is_fine_for_fused_and_simultaneous(self):
        discriminator = tu.tiny_discriminator(extra=[keras.layers.Dense(3)])
        for form in ("fused", "simultaneous"):
            d_grads, _ = self._call(discriminator, form=form)
            self.assertLen(d_grads, len(discriminator.trainable_variables))

    def test_simultaneous_accepts_batch_norm(self):
        discriminator = tu.tiny_discriminator(extra=[keras.layers.BatchNormalization()])
        d_grads, g_grads = self._call(discriminator, form="simultaneous")
        self.assertTrue(all(np.all(np.isfinite(g)) for g in list(d_grads) + list(g_grads)))


if __name__ == "__main__":
    tf.test.main()
