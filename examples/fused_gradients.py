"""Shows that every FusedProp form gives the two-pass SimGD gradients, on a small conv GAN.

    python examples/fused_gradients.py

Prints, per (loss, form), the largest gradient difference to the two-pass reference,
relative to the largest gradient, in float32 and float64.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import tf_fusedprop as fp  # noqa: E402


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


def main():
    print(f"{'loss':<14} {'form':<9} {'float32':>10} {'float64':>10}")
    for loss in fp.losses.names():
        for form in ("fused", "inverse", "adaptive"):
            if not fp.steps.supports(loss, form):
                continue
            row = []
            for dtype in ("float32", "float64"):
                generator, discriminator = make_pair(dtype)
                rng = np.random.default_rng(1)
                real = tf.constant(rng.uniform(-1, 1, (16, 8, 8, 3)), dtype)
                z = tf.constant(rng.normal(size=(16, 8)), dtype)
                state = [v.numpy() for v in discriminator.non_trainable_variables]
                reference = fp.compute_gradients(generator, discriminator, real, z, loss, "simultaneous")
                for v, s in zip(discriminator.non_trainable_variables, state):
                    v.assign(s)
                fused = fp.compute_gradients(generator, discriminator, real, z, loss, form)
                expected = list(reference[0]) + list(reference[1])
                scale = max(float(tf.reduce_max(tf.abs(g))) for g in expected)
                diff = max(
                    float(tf.reduce_max(tf.abs(a - b))) for a, b in zip(list(fused[0]) + list(fused[1]), expected)
                )
                row.append(diff / scale)
            print(f"{loss:<14} {form:<9} {row[0]:>10.1e} {row[1]:>10.1e}")


if __name__ == "__main__":
    main()
