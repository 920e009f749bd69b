"""InvFusedProp layers: plain behaviour outside a scope, spectral norm semantics, config."""

import os
import subprocess
import sys

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

import tf_fusedprop as fp
from tests import testing_utils as tu
from tf_fusedprop import layers, machine, ops

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LAYERS = {
    "dense": (
        lambda **kw: layers.Dense(3, activation="relu", **kw),
        lambda: keras.layers.Dense(3, activation="relu"),
        [4, 5],
    ),
    "conv": (
        lambda **kw: layers.Conv2D(3, 3, strides=2, padding="same", **kw),
        lambda: keras.layers.Conv2D(3, 3, strides=2, padding="same"),
        [4, 6, 6, 2],
    ),
}


def build(layer, shape):
    layer.build(tuple(shape))
    return layer


def fixed_singular_vectors(kernel, u):
    """u, v after one power iteration on reshape(kernel, [-1, out]), as numpy constants."""
    w = kernel.reshape(-1, kernel.shape[-1])
    v = w @ u
    v /= np.linalg.norm(v)
    u = w.T @ v
    return u / np.linalg.norm(u), v


class PlainBehaviourTest(tu.TestCase):
    @parameterized.parameters(*LAYERS)
    def test_equals_keras_layer_outside_a_scope(self, name):
        ours_fn, keras_fn, shape = LAYERS[name]
        ours, theirs = build(ours_fn(), shape), build(keras_fn(), shape)
        theirs.set_weights(ours.get_weights())
        x = tf.random.normal(shape)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            a, b = ours(x), theirs(x)
        self.assertAllClose(a, b)
        for ga, gb in zip(
            tape.gradient(a, [x] + ours.trainable_weights), tape.gradient(b, [x] + theirs.trainable_weights)
        ):
            self.assertAllClose(ga, gb)

    @parameterized.parameters(*LAYERS)
    def test_scaled_path_with_unit_factor_equals_plain(self, name):
        ours_fn, _, shape = LAYERS[name]
        layer = build(ours_fn(), shape)
        x = tf.random.normal(shape)
        with tf.GradientTape() as plain_tape:
            plain_tape.watch(x)
            plain = layer(x)
        with ops.ParameterGradientScaling() as scaling:
            with tf.GradientTape() as tape:
                tape.watch(x)
                scaled = layer(x)
        scaling.set(tf.ones([shape[0]]))
        self.assertAllClose(scaled, plain)
        for ga, gb in zip(
            tape.gradient(scaled, [x] + layer.trainable_weights),
            plain_tape.gradient(plain, [x] + layer.trainable_weights),
        ):
            self.assertAllClose(ga, gb)

    def test_rejects_unsupported_conv_options(self):
        with self.assertRaisesRegex(ValueError, "Received: groups=2"):
            layers.Conv2D(4, 3, groups=2)

    def test_marked_capable(self):
        self.assertTrue(layers.supports_parameter_gradient_scaling(layers.Dense(1)))
        self.assertFalse(layers.supports_parameter_gradient_scaling(keras.layers.Dense(1)))


REMAPPER_SCRIPT = """
import keras, tensorflow as tf
import tf_fusedprop as fp
from tf_fusedprop import layers
from tests import testing_utils as tu
keras.utils.set_random_seed(0)
discriminator = keras.Sequential([
    keras.Input(tu.IMAGE), layers.Conv2D(4, 3, strides=2, padding="same"), {activation}(0.1),
    layers.Conv2D(4, 3, padding="same"), {activation}(0.1), keras.layers.Flatten(), layers.Dense(1),
])
# Plain, and with the penalties that differentiate D twice (R1, WGAN-GP).
for penalty in ({{}}, {{"regularizers": [fp.R1(1.0)]}}, {{"regularizers": [fp.GradientPenalty(10.0)]}}):
    gan = fp.FusedPropGAN(tu.tiny_generator(), discriminator, form="fused", seed=0, **penalty)
    gan.compile(d_optimizer="adam", g_optimizer="adam")
    tf.function(gan.train_step)(tf.random.uniform((8,) + tu.IMAGE, -1, 1))
"""


def dilated_differences():
    """`(dtype, form, difference)` of a D with a dilated, spectrally normalized convolution:
    the inverse forms' gradients against simultaneous descent's, eager and traced, in float32
    and float64."""
    rows = []
    for dtype in ("float32", "float64"):
        keras.utils.set_random_seed(0)
        discriminator = keras.Sequential(
            [
                keras.Input(tu.IMAGE, dtype=dtype),
                layers.Conv2D(4, 3, dilation_rate=2, padding="same", spectral_norm=True, dtype=dtype),
                keras.layers.LeakyReLU(0.1, dtype=dtype),
                keras.layers.Flatten(dtype=dtype),
                layers.Dense(1, dtype=dtype),
            ]
        )
        generator = tu.tiny_generator(dtype)
        real, z = tu.tiny_batch(dtype=dtype)
        state = tu.StateSnapshot(generator, discriminator)
        d_ref, g_ref = fp.compute_gradients(generator, discriminator, real, z, "nonsaturating", "simultaneous")
        for form in ("inverse", "adaptive"):
            for run in (fp.compute_gradients, tf.function(fp.compute_gradients)):
                state.restore()
                d, g = run(generator, discriminator, real, z, "nonsaturating", form)
                rows.append((dtype, form, tu.max_relative_difference(list(d) + list(g), list(d_ref) + list(g_ref))))
    return rows


DILATED_SCRIPT = """
from tests.layers_test import dilated_differences
for row in dilated_differences():
    print("DIFF", *row)
"""


class DilatedConvolutionTest(tu.TestCase):
    """Dilated convolutions are exact under the inverse forms with oneDNN on and off (TF's own
    CPU kernels refuse dilated Conv2DBackpropInput), in float32 and float64."""

    @parameterized.parameters("0", "1")
    def test_exact_with_onednn(self, onednn):
        if onednn == machine.onednn_on():  # this process's setting (tests/conftest.py turns oneDNN on)
            rows = dilated_differences()
        else:  # TensorFlow reads the switch once, at import: the other setting needs a fresh process
            env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": onednn, "TF_CPP_MIN_LOG_LEVEL": "3"}
            result = subprocess.run(
                [sys.executable, "-c", DILATED_SCRIPT], capture_output=True, text=True, cwd=ROOT, env=env
            )
            self.assertEqual(result.returncode, 0, result.stderr[-3000:])
            rows = [line.split()[1:] for line in result.stdout.splitlines() if line.startswith("DIFF")]
        self.assertLen(rows, 8)
        for dtype, form, diff in rows:
            self.assertLess(float(diff), 1e-5 if dtype == "float32" else 1e-10, msg=f"{dtype} {form} oneDNN={onednn}")


class SpectralNormTest(tu.TestCase):
    @parameterized.parameters(*LAYERS)
    def test_gradient_is_autodiff_of_normalized_kernel_with_fixed_u_v(self, name):
        ours_fn, keras_fn, shape = LAYERS[name]
        layer = build(ours_fn(spectral_norm=True), shape)
        reference = build(keras_fn(), shape)
        kernel = layer.kernel.numpy().astype("float64")
        u, v = fixed_singular_vectors(kernel, layer.sn_u.numpy().astype("float64"))
        x = tf.random.normal(shape)
        with tf.GradientTape() as tape:
            out = layer(x, training=True)
            loss = tf.reduce_sum(out * tf.sin(out))
        grad = tape.gradient(loss, layer.kernel)

        kernel_var = tf.Variable(kernel.astype("float32"))
        with tf.GradientTape() as ref_tape:
            w = tf.reshape(kernel_var, [-1, kernel.shape[-1]])
            sigma = tf.tensordot(tf.constant(v, tf.float32), tf.linalg.matvec(w, tf.constant(u, tf.float32)), 1)
            reference.kernel.assign(kernel_var / sigma)  # forward value only; gradient taken below
            normalized = kernel_var / sigma
        reference.bias.assign(layer.bias)
        with ref_tape:
            ref_out = (
                reference.convolution_op(x, normalized) + reference.bias
                if name == "conv"
                else tf.matmul(x, normalized) + reference.bias
            )
            ref_out = reference.activation(ref_out)
            ref_loss = tf.reduce_sum(ref_out * tf.sin(ref_out))
        self.assertAllClose(out, ref_out, rtol=1e-5, atol=1e-6)
        self.assertAllClose(grad, ref_tape.gradient(ref_loss, kernel_var), rtol=1e-4, atol=1e-6)
        self.assertAllClose(layer.sn_u, u, rtol=1e-5, atol=1e-6)

    def test_u_updates_only_in_training(self):
        layer = build(layers.Dense(3, spectral_norm=True), [2, 5])
        x = tf.ones([2, 5])
        before = layer.sn_u.numpy()
        layer(x, training=False)
        self.assertAllEqual(layer.sn_u, before)
        layer(x, training=True)
        self.assertNotAllClose(layer.sn_u, before)

    def test_u_keeps_the_layers_variable_dtype_and_at_least_float32(self):
        for policy, expected in (("float64", "float64"), ("float32", "float32"), ("mixed_bfloat16", "float32")):
            layer = build(layers.Dense(3, spectral_norm=True, dtype=policy), [2, 5])
            u = layer.sn_u.numpy()
            layer(tf.ones([2, 5], "float64" if policy == "float64" else "float32"), training=True)
            self.assertEqual((policy, layer.sn_u.dtype), (policy, expected))
            if policy == "float64":  # the power iteration in float64: not rounded to float32
                w = layer.kernel.numpy()
                v = w @ u / np.linalg.norm(w @ u)
                self.assertAllClose(layer.sn_u, w.T @ v / np.linalg.norm(w.T @ v), rtol=1e-12, atol=1e-14)

    def test_power_iteration_converges_to_largest_singular_value(self):
        layer = build(layers.Dense(4, spectral_norm=True, use_bias=False), [1, 6])
        for _ in range(100):
            layer(tf.ones([1, 6]), training=True)
        normalized = layer._normalized_kernel(training=False).numpy()
        self.assertAllClose(np.linalg.svd(normalized, compute_uv=False)[0], 1.0, atol=1e-4)

    def test_gradients_flow_through_sigma_in_the_scaled_path(self):
        layer = build(layers.Dense(2, spectral_norm=True), [3, 4])
        x = tf.random.normal([3, 4])
        state = layer.sn_u.numpy()
        with tf.GradientTape() as plain_tape:
            plain = tf.reduce_sum(tf.square(layer(x, training=True)))
        layer.sn_u.assign(state)
        with ops.ParameterGradientScaling() as scaling:
            with tf.GradientTape() as tape:
                scaled = tf.reduce_sum(tf.square(layer(x, training=True)))
        scaling.set(tf.ones([3]))
        self.assertAllClose(tape.gradient(scaled, layer.kernel), plain_tape.gradient(plain, layer.kernel))


class EmbeddingTest(tu.TestCase):
    def test_plain_outside_a_scope_and_scaled_inside(self):
        layer = layers.Embedding(4, 3)
        reference = keras.layers.Embedding(4, 3)
        ids = tf.constant([2, 0, 2])
        layer.build((None,))
        reference.build((None,))
        reference.set_weights(layer.get_weights())
        self.assertAllClose(layer(ids), reference(ids))
        with ops.ParameterGradientScaling() as scaling:
            with tf.GradientTape() as tape:
                out = layer(ids)
        scaling.set(tf.constant([2.0, -1.0, 0.5]))
        grad = tape.gradient(out, layer.embeddings, output_gradients=tf.ones([3, 3]))
        self.assertAllClose(grad, [[-1.0] * 3, [0.0] * 3, [2.5] * 3, [0.0] * 3])
        self.assertTrue(layers.supports_parameter_gradient_scaling(layer))

    def test_spectral_norm_and_saving(self):
        model = keras.Sequential([keras.Input((), dtype="int32"), layers.Embedding(6, 4, spectral_norm=True)])
        for _ in range(50):
            model(tf.constant([0, 1]), training=True)
        table = model.layers[0]._normalized_kernel(training=False).numpy()
        self.assertAllClose(np.linalg.svd(table, compute_uv=False)[0], 1.0, atol=1e-3)
        path = self.get_temp_dir() + "/e.keras"
        model.save(path)
        loaded = keras.models.load_model(path)
        self.assertAllClose(loaded(tf.constant([3, 5])), model(tf.constant([3, 5])))
        self.assertAllClose(loaded.layers[0].sn_u, model.layers[0].sn_u)


class LeakyReLUTest(tu.TestCase):
    def test_same_values_and_gradients_as_keras(self):
        x = tf.constant([[-2.0, -0.0, 0.0, 1e-30, 3.0], [-1e-30, 5.0, -7.0, 2.0, 0.5]])
        ours, theirs = layers.LeakyReLU(0.2), keras.layers.LeakyReLU(0.2)
        upstream = tf.random.normal(x.shape)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            a, b = ours(x), theirs(x)
        self.assertAllEqual(a, b)
        self.assertAllEqual(
            tape.gradient(a, x, output_gradients=upstream), tape.gradient(b, x, output_gradients=upstream)
        )
        with self.assertRaisesRegex(ValueError, "negative_slope > 0"):
            layers.LeakyReLU(0.0)

    def test_same_second_derivatives_as_keras(self):
        # R1 and WGAN-GP differentiate D's input gradient again.
        x = tf.constant([[-2.0, -0.5, 0.3, 3.0], [1.5, -7.0, 2.0, 0.5]])
        v = tf.Variable(tf.random.normal([4]))
        penalties = []
        for activation in (layers.LeakyReLU(0.2), keras.layers.LeakyReLU(0.2)):
            with tf.GradientTape() as outer:
                with tf.GradientTape() as inner:
                    inner.watch(x)
                    y = tf.reduce_sum(activation(x * v) ** 2)
                penalty = tf.reduce_sum(inner.gradient(y, x) ** 2)
            penalties.append((penalty, outer.gradient(penalty, v)))
        self.assertAllClose(penalties[0][0], penalties[1][0])
        self.assertAllClose(penalties[0][1], penalties[1][1])

    def test_grappler_remapper_does_not_fail_on_the_training_graph(self):
        # keras.layers.LeakyReLU after a conv makes Grappler's remapper fail on a training graph
        # (the activation stays unfused): TF logs "remapper failed ... LeakyReluGrad". Run fused
        # steps (plain, R1, WGAN-GP) in a fresh process and read TF's log.
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0", "TF_ENABLE_ONEDNN_OPTS": "1"}
        result = subprocess.run(
            [sys.executable, "-c", REMAPPER_SCRIPT.format(activation="layers.LeakyReLU")],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
        )
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertNotIn("remapper failed", result.stderr)


class SerializationTest(tu.TestCase):
    def test_get_config_round_trip(self):
        for layer in (
            layers.Dense(3, spectral_norm=True, activation="tanh"),
            layers.Conv2D(2, 3, spectral_norm=True, padding="same"),
        ):
            clone = type(layer).from_config(layer.get_config())
            self.assertEqual(clone.get_config(), layer.get_config())
            self.assertTrue(clone.spectral_norm)

    def test_model_save_and_load(self):
        model = keras.Sequential(
            [keras.Input((6, 6, 1)), layers.Conv2D(2, 3, spectral_norm=True), keras.layers.Flatten(), layers.Dense(1)]
        )
        model(tf.ones([1, 6, 6, 1]), training=True)
        path = self.get_temp_dir() + "/d.keras"
        model.save(path)
        loaded = keras.models.load_model(path)
        x = tf.random.normal([2, 6, 6, 1])
        self.assertAllClose(loaded(x), model(x))
        self.assertAllClose(loaded.layers[0].sn_u, model.layers[0].sn_u)


if __name__ == "__main__":
    tf.test.main()
