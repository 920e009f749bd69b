"""The per-layer choice between a convolution's weight-gradient formulations (timed once per
machine, kept for a run), and the layers that resolve it before their ops."""

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
from tf_fusedprop import layers, machine, networks


def normal(shape, seed, dtype="float32"):
    return tf.cast(tf.random.stateless_normal(shape, seed=[seed, 7]), dtype)


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

    def test_a_layer_chooses_when_called_never_inside_its_gradient(self):
        conv = layers.Conv2D(4, 3, padding="same", dtype="mixed_bfloat16")
        transpose = layers.Conv2DTranspose(2, 4, strides=2, padding="same", dtype="mixed_bfloat16")
        with self.fresh_process(), mock.patch.object(cwg, "_fastest", return_value="taps") as fastest:
            inputs = keras.Input((6, 6, 2))
            keras.Model(inputs, transpose(conv(inputs)))  # built symbolically: no gradient, nothing timed
            x = normal((3, 6, 6, 2), 1)
            transpose(conv(x, training=False), training=False)  # inference (sampling, evaluation): neither
            fastest.assert_not_called()
            with tf.GradientTape() as tape:
                y = tf.reduce_sum(tf.cast(transpose(conv(x)), tf.float32) ** 2)
            # The transposed convolution's kernel gradient takes its output gradient as the input.
            expected = {
                ((3, 6, 6, 2), (3, 3, 2, 4), (1, 1), "SAME", "bfloat16"): "taps",
                ((3, 12, 12, 2), (4, 4, 2, 4), (2, 2), "SAME", "bfloat16"): "taps",
            }
            self.assertEqual(cwg.chosen(), expected)
            with mock.patch.object(cwg, "choose", side_effect=AssertionError("chosen inside a gradient")):
                gradients = tape.gradient(y, conv.trainable_variables + transpose.trainable_variables)
            self.assertEqual(len([g for g in gradients if g is not None]), 4)

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
        # The exact gradient of what the layer computes from bfloat16 inputs, in float64: against
        # another bfloat16 gradient (one device, batch 4: another timed choice) the two roundings
        # add up, measured up to 2.1% with the native kernel on both.
        kernel = tf.Variable(tf.cast(tf.cast(layer.kernel, tf.bfloat16), tf.float64))
        with tf.GradientTape() as tape:
            y = tf.nn.conv2d(tf.cast(tf.cast(x, tf.bfloat16), tf.float64), kernel, 1, "SAME")
            y = tf.reduce_sum((y + tf.cast(layer.bias, tf.float64)) ** 2)
        expected = tape.gradient(y, kernel)
        actual = step(
            strategy.experimental_distribute_values_from_function(lambda ctx: x[2 * ctx.replica_id_in_sync_group :][:2])
        )
        self.assertLess(tu.max_relative_difference([actual], [expected]), 2e-2)
        self.assertIn(((2, 6, 6, 2), (3, 3, 2, 4), (1, 1), "SAME", "bfloat16"), cwg.chosen())


if __name__ == "__main__":
    tf.test.main()
