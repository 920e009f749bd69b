"""The stray probe: G's gradient at D's old and updated weights, checked against a hand-computed
SimGD/AltGD pair in float64, and a probed run training exactly as an unprobed one."""

import keras
import numpy as np
import tensorflow as tf

import tf_fusedprop as fp
from tests import testing_utils as tu
from tf_fusedprop.batch import Sampler

LR = 0.1


def make_gan(probe=None, form="fused", dtype="float32", spectral_norm=True, **kwargs):
    keras.utils.set_random_seed(0)
    gan = fp.FusedPropGAN(
        tu.tiny_generator(dtype), tu.tiny_discriminator(dtype, spectral_norm), form=form, seed=3, probe=probe, **kwargs
    )
    gan.compile(d_optimizer=keras.optimizers.SGD(LR), g_optimizer=keras.optimizers.SGD(LR))
    return gan


def flat(tensors):
    return np.concatenate([np.ravel(t) for t in tensors])


def hand_computed_pair(gan, real):
    """G's SimGD gradient (at D's weights before the step) and its AltGD gradient (after D's
    SGD update of the same step), on the step's latents, with D's state as the step leaves it."""
    generator, discriminator = gan.generator, gan.discriminator
    z = tf.cast(Sampler(tu.LATENT, None, 3).batch(real).z, tf.float64)
    before = tu.StateSnapshot(generator, discriminator)
    d_weights = [v.numpy() for v in discriminator.trainable_variables]
    with tf.GradientTape(persistent=True) as tape:
        fake = generator(z, training=True)
        y = tf.reshape(discriminator(tf.concat([real, fake], 0), training=True), [-1])
        y_real, y_fake = y[: len(real)], y[len(real) :]
        d_loss = tf.reduce_mean(tf.nn.softplus(-y_real)) + tf.reduce_mean(tf.nn.softplus(y_fake))
        g_loss = tf.reduce_mean(tf.nn.softplus(-y_fake))
    d_grads = tape.gradient(d_loss, discriminator.trainable_variables)
    g_sim = tape.gradient(g_loss, generator.trainable_variables)
    for variable, grad in zip(discriminator.trainable_variables, d_grads):
        variable.assign_sub(LR * grad)
    with tf.GradientTape() as tape:
        y_fake = tf.reshape(discriminator(generator(z, training=True), training=True), [-1])
        g_loss = tf.reduce_mean(tf.nn.softplus(-y_fake))
    g_alt = tape.gradient(g_loss, generator.trainable_variables)
    before.restore()
    for variable, value in zip(discriminator.trainable_variables, d_weights):
        variable.assign(value)
    return flat(g_sim), flat(g_alt)


class StrayProbeTest(tu.TestCase):
    def test_the_probe_measures_the_hand_computed_simgd_altgd_pair_in_float64(self):
        gan = make_gan(fp.StrayProbe(every=1), dtype="float64")
        real = tf.constant(np.random.default_rng(1).uniform(-1, 1, (6,) + tu.IMAGE))
        g_sim, g_alt = hand_computed_pair(gan, real)
        self.assertGreater(np.linalg.norm(g_alt - g_sim), 1e-3 * np.linalg.norm(g_sim))  # D's update matters
        g_before = flat(v.numpy() for v in gan.generator.trainable_variables)

        logs = gan.fit(tf.data.Dataset.from_tensors(real), epochs=1, verbose=0).history

        self.assertAllClose(logs["stray"][0], np.linalg.norm(g_alt - g_sim) / np.linalg.norm(g_sim), rtol=1e-6)
        cosine = g_alt @ g_sim / np.linalg.norm(g_alt) / np.linalg.norm(g_sim)
        self.assertAllClose(logs["stray_cosine"][0], cosine, rtol=1e-6)
        # G was trained with the simultaneous gradient, not the probe's.
        g_after = flat(v.numpy() for v in gan.generator.trainable_variables)
        self.assertAllClose(g_after, g_before - LR * g_sim, rtol=1e-8, atol=1e-10)

    def test_a_probed_run_trains_exactly_as_an_unprobed_one_with_every_plugin(self):
        """A periodic mix (fused, then alternating every 3rd update), spectral norm, G's
        BatchNorm, seeded augmentation, R1, EMA and two micro-batches: the same weights, state
        and EMA bit for bit; the probe measured the fused updates it was due on."""
        real = tf.data.Dataset.from_tensor_slices(np.random.default_rng(2).uniform(-1, 1, (24,) + tu.IMAGE))
        real = real.map(lambda x: tf.cast(x, tf.float32)).batch(6)
        runs = []
        for probe in (None, fp.StrayProbe(every=2)):
            gan = make_gan(
                probe,
                form=fp.schedules.Periodic("fused", every=3),
                iter_size=2,
                augment=fp.DiffAugment("translation,cutout"),
                regularizers=[fp.R1(1.0, every=2)],
                ema=fp.EMA(0.5),
            )
            gan.compile(d_optimizer=keras.optimizers.Adam(1e-2), g_optimizer=keras.optimizers.Adam(1e-2))
            history = gan.fit(real, epochs=2, verbose=0).history
            runs.append(([v.numpy() for v in gan.variables], history))
        for plain, probed in zip(runs[0][0], runs[1][0]):
            self.assertAllEqual(plain, probed)
        strays = np.array(runs[1][1]["stray"])  # updates 0-3 and 4-7: probed 0; 4 and 6 (2 and 5 alternate)
        self.assertTrue(np.all((strays > 0) & (strays < 10)), strays)
        self.assertNotIn("stray", runs[0][1])

    def test_under_two_replicas_a_probed_run_trains_exactly_as_an_unprobed_one(self):
        data = np.random.default_rng(4).uniform(-1, 1, (32,) + tu.IMAGE).astype("float32")
        runs = []
        for probe in (None, fp.StrayProbe(every=1)):
            with tu.two_cpu_strategy().scope():
                gan = make_gan(probe)
            history = gan.fit(data, batch_size=16, epochs=1, shuffle=False, verbose=0).history
            runs.append(([v.numpy() for v in gan.variables], history))
        for plain, probed in zip(runs[0][0], runs[1][0]):
            self.assertAllEqual(plain, probed)
        self.assertTrue(0 < runs[1][1]["stray"][0] < 10 and 0 < runs[1][1]["stray_cosine"][0] <= 1, runs[1][1])

    def test_arguments_and_config(self):
        with self.assertRaisesRegex(ValueError, "every must be a positive integer. Received: every=0"):
            fp.StrayProbe(every=0)
        with self.assertRaisesRegex(ValueError, r"probe takes tf_fusedprop.StrayProbe objects .*Received: probe=5"):
            make_gan(5)
        probe = fp.StrayProbe(every=7)
        gan = make_gan(probe, spectral_norm=False)
        with self.assertRaisesRegex(ValueError, "already measures another GAN's players"):
            make_gan(probe, spectral_norm=False)
        again = fp.FusedPropGAN.from_config(gan.get_config())
        self.assertEqual(repr(again.probe), "StrayProbe(every=7)")
        # AltGD alone has no simultaneous update to probe: it logs nothing rather than zeros.
        alternating = make_gan(fp.StrayProbe(every=1), form="alternating", spectral_norm=False)
        self.assertNotIn("stray", [m.name for m in alternating.metrics])
        self.assertEqual(repr(fp.FusedPropGAN.from_config(alternating.get_config()).probe), "StrayProbe(every=1)")
