"""Tests for tf_fusedprop.networks: shapes, ranges, discriminator checks, exact single-pass forms."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests import testing_utils
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


def test_full_size_sngan_cnn_shapes():
    generator, discriminator = networks.cnn_generator(), networks.cnn_discriminator()
    images = generator(tf.random.normal([2, 128]), training=False)
    assert images.shape == (2, 32, 32, 3)
    assert np.all(np.abs(images) <= 1)
    assert discriminator(images, training=False).shape == (2, 1)


@pytest.mark.parametrize("name", networks.names())
def test_tiny_shapes_ranges_and_names(name):
    generator, discriminator = tiny_pair(name)
    real, z = batch(name, generator)
    fake = generator(10 * z, training=True)
    assert (generator.name, discriminator.name) == ("generator", "discriminator")
    assert fake.shape == real.shape
    assert np.all(np.abs(fake) <= 1)
    logits = discriminator(tf.concat([real, fake], 0), training=True)
    assert logits.shape == (8, 1)
    assert np.all(np.isfinite(logits))


@pytest.mark.parametrize("name", networks.names())
def test_discriminators_support_every_form(name):
    _, discriminator = tiny_pair(name)
    for form in ("fused", "inverse", "adaptive"):
        check_discriminator(discriminator, form)


def test_plain_keras_dense_in_discriminator_is_refused():
    inputs = keras.Input((2,))
    x = fp_layers.Dense(4)(inputs)
    x = keras.layers.Dense(1)(x)
    with pytest.raises(ValueError, match="InvFusedProp-capable"):
        check_discriminator(keras.Model(inputs, x), "inverse")


def spread_logits(discriminator, x, std=3.0):
    """Rescales D's last (linear) Dense so that its logits on `x` have standard deviation `std`."""
    last = discriminator.layers[-1]
    factor = std / np.std(discriminator(x, training=False))
    for weight in last.trainable_weights:
        weight.assign(weight * factor)


@pytest.mark.parametrize("name", networks.names())
@pytest.mark.parametrize("form,spectral_norm", [("inverse", True), ("inverse", False), ("adaptive", False)])
def test_single_pass_forms_match_simultaneous(name, form, spectral_norm):
    generator, discriminator = tiny_pair(name, spectral_norm)
    real, z = batch(name, generator)
    if not spectral_norm:  # logits of several units make the per-sample factors differ widely
        spread_logits(discriminator, generator(z, training=True))
    state = testing_utils.StateSnapshot(generator, discriminator)
    expected = compute_gradients(generator, discriminator, real, z, "nonsaturating", "simultaneous")
    state.restore()
    actual = compute_gradients(generator, discriminator, real, z, "nonsaturating", form)
    for a, e in zip(actual, expected):
        assert len(a) == len(e) > 0
        assert testing_utils.max_relative_difference(a, e) < 1e-5


@pytest.mark.parametrize("dtype,sample_dtype", [("float64", tf.float64), ("mixed_bfloat16", tf.bfloat16)])
def test_dtype_pass_through(dtype, sample_dtype):
    generator, discriminator = tiny_pair("sngan_cnn", dtype=dtype)
    real, z = batch("sngan_cnn", generator, dtype=generator.input.dtype)
    fake = generator(z, training=True)
    assert fake.dtype == sample_dtype
    assert discriminator(fake, training=True).dtype == generator.input.dtype
    d_grads, g_grads = compute_gradients(generator, discriminator, real, z, "nonsaturating", "inverse")
    assert all(np.all(np.isfinite(g)) for g in d_grads + g_grads)


def test_resnet_discriminator_from_config_computes_the_same():
    _, discriminator = tiny_pair("sngan_resnet")
    clone = keras.Model.from_config(discriminator.get_config())
    clone.set_weights(discriminator.get_weights())
    x = tf.random.normal([3, 8, 8, 3])
    np.testing.assert_allclose(clone(x), discriminator(x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("builder,kwargs", [
    (networks.cnn_generator, dict(width=12)),
    (networks.digits_generator, dict(image_size=10)),
    (networks.digits_discriminator, dict(image_size=10)),
])
def test_invalid_sizes_are_refused(builder, kwargs):
    with pytest.raises(ValueError, match="Received"):
        builder(**kwargs)


@pytest.mark.parametrize("name", ["sngan", "", None])
def test_unknown_network_name(name):
    with pytest.raises(ValueError, match="Valid names: sngan_cnn, sngan_resnet, digits, mlp"):
        networks.get(name)
