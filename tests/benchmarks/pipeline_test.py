"""benchmarks/pipeline.py: a tiny run prints the table of images/s, one row per size, and the
photos' before/now row (in this process: `pipeline.run`, its flags parsed into flags of its own)."""

import contextlib
import io
import os
import re
import sys

from tests import testing_utils as tu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The benchmark scripts import their sibling `machine` as a top-level module, as when run.
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import pipeline  # noqa: E402


class PipelineTest(tu.TestCase):
    def test_a_tiny_run_prints_a_row_per_size_and_the_photos_row(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):  # an error raises here, its traceback the test's
            pipeline.run(
                [
                    "pipeline.py",
                    "--sizes=16,32",
                    "--images=8",
                    "--batches=2",
                    "--steps=1",
                    "--batch_size=4",
                    "--generator_width=16",
                    "--discriminator_width=4",
                    "--photos=1",
                    "--photo_size=16",
                ]
            )
        stdout = out.getvalue()
        self.assertRegex(stdout, r"flags: .*; \d+ cpus; tf ")
        rows = re.findall(r"^\| (\d+) px \| (\d+) \| (\d+) \| ([\d.]+) \| (\d+)x \|$", stdout, re.MULTILINE)
        self.assertEqual([row[0] for row in rows], ["16", "32"])
        self.assertTrue(all(float(value) > 0 for row in rows for value in row[1:4]))
        photos = re.search(r"^\| images/s \| ([\d.]+) \| ([\d.]+) \| ([\d.]+)x \|$", stdout, re.MULTILINE)
        self.assertIsNotNone(photos, stdout)
        self.assertTrue(all(float(value) > 0 for value in photos.groups()))
