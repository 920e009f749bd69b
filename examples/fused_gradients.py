"""Shows that every FusedProp form gives the two-pass SimGD gradients, on a small conv GAN.

    python examples/fused_gradients.py

Prints, per (loss, form), the largest gradient difference to the two-pass reference
(`form="simultaneous"` with the same options), relative to the largest gradient, in float32
and float64: plain, and with everything a step can add at once (class labels through a
conditional G and a projection D, DiffAugment, R1 and WGAN-GP penalties).
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tf_fusedprop as fp  # noqa: E402  (first: it loads TensorFlow without TensorFlow's start-up lines)

# isort: split
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tf_fusedprop import networks  # noqa: E402
from tf_fusedprop.augment import DiffAugment  # noqa: E402


def make_pair(dtype):
    keras.utils.set_random_seed(0)
    generator = keras.Sequential(
        [
            keras.Input((8,), dtype=dtype),
            keras.layers.Dense(64, dtype=dtype),
            keras.layers.BatchNormalization(dtype=dtype),
            keras.layers.ReLU(dtype=dtype),
            keras.layers.Dense(8 * 8 * 3, activation="tanh", dtype=dtype),
            keras.layers.Reshape((8, 8, 3), dtype=dtype),
        ]
    )
    discriminator = keras.Sequential(
        [
            keras.Input((8, 8, 3), dtype=dtype),
            fp.layers.Conv2D(16, 3, strides=2, padding="same", spectral_norm=True, dtype=dtype),
            keras.layers.LeakyReLU(0.1, dtype=dtype),
            keras.layers.Flatten(dtype=dtype),
            fp.layers.Dense(1, spectral_norm=True, dtype=dtype),
        ]
    )
    return generator, discriminator


def make_conditional_pair(dtype):
    """The digits networks at 8x8: class-conditional BatchNorm in G, a projection D."""
    keras.utils.set_random_seed(0)
    size = dict(image_size=8, width=8, num_classes=4, dtype=None if dtype == "float32" else dtype)
    return networks.digits_generator(latent_dim=8, **size), networks.digits_discriminator(**size)


def inputs(everything, dtype):
    """A batch of 16 real images and latents, and with `everything` the step's options."""
    rng = np.random.default_rng(1)
    channels = 1 if everything else 3
    real = tf.constant(rng.uniform(-1, 1, (16, 8, 8, channels)), dtype)
    z = tf.constant(rng.normal(size=(16, 8)), dtype)
    options = {}
    if everything:
        labels = tf.constant(rng.integers(0, 4, (2, 16)), tf.int32)
        options = dict(
            real_labels=labels[0],
            fake_labels=labels[1],
            seed=[1, 2],
            augment=DiffAugment("color,translation,cutout").bind(tf.constant([3, 4], tf.int64)),
            regularizers=(fp.regularizers.R1(1.0), fp.regularizers.GradientPenalty(10.0)),
        )
    return real, z, options


def relative_differences(generator, discriminator, loss, forms, everything, dtype):
    """Per form, the largest difference of its gradients to the two-pass reference's, relative to
    the largest reference gradient; every pass starts from the same D state (spectral-norm u)."""
    real, z, options = inputs(everything, dtype)
    state = [v.numpy() for v in discriminator.non_trainable_variables]
    reference = fp.compute_gradients(generator, discriminator, real, z, loss, "simultaneous", **options)
    expected = list(reference[0]) + list(reference[1])
    scale = max(float(tf.reduce_max(tf.abs(g))) for g in expected)
    differences = []
    for form in forms:
        for v, s in zip(discriminator.non_trainable_variables, state):
            v.assign(s)
        fused = fp.compute_gradients(generator, discriminator, real, z, loss, form, **options)
        diff = max(float(tf.reduce_max(tf.abs(a - b))) for a, b in zip(list(fused[0]) + list(fused[1]), expected))
        differences.append(diff / scale)
    return differences


def main():
    print(
        f"{'loss':<14} {'form':<9} {'float32':>10} {'float64':>10}   with labels, DiffAugment, R1, GP: {'float32':>8} {'float64':>8}"
    )
    # Built once: no row trains, and each comparison restores D's state before its second pass.
    pairs = [
        (everything, dtype, make(dtype))
        for everything, make in ((False, make_pair), (True, make_conditional_pair))
        for dtype in ("float32", "float64")
    ]
    for loss in fp.losses.names():
        forms = [form for form in ("fused", "inverse", "adaptive") if fp.forms.supports(loss, form)]
        # The reference is computed once per loss and pair, for all its forms.
        columns = [
            relative_differences(generator, discriminator, loss, forms, everything, dtype)
            for everything, dtype, (generator, discriminator) in pairs
        ]
        for form, row in zip(forms, zip(*columns)):
            print(f"{loss:<14} {form:<9} {row[0]:>10.1e} {row[1]:>10.1e}   {'':>34} {row[2]:>8.1e} {row[3]:>8.1e}")


if __name__ == "__main__":
    main()
