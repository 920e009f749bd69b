"""Tests for tf_fusedprop.networks: shapes, ranges, discriminator checks, exact single-pass forms."""

import inspect
import os

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from tests import testing_utils as tu
from tf_fusedprop import compute_gradients, forms, networks
from tf_fusedprop import layers as fp_layers
from tf_fusedprop.networks import conditional

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

    def test_at_32_px_the_networks_are_sngans_and_their_parameter_counts_unchanged(self):
        self.assertEqual(networks.sngan.bottom_of(32), 4)
        # Counted before the networks followed the resolution (spectral norm's u vectors included).
        counts = [make().count_params() for make in networks.get("sngan_cnn") + networks.get("sngan_resnet")]
        self.assertEqual(counts, [3_815_299, 2_937_282, 4_280_323, 1_055_106])
        self.assertEqual(networks.cnn_generator(image_size=32).count_params(), 3_815_299)

    @parameterized.parameters((48, 6, 3), (64, 4, 4), (128, 4, 5), (256, 4, 6))
    def test_one_block_per_octave(self, size, bottom, blocks):
        self.assertEqual((networks.sngan.bottom_of(size), networks.sngan.octaves(size, bottom)), (bottom, blocks))
        for make_g, make_d in (
            (networks.cnn_generator, networks.cnn_discriminator),
            (networks.resnet_generator, networks.resnet_discriminator),
        ):
            g = make_g(latent_dim=8, width=16, channels=1, bottom=bottom, image_size=size)
            d = make_d(input_shape=(size, size, 1), width=4, bottom=bottom)
            images = g(tf.random.normal([2, 8]), training=False)
            self.assertEqual(images.shape, (2, size, size, 1))
            self.assertEqual(d(images, training=False).shape, (2, 1))
            sides = lambda model: sorted(
                {layer.output.shape[1] for layer in model.layers if len(layer.output.shape) == 4}
            )
            self.assertEqual(sides(g), [bottom * 2**k for k in range(blocks + 1)], make_g.__name__)
            # D: down to bottom (CNN), or to twice bottom and two blocks more (ResNet, as SNGAN's 8x8 at 32 px)
            lowest = bottom if make_d is networks.cnn_discriminator else 2 * bottom
            self.assertEqual(sides(d)[0], lowest, make_d.__name__)
            self.assertEqual(sides(d)[-1], size, make_d.__name__)
        forms.get("inverse").check_discriminator(
            networks.cnn_discriminator(input_shape=(size, size, 1), width=4, bottom=bottom)
        )

    def test_an_image_side_not_bottom_times_a_power_of_two_is_refused(self):
        with self.assertRaisesRegex(ValueError, r"bottom \* 2\*\*k \(k >= 1\). Received: image_size=40, bottom=6"):
            networks.cnn_generator(bottom=6, image_size=40)
        with self.assertRaisesRegex(ValueError, r"Received: image_size=40, bottom=6"):
            networks.cnn_discriminator(input_shape=(40, 40, 3), bottom=6)

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
            forms.get(form).check_discriminator(discriminator)

    def test_plain_keras_dense_in_discriminator_is_refused(self):
        inputs = keras.Input((2,))
        x = fp_layers.Dense(4)(inputs)
        x = keras.layers.Dense(1)(x)
        with self.assertRaisesRegex(ValueError, "InvFusedProp-capable"):
            forms.get("inverse").check_discriminator(keras.Model(inputs, x))

    @parameterized.product(name=networks.names(), form_sn=[("inverse", True), ("inverse", False), ("adaptive", False)])
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


CONDITIONAL = {
    "sngan_cnn": (dict(latent_dim=8, width=8, bottom=1), dict(input_shape=(8, 8, 3), width=4), (8, 8, 3)),
    "sngan_resnet": (dict(latent_dim=8, width=8, bottom=1), dict(input_shape=(8, 8, 3), width=8), (8, 8, 3)),
    "digits": (dict(latent_dim=8, width=4), dict(width=4), (16, 16, 1)),
}


class ConditionalTest(tu.TestCase):
    """Every image network family has a class-conditional G and a projection D."""

    @parameterized.parameters(*[(name,) for name in CONDITIONAL])
    def test_shapes_and_label_dependence(self, name):
        keras.utils.set_random_seed(0)
        g_fn, d_fn = networks.get(name)
        g_kwargs, d_kwargs, shape = CONDITIONAL[name]
        generator, discriminator = g_fn(**g_kwargs, num_classes=5), d_fn(**d_kwargs, num_classes=5)
        self.assertEqual([i.shape for i in generator.inputs], [(None, 8), (None,)])
        z = tf.random.normal([3, 8])
        images = generator([z, tf.constant([0, 1, 4])], training=False)
        self.assertEqual(images.shape, (3,) + shape)
        logits = discriminator([images, tf.constant([0, 1, 4])], training=False)
        self.assertEqual(logits.shape, (3, 1))
        # the projection head makes D's logit depend on the label, its embedding being trained:
        head = [layer for layer in discriminator.layers if isinstance(layer, fp_layers.Embedding)][0]
        head.embeddings.assign(tf.random.normal(head.embeddings.shape))
        other = discriminator([images, tf.constant([2, 3, 0])], training=False)
        self.assertNotAllClose(other, discriminator([images, tf.constant([0, 1, 4])], training=False))
        for form in ("fused", "inverse", "adaptive"):
            forms.get(form).check_discriminator(discriminator)

    def test_conditional_batch_norm_scales_and_shifts_per_class(self):
        layer = conditional.ConditionalBatchNormalization(3)
        x = tf.random.normal([4, 2, 2, 5])
        labels = tf.constant([0, 1, 2, 1])
        out = layer([x, labels], training=True)
        normalised = (x - tf.reduce_mean(x, [0, 1, 2])) / tf.sqrt(tf.math.reduce_variance(x, [0, 1, 2]) + 1e-3)
        self.assertAllClose(out, normalised, atol=1e-4)  # gamma 1, beta 0 at first
        layer.gamma.embeddings.assign(tf.reshape(tf.range(15, dtype=tf.float32), [3, 5]))
        layer.beta.embeddings.assign(tf.ones([3, 5]))
        out = layer([x, labels], training=True)
        gamma = tf.gather(layer.gamma.embeddings, labels)[:, None, None, :]
        self.assertAllClose(out, normalised * gamma + 1.0, atol=1e-3)

    def test_conditional_models_save_and_reload(self):
        generator, discriminator = tu.tiny_conditional_pair(num_classes=4, spectral_norm=True)
        for model in (generator, discriminator):
            path = os.path.join(self.get_temp_dir(), f"{model.name}.keras")
            model.save(path)
            loaded = keras.models.load_model(path)
            inputs = [tf.random.normal([2] + list(model.inputs[0].shape[1:])), tf.constant([3, 1])]
            self.assertAllClose(loaded(inputs, training=False), model(inputs, training=False), atol=1e-6)


class FactsTest(tu.TestCase):
    def test_every_network_states_its_facts_and_they_match_its_builders(self):
        for name in networks.names():
            facts = networks.facts(name)
            self.assertEqual(networks.get(name), (facts.generator, facts.discriminator))
            for builder in (facts.generator, facts.discriminator):
                takes_classes = "num_classes" in inspect.signature(builder).parameters
                self.assertEqual(takes_classes, facts.conditional, f"{name}: {builder.__name__}")
            shape = (2 * facts.size_multiple, 2 * facts.size_multiple, 3) if facts.image else (2,)
            for builder, arguments in zip((facts.generator, facts.discriminator), facts.inputs(shape)):
                self.assertLessEqual(set(arguments), set(inspect.signature(builder).parameters), name)
        with self.assertRaisesRegex(ValueError, "Unknown network.*Valid"):
            networks.facts("vgg")


if __name__ == "__main__":
    tf.test.main()
