"""benchmarks/repeatability.py: a tiny case in its own process prints its digests and the count of distinct ones."""

import json
import re

from tests import testing_utils as tu


class RepeatabilityTest(tu.TestCase):
    def test_a_tiny_case_repeats_and_says_so(self):
        result = tu.run_benchmark(
            "repeatability.py",
            "--sizes=32",
            "--forms=fused",
            "--dtypes=float32",
            "--repeats=2",
            "--updates=1",
            "--generator_width=16",
            "--discriminator_width=8",
        )
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertRegex(result.stdout, r"flags: .*; inter-op threads=1")
        (row,) = re.findall(
            r"^ +32 px +fused +float32 +G 16 +D 8 +distinct (\d): (\w{8}) (\w{8})$", result.stdout, re.M
        )
        self.assertEqual(row[0], "1")
        self.assertEqual(row[1], row[2])
        self.assertEqual(json.loads(result.stdout.splitlines()[-1])["cases"], {"32px/fused/float32": [row[1], row[2]]})
