"""Adaptive augmentation: the controller's rule, and its probability through `FusedPropGAN`'s
training (rises on a D that memorises, stays at 0 on one that cannot, resumes exactly, agrees
across replicas)."""

import contextlib
import io
import os

import keras
import numpy as np

import tf_fusedprop as fp
from tests import testing_utils as tu
from tf_fusedprop import layers as fp_layers
from tf_fusedprop.augment_probability import AdaptiveProbability


class ControllerTest(tu.TestCase):
    def test_p_moves_by_the_sign_of_the_rate_every_interval_within_0_and_1(self):
        controller = AdaptiveProbability(target=0.6, interval=2, ramp_images=100)
        p, sign_sum, seen = controller.attach()
        controller.observe(8.0, 8.0, step=1)  # not due: gathered
        self.assertEqual((float(p.numpy()), float(sign_sum.numpy()), float(seen.numpy())), (0.0, 8.0, 8.0))
        controller.observe(8.0, 8.0, step=2)  # rate 1 > 0.6: up by the 16 samples of the interval
        self.assertAllClose((p.numpy(), sign_sum.numpy(), seen.numpy()), (0.16, 0.0, 0.0))
        controller.observe(-8.0, 8.0, step=3)
        controller.observe(0.0, 8.0, step=4)  # rate -0.5: down by 16 / 100
        self.assertAllClose(p.numpy(), 0.0)
        controller.observe(-8.0, 8.0, step=5)
        controller.observe(-8.0, 8.0, step=6)
        self.assertEqual(float(p.numpy()), 0.0)  # never below 0
        for step in range(7, 27):
            controller.observe(8.0, 8.0, step=step)
        self.assertEqual(float(p.numpy()), 1.0)  # nor above 1

    def test_with_held_out_images_p_follows_how_d_orders_real_and_held_out_samples(self):
        discriminator = _pixel_sum_discriminator()
        held_out = -np.ones((3,) + tu.IMAGE, "float32")
        controller = AdaptiveProbability(target=0.6, interval=2, ramp_images=100, held_out=held_out)
        p, _, seen, images = controller.attach(tu.IMAGE)
        self.assertAllEqual(images, held_out)
        above = np.ones((4,) + tu.IMAGE, "float32")  # every real sample above every held-out one
        self.assertEqual(float(controller.observe(0.0, 4.0, 1, discriminator, above)), 0.0)  # not due
        self.assertEqual(float(seen.numpy()), 4.0)
        # Due: 12 of 12 pairs ordered, 1 > 0.6: up by the 8 samples of the interval (the signs,
        # here 0, are not what it follows).
        self.assertEqual(float(controller.observe(0.0, 4.0, 2, discriminator, above)), 1.0)
        self.assertAllClose(p.numpy(), 0.08)
        # The same samples as the held-out ones: every pair a tie, 0.5 < 0.6, down.
        controller.observe(0.0, 4.0, 3, discriminator, held_out[:2])
        self.assertEqual(float(controller.observe(0.0, 4.0, 4, discriminator, held_out[:2])), 0.5)
        self.assertAllClose(p.numpy(), 0.0)

    def test_many_held_out_images_are_scored_in_chunks_as_in_one(self):
        rng = np.random.default_rng(4)
        held_out = rng.normal(size=(130,) + tu.IMAGE).astype("float32")  # three chunks of at most 64
        real = rng.normal(size=(5,) + tu.IMAGE).astype("float32")
        controller = AdaptiveProbability(interval=1, held_out=held_out)
        controller.attach(tu.IMAGE)
        measured = float(controller.observe(0.0, 5.0, 1, _pixel_sum_discriminator(), real))
        sums = lambda x: x.reshape(len(x), -1).sum(axis=1)  # noqa: E731
        expected = np.mean(sums(real)[:, None] > sums(held_out)[None, :])
        self.assertAllClose(measured, expected, atol=1e-6)

    def test_held_out_images_are_checked_in_one_line(self):
        with self.assertRaisesRegex(ValueError, r"^DiffAugment's held_out must be None, a positive number"):
            fp.DiffAugment("translation", p="auto", held_out=0)
        with self.assertRaisesRegex(ValueError, r"^DiffAugment's held_out is the signal of an adaptive p"):
            fp.DiffAugment("translation", held_out=4)
        with self.assertRaisesRegex(ValueError, r"^DiffAugment's held_out images must be samples as D takes them"):
            _gan(fp.DiffAugment("translation", p="auto", held_out=np.zeros((2, 3, 3, 1), "float32")))

    def test_one_controller_per_model(self):
        controller = AdaptiveProbability()
        controller.attach()
        with self.assertRaisesRegex(ValueError, "already belongs to a model; pass a new DiffAugment"):
            controller.attach()


def _pixel_sum_discriminator():
    """D(x) = the sum of x's pixels: fixed (SGD(0) keeps it), so the signs and orders are known."""
    return keras.Sequential(
        [keras.Input(tu.IMAGE), keras.layers.Flatten(), fp_layers.Dense(1, kernel_initializer="ones")]
    )


def _fixed_gan(augment):
    """A GAN whose players never change (SGD(0)), D the pixel sum: its signals are known."""
    gan = fp.FusedPropGAN(tu.tiny_generator(batch_norm=False), _pixel_sum_discriminator(), seed=1, augment=augment)
    gan.compile(d_optimizer=keras.optimizers.SGD(0.0), g_optimizer=keras.optimizers.SGD(0.0))
    return gan


def _gan(augment, g_lr=1e-2, batch_norm=True, **arguments):
    keras.utils.set_random_seed(0)
    gan = fp.FusedPropGAN(
        tu.tiny_generator(batch_norm=batch_norm), tu.tiny_discriminator(), seed=3, augment=augment, **arguments
    )
    gan.compile(d_optimizer=keras.optimizers.Adam(1e-2), g_optimizer=keras.optimizers.Adam(g_lr))
    return gan


def _fit(gan, x, epochs, initial_epoch=0, batch_size=8):
    with contextlib.redirect_stdout(io.StringIO()):
        return gan.fit(x, batch_size=batch_size, epochs=epochs, initial_epoch=initial_epoch, shuffle=False, verbose=0)


class TrainingTest(tu.TestCase):
    def test_p_rises_on_a_d_that_memorises_and_stays_at_0_on_one_that_cannot(self):
        rng = np.random.default_rng(0)

        def frozen_g():  # G does not learn (and has no batch statistics): only the data differ
            return _gan(fp.DiffAugment("translation", p="auto", interval=1, ramp_images=400), 0.0, batch_norm=False)

        # D memorises 8 fixed images (every step's batch).
        memorised = frozen_g()
        history = _fit(memorised, np.tile(rng.uniform(-1, 1, (8,) + tu.IMAGE).astype("float32"), (10, 1, 1, 1)), 6)
        self.assertGreater(history.history["real_sign"][-1], 0.6)
        self.assertGreater(float(memorised.augment.p), 0.5)
        # The real samples are fresh draws of G itself: D cannot tell them from G's, so its signs
        # on them stay below the target and p never leaves 0.
        cannot = frozen_g()
        real = cannot.generator(rng.normal(size=(480, tu.LATENT)).astype("float32")).numpy()
        history = _fit(cannot, real, 1)
        self.assertLess(history.history["real_sign"][0], 0.6)
        self.assertEqual(history.history["augment_p"], [0.0])

    def test_a_resumed_run_continues_p_exactly(self):
        def build():
            return _gan(
                fp.DiffAugment("translation,cutout", p="auto", target=0.2, interval=1, ramp_images=48),
                form="fused",
                iter_size=2,
                regularizers=[fp.R1(0.1, every=2)],
                ema=fp.EMA(0.9),
            )

        x = np.random.default_rng(1).uniform(-1, 1, (16,) + tu.IMAGE).astype("float32")
        straight = build()
        ps = _fit(straight, x, 6).history["augment_p"]
        self.assertGreater(ps[1], 0.0)  # p at the save below
        self.assertGreater(len(set(ps[2:])), 1)  # and it changes after
        first = build()
        _fit(first, x, 2)
        path = os.path.join(self.get_temp_dir(), "gan.keras")
        first.save(path)
        resumed = keras.models.load_model(path)
        self.assertEqual(float(resumed.augment.p), ps[1])
        self.assertEqual(_fit(resumed, x, 6, initial_epoch=2).history["augment_p"], ps[2:])
        for a, b in zip(resumed.variables, straight.variables, strict=True):
            self.assertAllEqual(a, b)

    def test_held_out_images_steer_p_through_fit_and_are_saved_with_the_model(self):
        rng = np.random.default_rng(2)
        held_out = rng.uniform(-1, 0, (6,) + tu.IMAGE).astype("float32")

        def build():
            return _fixed_gan(fp.DiffAugment("cutout", p="auto", interval=2, ramp_images=160, held_out=held_out))

        above = rng.uniform(0, 1, (32,) + tu.IMAGE).astype("float32")  # D orders every pair
        gan = build()
        history = _fit(gan, above, 2).history
        # 4 batches of 8 an epoch: adjustments after updates 2 and 4, each up by 16 / 160.
        self.assertAllClose(history["augment_p"], [0.2, 0.4])
        self.assertEqual(history["real_above_held_out"], [1.0, 1.0])
        path = os.path.join(self.get_temp_dir(), "gan.keras")
        gan.save(path)
        resumed = keras.models.load_model(path)
        self.assertEqual(resumed.augment.adaptive.held_out, 6)
        self.assertAllEqual(resumed.augment_state[3], held_out)
        self.assertAllClose(float(resumed.augment.p), 0.4)
        # Real samples drawn as the held-out ones: D orders about half of the pairs, below 0.6.
        alike = build()
        history = _fit(alike, rng.uniform(-1, 0, (32,) + tu.IMAGE).astype("float32"), 1).history
        self.assertLess(abs(history["real_above_held_out"][0] - 0.5), 0.1)
        self.assertEqual(history["augment_p"], [0.0])

    def test_replicas_hold_the_p_of_the_global_batch(self):
        def run(x, held_out=None):
            with tu.two_cpu_strategy().scope():
                gan = _fixed_gan(fp.DiffAugment("", p="auto", interval=1, ramp_images=100, held_out=held_out))
            _fit(gan, x, 1)
            return [
                float(v.numpy()) for v in tu.two_cpu_strategy().experimental_local_results(gan.augment_state[0].value)
            ]

        positive, negative = np.ones((4,) + tu.IMAGE, "float32"), -np.ones((4,) + tu.IMAGE, "float32")
        # All positive: up by the 8 samples of both replicas, not the 4 of one.
        self.assertAllClose(run(np.concatenate([positive, positive])), [0.08, 0.08])
        # One replica's half positive, the other's negative: the rate of the whole batch is 0.
        self.assertEqual(run(np.concatenate([positive, negative])), [0.0, 0.0])
        # Held out at 0: one replica's reals all above (1 > 0.6), the other's all below; the
        # order of the whole batch's pairs is 0.5, so p stays at 0.
        zero = np.zeros((2,) + tu.IMAGE, "float32")
        self.assertEqual(run(np.concatenate([positive, negative]), zero), [0.0, 0.0])
        self.assertAllClose(run(np.concatenate([positive, positive]), zero), [0.08, 0.08])
