"""Lookahead-minmax: the exact jump with SGD, every form, accumulation, EMA, mixed precision,
saving mid-cycle, and two mirrored replicas against one device."""

import os

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

import tf_fusedprop as fp
from tests import testing_utils as tu
from tf_fusedprop import networks


def images(n, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, (n,) + tu.IMAGE).astype("float32")


def make_gan(form="fused", lookahead=None, iter_size=1, ema=None, batch_norm=False, optimizer=None):
    keras.utils.set_random_seed(0)
    gan = fp.FusedPropGAN(
        tu.tiny_generator(batch_norm=batch_norm),
        tu.tiny_discriminator(),
        loss="least_squares",
        form=form,
        iter_size=iter_size,
        seed=3,
        ema=ema,
        lookahead=lookahead,
    )
    optimizer = optimizer or (lambda: keras.optimizers.SGD(0.05))
    gan.compile(d_optimizer=optimizer(), g_optimizer=optimizer())
    return gan


def weights(gan):
    return [v.numpy() for v in gan.discriminator.trainable_variables + gan.generator.trainable_variables]


class ArgumentsTest(tu.TestCase):
    def test_refusals_and_config(self):
        with self.assertRaisesRegex(ValueError, "every must be a positive integer. Received: every=0"):
            fp.Lookahead(every=0)
        with self.assertRaisesRegex(ValueError, r"alpha must be in \(0, 1\]. Received: alpha=1.5"):
            fp.Lookahead(alpha=1.5)
        lookahead = fp.Lookahead(every=4, alpha=0.25)
        self.assertEqual(fp.Lookahead.from_config(lookahead.get_config()).get_config(), {"every": 4, "alpha": 0.25})
        make_gan(lookahead=lookahead)
        with self.assertRaisesRegex(ValueError, "already follows a model"):
            make_gan(lookahead=lookahead)


class ExactJumpTest(tu.TestCase):
    """With SGD: untouched before step k; after step k, theta0 + alpha * (theta_k - theta0)."""

    @parameterized.product(form=("fused", "alternating", "adaptive"), iter_size=(1, 2))
    def test_the_jump_after_every_k_steps(self, form, iter_size):
        k, alpha = 3, 0.5
        plain, looked = make_gan(form, iter_size=iter_size), make_gan(form, fp.Lookahead(k, alpha), iter_size)
        theta0 = weights(plain)
        for step in range(1, 2 * k + 1):
            batch = tf.constant(images(8, seed=step))
            plain.train_step(batch)
            looked.train_step(batch)  # the same latents: Lookahead draws nothing
            if step < k:
                for a, b in zip(weights(looked), weights(plain)):
                    self.assertAllClose(a, b, rtol=1e-6, atol=1e-7)
            if step == k:
                theta_k = weights(plain)
                jumped = [t0 + alpha * (tk - t0) for t0, tk in zip(theta0, theta_k)]
                for a, want in zip(weights(looked), jumped):
                    self.assertAllClose(a, want, rtol=1e-5, atol=1e-6)
                for slow, want in zip(looked.lookahead_weights, jumped):
                    self.assertAllClose(slow, want, rtol=1e-5, atol=1e-6)
                for variable, value in zip(
                    plain.discriminator.trainable_variables + plain.generator.trainable_variables, jumped
                ):
                    variable.assign(value)  # plain continues from the jumped weights
        # After the second cycle the jump is from the first jump's weights.
        self.assertEqual(int(looked.g_optimizer.iterations), 2 * k)

    def test_a_cycle_starts_from_the_weights_training_starts_from(self):
        looked = make_gan(lookahead=fp.Lookahead(2, 0.5))
        moved = [w + 0.1 for w in weights(looked)]
        for variable, value in zip(
            looked.discriminator.trainable_variables + looked.generator.trainable_variables, moved
        ):
            variable.assign(value)  # e.g. weights loaded after construction
        plain = make_gan()
        for variable, value in zip(
            plain.discriminator.trainable_variables + plain.generator.trainable_variables, moved
        ):
            variable.assign(value)
        for step in (1, 2):
            plain.train_step(tf.constant(images(8, seed=step)))
            looked.train_step(tf.constant(images(8, seed=step)))
        for a, t0, t2 in zip(weights(looked), moved, weights(plain)):
            self.assertAllClose(a, t0 + 0.5 * (t2 - t0), rtol=1e-5, atol=1e-6)

    def test_the_ema_follows_the_jumped_generator(self):
        looked = make_gan(lookahead=fp.Lookahead(2, 0.5), ema=fp.EMA(0.5, start=100))  # start: a copy of G
        for step in (1, 2):
            looked.train_step(tf.constant(images(8, seed=step)))
        for average, value in zip(looked.ema_generator.trainable_variables, looked.generator.trainable_variables):
            self.assertAllClose(average, value)


class TrainingTest(tu.TestCase):
    @parameterized.parameters("fused", "inverse", "simultaneous", "alternating")
    def test_every_form_fits_with_accumulation_and_batch_norm(self, form):
        gan = make_gan(
            form, fp.Lookahead(2, 0.5), iter_size=2, batch_norm=True, optimizer=lambda: keras.optimizers.Adam(1e-3)
        )
        history = gan.fit(images(40), batch_size=8, epochs=1, verbose=0)
        self.assertTrue(all(np.isfinite(v[-1]) for v in history.history.values()))
        self.assertEqual(int(gan.g_optimizer.iterations), 5)
        for slow, fast in zip(gan.lookahead_weights[:2], weights(gan)[:2]):
            self.assertNotAllClose(slow, fast)  # step 5: mid-cycle

    def test_mixed_float16_with_loss_scaling(self):
        keras.utils.set_random_seed(0)
        half = {"dtype": "mixed_float16", "units": 8, "hidden_layers": 1}
        gan = fp.FusedPropGAN(
            networks.mlp_generator(latent_dim=4, output_activation=None, **half),
            networks.mlp_discriminator(**half),
            form="adaptive",
            seed=1,
            lookahead=fp.Lookahead(2, 0.5),
        )
        lso = lambda: keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(1e-3))
        gan.compile(d_optimizer=lso(), g_optimizer=lso())
        gan.fit(np.random.default_rng(0).normal(size=(32, 2)).astype("float32"), batch_size=8, epochs=1, verbose=0)
        self.assertEqual({v.dtype for v in gan.lookahead_weights}, {"float32"})
        self.assertTrue(all(np.all(np.isfinite(w)) for w in weights(gan)))
        self.assertNotAllClose(gan.lookahead_weights[0], np.zeros(gan.lookahead_weights[0].shape))

    def test_saved_mid_cycle_and_resumed_equals_uninterrupted(self):
        data = images(40)
        straight = make_gan(lookahead=fp.Lookahead(3, 0.5))
        straight.fit(data, batch_size=8, epochs=2, shuffle=False, verbose=0)
        first = make_gan(lookahead=fp.Lookahead(3, 0.5))
        first.fit(data, batch_size=8, epochs=1, shuffle=False, verbose=0)  # 5 steps: mid-cycle
        path = os.path.join(self.get_temp_dir(), "gan.weights.h5")
        first.save_weights(path)
        resumed = make_gan(lookahead=fp.Lookahead(3, 0.5))
        resumed.load_weights(path)
        for a, b in zip(resumed.lookahead_weights, first.lookahead_weights):
            self.assertAllEqual(a, b)
        resumed.fit(data, batch_size=8, epochs=1, shuffle=False, verbose=0)
        for a, b in zip(weights(resumed), weights(straight)):
            self.assertAllClose(a, b, rtol=1e-5, atol=1e-6)


class MirroredTest(tu.TestCase):
    def test_two_replicas_train_like_one_device(self):
        data = np.random.default_rng(0).uniform(-1, 1, (48,) + tu.IMAGE).astype("float32")
        results = []
        for strategy in (tf.distribute.get_strategy(), tu.two_cpu_strategy()):
            with strategy.scope():
                keras.utils.set_random_seed(0)
                gan = fp.FusedPropGAN(
                    tu.tiny_generator(batch_norm=False),
                    tu.tiny_discriminator(),
                    form="fused",
                    seed=3,
                    lookahead=fp.Lookahead(2, 0.5),
                )
                gan.compile(d_optimizer=keras.optimizers.Adam(1e-2), g_optimizer=keras.optimizers.Adam(1e-2))
            gan.fit(data, batch_size=16, epochs=1, shuffle=False, verbose=0)
            results.append([v.numpy() for v in gan.trainable_variables] + [v.numpy() for v in gan.lookahead_weights])
        self.assertLess(max(float(np.max(np.abs(a - b))) for a, b in zip(*results)), 1e-5)


if __name__ == "__main__":
    tf.test.main()
