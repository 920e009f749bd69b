"""benchmarks/speed.py: the levers build what they name, and a tiny run prints its table.

speed.py defines its absl flags when run, as do other benchmarks (the same names), so it runs
in this process here with flags of its own: `speed.parsed(argv)` for its functions, `speed.run`
for the whole command line.
"""

import contextlib
import io
import json
import os
import sys

import keras
from absl import app

from tests import testing_utils as tu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The benchmark scripts import their sibling `machine` as a top-level module, as when run.
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import speed  # noqa: E402


def layer_class(layer):
    """`keras.<class>` for a Keras layer, else `<top-level package>.<class>`."""
    cls = type(layer)
    package = "keras" if getattr(keras.layers, cls.__name__, None) is cls else cls.__module__.split(".")[0]
    return package + "." + cls.__name__


def printed_run(*args):
    """What `benchmarks/speed.py args` prints (run in this process; an error raises)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        speed.run(["speed.py", *args])
    return out.getvalue()


class SpeedTest(tu.TestCase):
    def refusal(self, function, *args):
        """`UsageError <message>` of the absl UsageError that `function(*args)` raises."""
        with self.assertRaises(app.UsageError) as caught:
            function(*args)
        return f"{type(caught.exception).__name__} {caught.exception}"

    def test_keras_levers_build_the_networks_with_keras_layers_and_unknown_levers_or_forms_are_usage_errors(self):
        # ... and a config's widths left None are described as chosen. The command line's
        # refusals: absl's UsageError, what the command line says.
        with speed.parsed(["speed", "--config=configs/digits.py", "--forms=alternating_paper"]):
            self.assertIn(
                "UsageError --config times the forms train.py trains; alternating_paper is not one of them",
                self.refusal(speed._builders),
            )
        # Widths left None are timed as train.py trains them: chosen from the image size.
        with speed.parsed(["speed", "--config=configs/mnist64.py", "--forms=fused"]):
            self.assertIn(
                "config=mnist64 (dataset mnist5k, network sngan_cnn, G {'width': 512}, D {'spectral_norm': True, 'width': 64}",
                speed._builders()[2],
            )
        # configs/mnist.py's periodic mix: each form is timed alone, and the header says so.
        with speed.parsed(["speed", "--config=configs/mnist.py", "--forms=fused"]):
            speed.FLAGS.config.generator.width, speed.FLAGS.config.discriminator.width = 8, 4
            config, data = speed.completed_config(speed.FLAGS.config)
            self.assertTrue(
                speed._builders()[2].endswith("each form alone: the config's schedule of forms is modelled from them)")
            )
            self.assertEqual(
                (config.alternate_every, speed.config_gan("fused", config, data)[0].form.name), (4, "fused")
            )
        with speed.parsed(["speed", "--network=digits"]):
            self.assertIn(
                "UsageError unknown lever 'keras_everything'",
                self.refusal(speed.parse_variant, "float32+keras_everything"),
            )
            classes = {}
            for variant in ("float32", "float32+keras_conv_transpose", "float32+keras_leaky_relu+keras_conv_transpose"):
                levers = speed.parse_variant(variant)
                g, d = speed.build_networks(levers, speed.precision.choose(levers["precision"]))
                classes[variant] = {
                    key: {layer_class(layer) for layer in model.layers} for key, model in (("g", g), ("d", d))
                }
        ours, keras_layer = "tf_fusedprop.Conv2DTranspose", "keras.Conv2DTranspose"
        self.assertIn(ours, classes["float32"]["g"])
        self.assertNotIn(keras_layer, classes["float32"]["g"])
        self.assertIn(keras_layer, classes["float32+keras_conv_transpose"]["g"])
        self.assertNotIn(ours, classes["float32+keras_conv_transpose"]["g"])
        self.assertIn("tf_fusedprop.LeakyReLU", classes["float32+keras_conv_transpose"]["d"])
        both = classes["float32+keras_leaky_relu+keras_conv_transpose"]
        self.assertNotIn("tf_fusedprop.LeakyReLU", both["d"])
        self.assertIn(keras_layer, both["g"])

    def test_prints_a_row_per_variant_and_form(self):
        # Two variants of one form (two forms of one variant: the --config test below).
        printed = printed_run(
            "--network=digits",
            "--batch_size=4",
            "--rounds=1",
            "--steps_per_round=1",
            "--warmup_steps=0",
            "--forms=fused",
            "--variants=float32,float32+keras_conv_transpose+probe",
        )
        report = json.loads(printed.strip().splitlines()[-1])
        self.assertRegex(report["header"], r"flags: .*; \d+ cpus; tf ")
        self.assertCountEqual(
            report["seconds_per_step"],
            ["float32/fused", "float32+keras_conv_transpose+probe/fused"],
        )
        self.assertTrue(all(seconds > 0 for seconds in report["seconds_per_step"].values()))

    def test_times_the_gans_train_py_builds_from_a_config(self):
        tiny = ["--config.generator.width=16", "--config.discriminator.width=4", "--config.steps_per_execution=2"]
        printed = printed_run(
            "--config=configs/digits.py",
            *tiny,
            "--config.mixed_precision=float32",
            "--rounds=1",
            "--steps_per_round=2",
            "--warmup_steps=0",
            "--forms=alternating,fused",
        )
        self.assertIn("config=digits (dataset digits, network digits, G {'width': 16}", printed)
        report = json.loads(printed.strip().splitlines()[-1])
        self.assertCountEqual(report["seconds_per_step"], ["config:digits/alternating", "config:digits/fused"])
        self.assertEqual((report["config"]["generator"], report["config"]["steps_per_execution"]), ({"width": 16}, 2))
