"""benchmarks/conv_passes.py: D's convolutions read from the model, and a tiny run's table (in this process:
`conv_passes.run`, its flags parsed into flags of its own)."""

import os
import re
import sys

from tests import testing_utils as tu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The benchmark scripts import their sibling `machine` as a top-level module, as when run.
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import conv_passes  # noqa: E402


class ConvPassesTest(tu.TestCase):
    def test_reads_the_sngan_discriminators_convolutions(self):
        shapes = conv_passes.conv_shapes("sngan_cnn")
        self.assertLen(shapes, 7)
        self.assertEqual(shapes[0], ((32, 32, 3), 64, (3, 3), (1, 1), "SAME"))
        self.assertEqual(shapes[-1], ((4, 4, 256), 512, (3, 3), (1, 1), "SAME"))

    def test_prints_every_pass_of_every_convolution_and_the_totals(self):
        lines = tu.printed_by(conv_passes.run, ["conv_passes.py", "--network=digits", "--batch_size=4", "--reps=1"])
        self.assertRegex(lines[0], r"flags: .*; \d+ cpus; tf ")
        convolutions = len(conv_passes.conv_shapes("digits"))
        row = r"\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)x$"
        for name in conv_passes.PASSES:
            rows = [line for line in lines if re.search(rf"\s{re.escape(name)}{row}", line)]
            self.assertLen(rows, convolutions + 1, name)  # One per convolution and the total.
            for line in rows:
                f32, bf16, ratio = map(float, re.search(row, line).groups())
                self.assertGreater(bf16, 0)
                # The times are printed to 0.01 ms (0.1 for the totals): allow that rounding.
                rounding = 0.05 if line.startswith("all") else 0.005
                slack = ratio * (rounding / max(f32, 1e-9) + rounding / bf16) + 0.005
                self.assertAlmostEqual(ratio, f32 / bf16, delta=slack)
