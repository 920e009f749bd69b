"""Tests for tf_fusedprop.networks: shapes, ranges, discriminator checks, exact single-pass forms."""

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from tests import testing_utils as tu
from tf_fusedprop import compute_gradients, networks
from tf_fusedprop import layers as fp_layers
from tf_fusedprop.steps import check_discriminator

# name -> (generator kwargs, discriminator kwargs, sample shape): tiny versions of every network.
TINY = {
    "sngan_cnn": (dict(latent_dim=8, width=8, bottom=1), dict(input_shape=(8, 8, 3), width=4), (8, 8, 3)),
    "sngan_resnet": (dict(latent_dim=8, width=8, bottom=1), dict(input_shape=(8, 8, 3), width=8), (8, 8, 3)),
    "digits": (dict(latent_dim=8, width=4), dict(width=4), (16, 16, 1)),
    "mlp": (dict(latent_dim=2, units=16), dict(units=16), (2,)),
}


def tiny_pair(name, spectral_norm=True, dtype=None, seed=0):
    keras.utils.set_random_seed(seed)
    generator_fn, discriminator_fn = networks.get(name)
    g_kwargs, d_kwargs, _ = TINY[name]
    return (
        generator_fn(**g_kwargs, dtype=dtype),
        discriminator_fn(**d_kwargs, spectral_norm=spectral_norm, dtype=dtype),
    )


def batch(name, generator, n=4, seed=1, dtype="float32"):
    rng = np.random.default_rng(seed)
    real = rng.uniform(-1, 1, size=(n,) + TINY[name][2]).astype(dtype)
    z = rng.normal(size=(n, generator.input_shape[-1])).astype(dtype)
    return tf.constant(real), tf.constant(z)


def spread_logits(discriminator, x, std=3.0):
    """Rescales D's last (linear) Dense so that its logits on `x` have standard deviation `std`."""
    last = discriminator.layers[-1]
    factor = std / np.std(discriminator(x, training=False))
    for weight in last.trainable_weights:
        weight.assign(weight * factor)


NAMES = [(name,) for name in networks.names()]


class ShapesTest(tu.TestCase):
    def test_full_size_sngan_cnn_shapes(self):
        generator, discriminator = networks.cnn_generator(), networks.cnn_discriminator()
        images = generator(tf.random.normal([2, 128]), training=False)
        self.assertEqual(images.shape, (2, 32, 32, 3))
        self.assertTrue(np.all(np.abs(images) <= 1))
        self.assertEqual(discriminator(images, training=False).shape, (2, 1))

    @parameterized.parameters(*NAMES)
    def test_tiny_shapes_ranges_and_names(self, name):
        generator, discriminator = tiny_pair(name)
        real, z = batch(name, generator)
        fake = generator(10 * z, training=True)
        self.assertEqual((generator.name, discriminator.name), ("generator", "discriminator"))
        self.assertEqual(fake.shape, real.shape)
        self.assertTrue(np.all(np.abs(fake) <= 1))
        logits = discriminator(tf.concat([real, fake], 0), training=True)
        self.assertEqual(logits.shape, (8, 1))
        self.assertTrue(np.all(np.isfinite(logits)))

    @parameterized.parameters(
        (networks.cnn_generator, dict(width=12)),
        (networks.digits_generator, dict(image_size=10)),
        (networks.digits_discriminator, dict(image_size=10)),
    )
    def test_invalid_sizes_are_refused(self, builder, kwargs):
        with self.assertRaisesRegex(ValueError, "Received"):
            builder(**kwargs)

    @parameterized.parameters("sngan", "", None)
    def test_unknown_network_name(self, name):
        with self.assertRaisesRegex(ValueError, "Valid names: sngan_cnn, sngan_resnet, digits, mlp"):
            networks.get(name)

    def test_resnet_discriminator_from_config_computes_the_same(self):
        _, discriminator = tiny_pair("sngan_resnet")
        clone = keras.Model.from_config(discriminator.get_config())
        clone.set_weights(discriminator.get_weights())
        x = tf.random.normal([3, 8, 8, 3])
        self.assertAllClose(clone(x), discriminator(x), rtol=1e-6, atol=1e-6)


class FormsTest(tu.TestCase):
    @parameterized.parameters(*NAMES)
    def test_discriminators_support_every_form(self, name):
        _, discriminator = tiny_pair(name)
        for form in ("fused", "inverse", "adaptive"):
            check_discriminator(discriminator, form)

    def test_plain_keras_dense_in_discriminator_is_refused(self):
        inputs = keras.Input((2,))
        x = fp_layers.Dense(4)(inputs)
        x = keras.layers.Dense(1)(x)
        with self.assertRaisesRegex(ValueError, "InvFusedProp-capable"):
            check_discriminator(keras.Model(inputs, x), "inverse")

    @parameterized.product(
        name=networks.names(), form_sn=[("inverse", True), ("inverse", False), ("adaptive", False)]
    )
    def test_single_pass_forms_match_simultaneous(self, name, form_sn):
        form, spectral_norm = form_sn
        generator, discriminator = tiny_pair(name, spectral_norm)
        real, z = batch(name, generator)
        if not spectral_norm:  # logits of several units make the per-sample factors differ widely
            spread_logits(discriminator, generator(z, training=True))
        state = tu.StateSnapshot(generator, discriminator)
        expected = compute_gradients(generator, discriminator, real, z, "nonsaturating", "simultaneous")
        state.restore()
        actual = compute_gradients(generator, discriminator, real, z, "nonsaturating", form)
        for a, e in zip(actual, expected):
            self.assertEqual(len(a), len(e))
            self.assertNotEmpty(a)
            self.assertLess(tu.max_relative_difference(a, e), 1e-5)

    @parameterized.parameters(("float64", tf.float64), ("mixed_bfloat16", tf.bfloat16))
    def test_dtype_pass_through(self, dtype, sample_dtype):
        generator, discriminator = tiny_pair("sngan_cnn", dtype=dtype)
        real, z = batch("sngan_cnn", generator, dtype=generator.input.dtype)
        fake = generator(z, training=True)
        self.assertEqual(fake.dtype, sample_dtype)
        self.assertEqual(discriminator(fake, training=True).dtype, generator.input.dtype)
        d_grads, g_grads = compute_gradients(generator, discriminator, real, z, "nonsaturating", "inverse")
        self.assertTrue(all(np.all(np.isfinite(g)) for g in d_grads + g_grads))

    def test_variable_dtype(self):
        self.assertEqual(networks.variable_dtype("mixed_bfloat16"), "float32")
        self.assertEqual(networks.variable_dtype("float64"), "float64")
