"""The weight-gradient formulations of a convolution, the per-layer choice, and the layers and
ops that use them: every formulation equals TensorFlow's own gradient."""

import contextlib
import hashlib
import io
import json
import os
import tempfile
from unittest import mock

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

import tf_fusedprop as fp
from tests import testing_utils as tu
from tf_fusedprop import conv_weight_gradients as cwg
from tf_fusedprop import layers, machine, networks, ops

# (input [N, H, W, C], kernel [kh, kw, C, O], strides, padding): odd and even sizes, kernels
# wider than strides and narrower, 1x1, rows a stride leaves over at the end.
CASES = {
    "k3s1_same": ((2, 6, 5, 3), (3, 3, 3, 4), (1, 1), "SAME"),
    "k4s2_same": ((2, 8, 7, 2), (4, 4, 2, 3), (2, 2), "SAME"),
    "k3s2_valid_leftover": ((3, 9, 8, 2), (3, 3, 2, 2), (2, 2), "VALID"),
    "k2s3_same": ((2, 10, 7, 2), (2, 2, 2, 3), (3, 3), "SAME"),
    "k1s1_valid": ((2, 4, 4, 5), (1, 1, 5, 2), (1, 1), "VALID"),
    "k5x3_s2x1_same": ((2, 7, 6, 2), (5, 3, 2, 3), (2, 1), "SAME"),
}


def normal(shape, seed, dtype="float32"):
    return tf.cast(tf.random.stateless_normal(shape, seed=[seed, 7]), dtype)


def tf_gradients(x, w, b, strides, padding, dy):
    with tf.GradientTape() as tape:
        tape.watch([x, w, b])
        y = tf.nn.bias_add(tf.nn.conv2d(x, w, strides, padding), b)
    return tape.gradient(y, [x, w, b], output_gradients=dy)


class FormulationTest(tu.TestCase):
    @parameterized.product(case=list(CASES), formulation=cwg.WEIGHT_GRADIENTS)
    def test_equals_tensorflows_kernel_gradient_in_float32(self, case, formulation):
        x_shape, k_shape, strides, padding = CASES[case]
        x, w = normal(x_shape, 1), normal(k_shape, 2)
        dy = normal(tf.nn.conv2d(x, w, strides, padding).shape, 3)
        expected = tf_gradients(x, w, tf.zeros(k_shape[-1]), strides, padding, dy)[1]
        actual = cwg.weight_gradient(x, dy, k_shape, strides, padding, formulation)
        self.assertEqual(actual.shape, k_shape)
        self.assertLess(tu.max_relative_difference([actual], [expected]), 1e-5)

    @parameterized.parameters(*cwg.WEIGHT_GRADIENTS)
    def test_bfloat16_within_its_rounding_of_the_float32_gradient(self, formulation):
        x_shape, k_shape, strides, padding = (4, 8, 8, 16), (4, 4, 16, 8), (2, 2), "SAME"
        x, w = normal(x_shape, 1), normal(k_shape, 2)
        dy = normal(tf.nn.conv2d(x, w, strides, padding).shape, 3)
        exact = cwg.weight_gradient(x, dy, k_shape, strides, padding)
        x16, dy16 = tf.cast(x, tf.bfloat16), tf.cast(dy, tf.bfloat16)
        ours = cwg.weight_gradient(x16, dy16, k_shape, strides, padding, formulation)
        self.assertEqual(ours.dtype, tf.bfloat16)
        # bfloat16 keeps 8 bits: inputs and result each round by <= 2^-9 relative. TensorFlow's own
        # kernel ("native") also adds its partial sums in bfloat16 on CPUs without bfloat16 units,
        # ~2^-9 sqrt(64) more for these 64-term sums (1.2e-2 measured on an AVX2-only EPYC).
        bound = 2**-9 * (3 + 64**0.5) if formulation == "native" else 1e-2
        self.assertLess(tu.max_relative_difference([tf.cast(ours, tf.float32)], [exact]), bound)

    def test_unknown_formulation_is_one_line(self):
        with self.assertRaisesRegex(ValueError, r"^Unknown weight-gradient formulation 'im2col'\. Valid: native"):
            cwg.weight_gradient(tf.ones([1, 3, 3, 1]), tf.ones([1, 3, 3, 1]), (1, 1, 1, 1), (1, 1), "SAME", "im2col")


class OpsTest(tu.TestCase):
    @parameterized.product(case=["k4s2_same", "k3s2_valid_leftover", "k5x3_s2x1_same"], formulation=cwg.POLICIES)
    def test_conv2d_gradients_equal_tensorflows(self, case, formulation):
        x_shape, k_shape, strides, padding = CASES[case]
        x, w, b = normal(x_shape, 1), normal(k_shape, 2), normal(k_shape[-1:], 4)
        with tf.GradientTape() as tape:
            tape.watch([x, w, b])
            y = ops.conv2d(x, w, b, strides, padding, weight_gradient=formulation)
        dy = normal(y.shape, 3)
        self.assertAllClose(y, tf.nn.bias_add(tf.nn.conv2d(x, w, strides, padding), b))
        actual = tape.gradient(y, [x, w, b], output_gradients=dy)
        self.assertLess(tu.max_relative_difference(actual, tf_gradients(x, w, b, strides, padding, dy)), 1e-5)

    @parameterized.parameters("forward_conv", "taps")
    def test_conv2d_scales_the_parameter_gradients_per_sample(self, formulation):
        x_shape, k_shape, strides, padding = CASES["k4s2_same"]
        x, w, b = normal(x_shape, 1), normal(k_shape, 2), normal(k_shape[-1:], 4)
        factor = tf.constant([2.0, -0.5])
        with tf.GradientTape() as tape:
            tape.watch([x, w, b])
            y = ops.conv2d(x, w, b, strides, padding, factor=factor, weight_gradient=formulation)
        dy = normal(y.shape, 3)
        dx, dw, db = tape.gradient(y, [x, w, b], output_gradients=dy)
        expected = tf_gradients(x, w, b, strides, padding, dy * factor[:, None, None, None])
        self.assertLess(tu.max_relative_difference([dw, db], expected[1:]), 1e-5)
        self.assertLess(tu.max_relative_difference([dx], tf_gradients(x, w, b, strides, padding, dy)[:1]), 1e-5)

    @parameterized.parameters("forward_conv", "taps")
    def test_second_order_gradients_as_r1_takes_them(self, formulation):
        x_shape, k_shape, strides, padding = CASES["k4s2_same"]
        x, w, b = normal(x_shape, 1), normal(k_shape, 2), normal(k_shape[-1:], 4)

        def penalty_gradient(conv):
            with tf.GradientTape() as outer:
                outer.watch([w, b])
                with tf.GradientTape() as inner:
                    inner.watch(x)
                    y = tf.reduce_sum(tf.square(conv()))
                penalty = tf.reduce_sum(tf.square(inner.gradient(y, x)))
            return outer.gradient(penalty, [w, b])

        ours = penalty_gradient(lambda: ops.conv2d(x, w, b, strides, padding, weight_gradient=formulation))
        theirs = penalty_gradient(lambda: tf.nn.bias_add(tf.nn.conv2d(x, w, strides, padding), b))
        self.assertLess(tu.max_relative_difference(ours, theirs), 1e-5)

    @parameterized.product(padding=["same", "valid"], kernel=[4, 1], formulation=cwg.WEIGHT_GRADIENTS)
    def test_conv2d_transpose_equals_tensorflows(self, padding, kernel, formulation):
        x, w, b = normal((2, 3, 4, 5), 1), normal((kernel, kernel, 3, 5), 2), normal((3,), 4)
        with tf.GradientTape() as tape:
            tape.watch([x, w, b])
            y = ops.conv2d_transpose(x, w, b, (2, 2), padding, weight_gradient=formulation)
        size = lambda n: n * 2 + (max(kernel - 2, 0) if padding == "valid" else 0)  # noqa: E731
        # The reference in float64, which no oneDNN kernel computes (see the next test).
        x64, w64, b64 = (tf.cast(t, tf.float64) for t in (x, w, b))
        with tf.GradientTape() as reference_tape:
            reference_tape.watch([x64, w64, b64])
            z = tf.nn.bias_add(tf.nn.conv2d_transpose(x64, w64, [2, size(3), size(4), 3], 2, padding.upper()), b64)
        self.assertAllClose(y, z)
        dy = normal(z.shape, 3)
        ours = tape.gradient(y, [x, w, b], output_gradients=dy)
        reference = reference_tape.gradient(z, [x64, w64, b64], tf.cast(dy, tf.float64))
        self.assertLess(tu.max_relative_difference(ours, reference), 1e-5)

    def test_a_1x1_strided_weight_gradient_is_right_every_time(self):
        # TensorFlow 2.21's oneDNN Conv2DBackpropFilter on AVX2-only CPUs got this shape wrong in
        # most calls (up to 0.7 relative), so "native" computes a 1x1 strided kernel's one tap.
        x, dy = normal((2, 6, 8, 3), 1), normal((2, 3, 4, 5), 3)
        exact = tf.raw_ops.Conv2DBackpropFilter(
            input=tf.cast(x, tf.float64),
            filter_sizes=[1, 1, 3, 5],
            out_backprop=tf.cast(dy, tf.float64),
            strides=[1, 2, 2, 1],
            padding="SAME",
        )
        for formulation in cwg.WEIGHT_GRADIENTS:
            for _ in range(8):
                ours = cwg.weight_gradient(x, dy, (1, 1, 3, 5), (2, 2), "SAME", formulation)
                self.assertLess(tu.max_relative_difference([ours], [exact]), 1e-6, formulation)


class ChoiceTest(tu.TestCase):
    def tearDown(self):
        cwg.set_policy(None)
        super().tearDown()

    def test_auto_times_narrow_dtypes_only_and_a_fixed_policy_wins(self):
        self.assertEqual(cwg.resolve("auto", "float32"), "native")
        self.assertEqual(cwg.resolve("auto", "bfloat16"), "auto")
        self.assertEqual(cwg.resolve("taps", "float32"), "taps")
        cwg.set_policy("forward_conv")
        self.assertEqual(cwg.resolve("auto", "bfloat16"), "forward_conv")
        self.assertEqual(cwg.resolve("native", "bfloat16"), "native")  # the layer's own setting first

    def test_environment_variable_sets_the_policy_and_a_bad_value_is_one_line(self):
        with mock.patch.dict("os.environ", {cwg.ENVIRONMENT_VARIABLE: "taps"}):
            self.assertEqual(cwg.policy(), "taps")
            self.assertEqual(cwg.resolve("auto", "float16"), "taps")
        with mock.patch.dict("os.environ", {cwg.ENVIRONMENT_VARIABLE: "fast"}):
            with self.assertRaisesRegex(ValueError, r"^Unknown TF_FUSEDPROP_WEIGHT_GRADIENT\. Received: .*'fast'"):
                cwg.policy()
        with self.assertRaisesRegex(ValueError, r"^Unknown weight_gradient\. Received: weight_gradient='x'"):
            layers.Conv2D(2, 3, weight_gradient="x")

    def fresh_process(self):
        """As a new process on this machine with the user cache in a new directory: nothing chosen."""
        stack = contextlib.ExitStack()
        stack.enter_context(mock.patch.dict(cwg._chosen, clear=True))
        stack.enter_context(
            mock.patch.dict("os.environ", {"TF_FUSEDPROP_CACHE": tempfile.mkdtemp(dir=self.get_temp_dir())})
        )
        return stack

    def test_choose_times_once_per_shape_also_while_a_function_is_traced(self):
        shape, kernel = (None, 6, 6, 4), (3, 3, 4, 4)
        with self.fresh_process(), mock.patch.object(cwg, "_fastest", wraps=cwg._fastest) as fastest:

            @tf.function(input_signature=[tf.TensorSpec(shape, tf.bfloat16)])
            def traced(x):
                return tf.constant(cwg.choose(x.shape, kernel, (1, 1), "same", x.dtype))

            first = traced(tf.zeros([3, 6, 6, 4], tf.bfloat16))
            second = cwg.choose((cwg.DEFAULT_BATCH, 6, 6, 4), kernel, (1, 1), "SAME", tf.bfloat16)
            self.assertIn(first.numpy().decode(), cwg.WEIGHT_GRADIENTS)
            self.assertEqual(first.numpy().decode(), second)
            fastest.assert_called_once()
            key = ((cwg.DEFAULT_BATCH, 6, 6, 4), kernel, (1, 1), "SAME", "bfloat16")
            self.assertEqual(cwg.chosen()[key], second)

    def test_a_table_file_keeps_the_choices_for_the_next_process(self):
        path = self.get_temp_dir() + "/weight_gradients.json"
        key = ((2, 5, 5, 3), (3, 3, 3, 2), (1, 1), "SAME", "bfloat16")
        with cwg.table_file(path):
            first = cwg.choose(*key)
        with open(path) as f:
            self.assertEqual(json.load(f)["2x5x5x3 3x3x3x2 1x1 SAME bfloat16"], first)
        other = next(f for f in cwg.WEIGHT_GRADIENTS if f != first)
        with open(path, "w") as f:
            json.dump({"2x5x5x3 3x3x3x2 1x1 SAME bfloat16": other}, f)
        with mock.patch.object(cwg, "_fastest", side_effect=AssertionError("timed again")):
            with cwg.table_file(path):
                self.assertEqual(cwg.choose(*key), other)
            with open(path, "w") as f:
                json.dump({"2x5x5x3 3x3x3x2 1x1 SAME bfloat16": "im2col"}, f)
            with self.assertRaisesRegex(ValueError, r"weight_gradients.json names formulations other than native"):
                with cwg.table_file(path):
                    pass
            with open(path, "w") as f:
                f.write("[1, 2]")
            with self.assertRaisesRegex(ValueError, r"weight_gradients.json is not a table of weight-gradient choices"):
                with cwg.table_file(path):
                    pass
        with self.fresh_process(), mock.patch.object(cwg, "_fastest", return_value="taps"):
            cwg.choose(*key)  # the refused table is not written to afterwards
        with open(path) as f:
            self.assertEqual(f.read(), "[1, 2]")

    def test_a_choice_is_timed_once_per_machine_and_read_by_every_later_process(self):
        key = ((2, 5, 5, 3), (3, 3, 3, 2), (1, 1), "SAME", "bfloat16")
        with self.fresh_process():
            with mock.patch.object(cwg, "_fastest", return_value="taps") as fastest:
                self.assertEqual(cwg.choose(*key), "taps")
            fastest.assert_called_once()
            with open(cwg.machine_cache_file()) as f:
                cached = json.load(f)
            self.assertEqual(cached["choices"], {"2x5x5x3 3x3x3x2 1x1 SAME bfloat16": "taps"})
            self.assertEqual(cached["machine"], machine.fingerprint())
            cwg._chosen.clear()  # the next process, timing noise favouring another formulation
            with mock.patch.object(cwg, "_fastest", return_value="forward_conv") as fastest:
                self.assertEqual(cwg.choose(*key), "taps")
            fastest.assert_not_called()
            path = self.get_temp_dir() + "/weight_gradients.json"
            with open(path, "w") as f:  # a run's own table (from another machine) wins
                json.dump({"2x5x5x3 3x3x3x2 1x1 SAME bfloat16": "native"}, f)
            with cwg.table_file(path):
                self.assertEqual(cwg.choose(*key), "native")

    @parameterized.parameters(
        ("cpu", "AMD EPYC 9B45"), ("cpu_flags", "avx2"), ("tensorflow", "2.22.0"), ("onednn", "0")
    )
    def test_another_machine_or_software_times_again(self, fact, value):
        key = ((2, 5, 5, 3), (3, 3, 3, 2), (1, 1), "SAME", "bfloat16")
        with self.fresh_process():
            with mock.patch.object(cwg, "_fastest", return_value="taps"):
                cwg.choose(*key)
            here = cwg.machine_cache_file()
            cwg._chosen.clear()
            other = {**machine.fingerprint(), fact: value}
            with mock.patch.object(machine, "fingerprint", return_value=other):
                self.assertNotEqual(cwg.machine_cache_file(), here)
                with mock.patch.object(cwg, "_fastest", return_value="forward_conv") as fastest:
                    self.assertEqual(cwg.choose(*key), "forward_conv")
                fastest.assert_called_once()
            self.assertTrue(os.path.exists(here))

    @parameterized.named_parameters(
        ("not_json", lambda facts, key: "{", "is not a cache of weight-gradient choices"),
        ("no_choices", lambda facts, key: json.dumps({"machine": facts}), "is not a cache of weight-gradient choices"),
        ("bad_key", lambda facts, key: json.dumps({"machine": facts, "choices": {"2x5 SAME": "taps"}}), "is not a"),
        (
            "bad_name",
            lambda facts, key: json.dumps({"machine": facts, "choices": {key: "im2col"}}),
            "names formulations",
        ),
        (
            "foreign",
            lambda facts, key: json.dumps({"machine": {**facts, "cores": 512}, "choices": {key: "native"}}),
            "was written for another machine or software",
        ),
    )
    def test_a_damaged_or_foreign_cache_is_timed_again_in_one_line(self, text, message):
        key = ((2, 5, 5, 3), (3, 3, 3, 2), (1, 1), "SAME", "bfloat16")
        with self.fresh_process():
            path = cwg.machine_cache_file()
            os.makedirs(os.path.dirname(path))
            with open(path, "w") as f:
                f.write(text(machine.fingerprint(), cwg._key_text(key)))
            said = io.StringIO()
            with contextlib.redirect_stderr(said), mock.patch.object(cwg, "_fastest", return_value="taps") as fastest:
                self.assertEqual(cwg.choose(*key), "taps")
            fastest.assert_called_once()
            self.assertEqual(said.getvalue().count("\n"), 1)
            self.assertRegex(said.getvalue(), f"^tf_fusedprop: {path} {message}.*; timing the formulations again.$")
            with open(path) as f:
                self.assertEqual(json.load(f)["choices"], {cwg._key_text(key): "taps"})

    def test_a_cache_that_cannot_be_written_times_in_the_process_in_one_line(self):
        key = ((2, 5, 5, 3), (3, 3, 3, 2), (1, 1), "SAME", "bfloat16")
        with self.fresh_process():
            blocker = os.path.join(os.environ["TF_FUSEDPROP_CACHE"], "weight_gradients")
            os.makedirs(os.path.dirname(blocker), exist_ok=True)
            open(blocker, "w").close()  # a file where the cache's directory should be
            said = io.StringIO()
            with contextlib.redirect_stderr(said), mock.patch.object(cwg, "_fastest", return_value="taps"):
                self.assertEqual(cwg.choose(*key), "taps")
            self.assertRegex(
                said.getvalue(),
                r"^tf_fusedprop: cannot keep weight-gradient choices in .*; timing them in this process.\n$",
            )

    def test_a_runs_table_on_a_full_disk_is_one_line_and_the_choice_stands(self):
        key = ((2, 5, 5, 3), (3, 3, 3, 2), (1, 1), "SAME", "bfloat16")
        disk = tu.small_disk(self, megabytes=1)
        tu.fill_disk(disk)
        with self.fresh_process(), cwg.table_file(os.path.join(disk, "weight_gradients.json")):
            said = io.StringIO()
            with contextlib.redirect_stderr(said), mock.patch.object(cwg, "_fastest", return_value="taps"):
                self.assertEqual(cwg.choose(*key), "taps")
        self.assertRegex(
            said.getvalue(),
            r"^tf_fusedprop: cannot keep this run's weight-gradient choices in .*weight_gradients.json \(No space "
            r"left on device\).\n$",
        )
        self.assertEqual(os.listdir(disk), ["filler"])

    def test_keeps_the_native_kernel_unless_another_is_clearly_faster(self):
        self.assertEqual(cwg._pick({"native": 1.0, "forward_conv": 0.95, "taps": 1.5}), "native")
        self.assertEqual(cwg._pick({"native": 1.0, "forward_conv": 0.6, "taps": 0.5}), "taps")
        self.assertEqual(cwg._pick({"native": 1.0}), "native")


# A conv GAN trained in bfloat16 under "auto", in a fresh process whose timing favours one formulation.
class SameSeedTest(tu.TestCase):
    def run_favouring(self, favoured, cache):
        """A short run of seed 0 as a new process on a machine whose user cache is `cache` (as
        `ChoiceTest.fresh_process`), where the timing would pick `favoured`: the formulations
        chosen and a digest of the final weights."""
        with (
            mock.patch.dict(cwg._chosen, clear=True),
            mock.patch.dict("os.environ", {"TF_FUSEDPROP_CACHE": cache}),
            mock.patch.object(cwg, "_pick", lambda medians: favoured),
        ):
            keras.utils.set_random_seed(0)
            size = dict(image_size=16, width=16, dtype="mixed_bfloat16")
            g, d = networks.digits_generator(latent_dim=8, **size), networks.digits_discriminator(**size)
            gan = fp.FusedPropGAN(g, d, loss="nonsaturating", form="fused", seed=0)
            gan.compile(d_optimizer=keras.optimizers.Adam(1e-2), g_optimizer=keras.optimizers.Adam(1e-2))
            real = np.random.default_rng(1).uniform(-1, 1, size=(64, 16, 16, 1)).astype("float32")
            gan.fit(real, batch_size=16, epochs=2, verbose=0, shuffle=False)
            weights = hashlib.sha256(b"".join(np.asarray(w).tobytes() for w in g.weights + d.weights)).hexdigest()
            return set(cwg.chosen().values()), weights

    def test_two_runs_of_one_seed_on_one_machine_are_bit_identical_whatever_the_timing_says(self):
        machine_cache, other_machine = (tempfile.mkdtemp(dir=self.get_temp_dir()) for _ in range(2))
        first = self.run_favouring("native", machine_cache)
        second = self.run_favouring("taps", machine_cache)
        elsewhere = self.run_favouring("taps", other_machine)
        self.assertEqual((first[0], second[0], elsewhere[0]), ({"native"}, {"native"}, {"taps"}))
        self.assertEqual(second[1], first[1])
        # Without the machine's cache the timing would have decided, and the runs would differ:
        self.assertNotEqual(elsewhere[1], first[1])


class LayerTest(tu.TestCase):
    def tearDown(self):
        cwg.set_policy(None)
        super().tearDown()

    @parameterized.parameters("forward_conv", "taps")
    def test_conv2d_layer_gradients_equal_the_native_ones(self, formulation):
        x = normal((3, 8, 8, 2), 1)
        ours, native = (
            layers.Conv2D(4, 4, strides=2, padding="same", spectral_norm=True, weight_gradient=w)
            for w in (formulation, "native")
        )
        for layer in (ours, native):
            layer.build(x.shape)
        native.set_weights(ours.get_weights())
        grads = []
        for layer in (ours, native):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = layer(x, training=True)
            grads.append(tape.gradient(y, [x] + layer.trainable_weights, output_gradients=normal(y.shape, 3)))
        self.assertLess(tu.max_relative_difference(grads[0], grads[1]), 1e-5)
        self.assertEqual(type(ours).from_config(ours.get_config()).weight_gradient, formulation)

    @parameterized.parameters("float32", "mixed_bfloat16")
    def test_conv2d_transpose_equals_keras_layer(self, dtype):
        ours = layers.Conv2DTranspose(3, 4, strides=2, padding="same", activation="tanh", dtype=dtype)
        theirs = keras.layers.Conv2DTranspose(3, 4, strides=2, padding="same", activation="tanh", dtype=dtype)
        x = normal((2, 4, 4, 5), 1)
        ours.build(x.shape), theirs.build(x.shape)
        theirs.set_weights(ours.get_weights())
        cwg.set_policy("forward_conv")  # the own backward pass, in float32 too
        results = []
        for layer in (ours, theirs):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = layer(x)
            dy = tf.cast(normal(y.shape, 3), y.dtype)
            results.append([y] + tape.gradient(y, [x] + layer.trainable_weights, output_gradients=dy))
        self.assertEqual(results[0][0].dtype, results[1][0].dtype)
        tolerance = 1e-5 if dtype == "float32" else 2e-2
        self.assertLess(tu.max_relative_difference(results[0], results[1]), tolerance)

    def test_conv2d_transpose_with_output_padding_is_kerass_layer(self):
        layer = layers.Conv2DTranspose(2, 3, strides=2, output_padding=1, weight_gradient="taps")
        self.assertEqual(layer(tf.ones([1, 3, 3, 1])).shape, (1, 8, 8, 2))
        clone = layers.Conv2DTranspose.from_config(layer.get_config())
        self.assertEqual((clone.weight_gradient, clone.output_padding), ("taps", (1, 1)))

    def test_auto_under_a_two_replica_strategy_in_bfloat16(self):
        strategy = tu.two_cpu_strategy()
        with strategy.scope():
            layer = layers.Conv2D(4, 3, padding="same", dtype="mixed_bfloat16")
            layer.build((None, 6, 6, 2))

        @tf.function
        def step(x):
            def replica(x):
                with tf.GradientTape() as tape:
                    y = tf.reduce_sum(tf.cast(layer(x), tf.float32) ** 2)
                return tape.gradient(y, layer.kernel)

            return strategy.reduce("SUM", strategy.run(replica, (x,)), axis=None)

        x = normal((4, 6, 6, 2), 1)
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(tf.cast(layer(x), tf.float32) ** 2)
        expected = tape.gradient(y, layer.kernel)
        actual = step(
            strategy.experimental_distribute_values_from_function(lambda ctx: x[2 * ctx.replica_id_in_sync_group :][:2])
        )
        self.assertLess(tu.max_relative_difference([actual], [expected]), 2e-2)
        self.assertIn(((2, 6, 6, 2), (3, 3, 2, 4), (1, 1), "SAME", "bfloat16"), cwg.chosen())


if __name__ == "__main__":
    tf.test.main()
