"""benchmarks/pipeline.py: a tiny run prints the table of images/s, one row per size, and the
photos' before/now row."""

import re

from tests import testing_utils as tu


class PipelineTest(tu.TestCase):
    def test_a_tiny_run_prints_a_row_per_size_and_the_photos_row(self):
        result = tu.run_benchmark(
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
        )
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertRegex(result.stdout, r"flags: .*; \d+ cpus; tf ")
        rows = re.findall(r"^\| (\d+) px \| (\d+) \| (\d+) \| ([\d.]+) \| (\d+)x \|$", result.stdout, re.MULTILINE)
        self.assertEqual([row[0] for row in rows], ["16", "32"])
        self.assertTrue(all(float(value) > 0 for row in rows for value in row[1:4]))
        photos = re.search(r"^\| images/s \| ([\d.]+) \| ([\d.]+) \| ([\d.]+)x \|$", result.stdout, re.MULTILINE)
        self.assertIsNotNone(photos, result.stdout)
        self.assertTrue(all(float(value) > 0 for value in photos.groups()))
