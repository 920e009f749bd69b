"""benchmarks/weight_gradients.py: the pair's weight gradients read from the models, and a tiny run's table."""

import os
import re
import sys

from tests import testing_utils as tu
from tf_fusedprop import conv_weight_gradients as cwg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import weight_gradients  # noqa: E402


class WeightGradientsTest(tu.TestCase):
    def test_reads_d_convolutions_and_g_transposed_convolutions(self):
        shapes = weight_gradients.weight_gradient_shapes("sngan_cnn", 64)
        self.assertLen(shapes, 7 + 3)
        self.assertEqual(shapes[0][1:], ((128, 32, 32, 3), (3, 3, 3, 64), (1, 1), "SAME"))
        # G's first transposed convolution 4x4x512 -> 8x8x256: its output gradient is the input
        self.assertEqual(shapes[7][1:], ((64, 8, 8, 256), (4, 4, 256, 512), (2, 2), "SAME"))
        self.assertTrue(shapes[7][0].startswith("G 4x4x512 -> 256, k4 s2"))

    def test_prints_every_formulation_of_every_weight_gradient_and_the_choice(self):
        argv = ["weight_gradients.py", "--network=digits", "--batch_size=4", "--reps=1"]
        lines = tu.printed_by(weight_gradients.run, argv)
        self.assertRegex(lines[0], r"flags: .*; \d+ cpus; tf ")
        choices = "|".join(cwg.WEIGHT_GRADIENTS)
        rows = [line for line in lines if re.match(rf"[DG] .*(\s+[\d.]+){{6}}\s+({choices})$", line)]
        self.assertLen(rows, len(weight_gradients.weight_gradient_shapes("digits", 4)))
        self.assertRegex(lines[-1], r"^all: float32 native [\d.]+ ms; bfloat16 native [\d.]+ ms, as chosen [\d.]+ ms")
