"""benchmarks/speed.py: the levers build what they name, and a tiny run prints its table.

speed.py defines its absl flags when imported, as do other benchmarks, so it runs in fresh
processes here.
"""

import json
import os
import subprocess
import sys

from tests import testing_utils as tu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Builds the digits pair under each variant and prints the class names of its layers, as JSON;
# first, what the command line says for an unknown lever and for a form --config cannot time
# (absl's UsageError: in this process, rather than one process per refusal).
_LAYER_CLASSES = """
import json, sys
import keras
sys.path.insert(0, "benchmarks")
import speed

def name(layer):
    cls = type(layer)
    package = "keras" if getattr(keras.layers, cls.__name__, None) is cls else cls.__module__.split(".")[0]
    return package + "." + cls.__name__

speed.FLAGS(["speed", "--config=configs/digits.py", "--forms=alternating_paper"])
try:
    speed._builders()
except Exception as err:
    print("REFUSED", type(err).__name__, err)
speed.FLAGS.unparse_flags()
speed.FLAGS(["speed", "--config=configs/mnist64.py", "--forms=fused"])
print("DESCRIBED", speed._builders()[2])
speed.FLAGS.unparse_flags()
speed.FLAGS(["speed", "--config=configs/mnist.py", "--forms=fused"])
speed.FLAGS.config.generator.width, speed.FLAGS.config.discriminator.width = 8, 4
config, data = speed.completed_config(speed.FLAGS.config)
print("MIX", speed._builders()[2].endswith("each form alone: the config's schedule of forms is modelled from them)"))
print("TIMED", config.alternate_every, speed.config_gan("fused", config, data)[0].form.name)
speed.FLAGS.unparse_flags()
speed.FLAGS(["speed", "--network=digits"])
try:
    speed.parse_variant("float32+keras_everything")
except Exception as err:
    print("REFUSED", type(err).__name__, err)
out = {}
for variant in sys.argv[1:]:
    levers = speed.parse_variant(variant)
    g, d = speed.build_networks(levers, speed.precision.choose(levers["precision"]))
    out[variant] = {key: sorted({name(layer) for layer in model.layers}) for key, model in (("g", g), ("d", d))}
print(json.dumps(out))
"""


class SpeedTest(tu.TestCase):
    def test_keras_levers_build_the_networks_with_keras_layers_and_unknown_levers_or_forms_are_usage_errors(self):
        # ... and a config's widths left None are described as chosen (the same process).
        variants = ["float32", "float32+keras_conv_transpose", "float32+keras_leaky_relu+keras_conv_transpose"]
        result = subprocess.run(
            [sys.executable, "-c", _LAYER_CLASSES, *variants], capture_output=True, text=True, cwd=ROOT, timeout=300
        )
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertIn("REFUSED UsageError unknown lever 'keras_everything'", result.stdout)
        self.assertIn(
            "REFUSED UsageError --config times the forms train.py trains; alternating_paper is not one of them",
            result.stdout,
        )
        # Widths left None are timed as train.py trains them: chosen from the image size.
        self.assertIn(
            "config=mnist64 (dataset mnist5k, network sngan_cnn, G {'width': 512}, D {'spectral_norm': True, 'width': 64}",
            result.stdout,
        )
        # configs/mnist.py's periodic mix: each form is timed alone, and the header says so.
        self.assertEqual(tu.marked_lines(result.stdout)["MIX"], "True")
        self.assertEqual(tu.marked_lines(result.stdout)["TIMED"], "4 fused")
        classes = json.loads(result.stdout.strip().splitlines()[-1])
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
        result = tu.run_benchmark(
            "speed.py",
            "--network=digits",
            "--batch_size=4",
            "--rounds=1",
            "--steps_per_round=1",
            "--warmup_steps=0",
            "--forms=fused",
            "--variants=float32,float32+keras_conv_transpose",
        )
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        report = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertRegex(report["header"], r"flags: .*; \d+ cpus; tf ")
        self.assertCountEqual(
            report["seconds_per_step"],
            ["float32/fused", "float32+keras_conv_transpose/fused"],
        )
        self.assertTrue(all(seconds > 0 for seconds in report["seconds_per_step"].values()))

    def test_times_the_gans_train_py_builds_from_a_config(self):
        tiny = ["--config.generator.width=16", "--config.discriminator.width=4", "--config.steps_per_execution=2"]
        result = tu.run_benchmark(
            "speed.py",
            "--config=configs/digits.py",
            *tiny,
            "--config.mixed_precision=float32",
            "--rounds=1",
            "--steps_per_round=2",
            "--warmup_steps=0",
            "--forms=alternating,fused",
        )
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertIn("config=digits (dataset digits, network digits, G {'width': 16}", result.stdout)
        report = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertCountEqual(report["seconds_per_step"], ["config:digits/alternating", "config:digits/fused"])
        self.assertEqual((report["config"]["generator"], report["config"]["steps_per_execution"]), ({"width": 16}, 2))
