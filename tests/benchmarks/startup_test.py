"""benchmarks/startup.py: a tiny folder, trained for one step twice, prints both rows."""

import re

from tests import testing_utils as tu


class StartupTest(tu.TestCase):
    def test_a_tiny_folder_prints_the_first_and_the_cached_run(self):
        result = tu.run_benchmark(
            "startup.py",
            "--images=8",
            "--size=8",
            "--source_size=12",
            "--override=generator.width=16",
            "--override=discriminator.width=4",
            "--override=batch_size=4",
        )
        self.assertEqual(result.returncode, 0, result.stderr[-2000:] + result.stdout[-2000:])
        self.assertRegex(result.stdout, r"flags: .*; \d+ cpus; tf ")
        rows = re.findall(
            r"^\| (first run \(empty cache\)|cached run) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$",
            result.stdout,
            re.MULTILINE,
        )
        self.assertEqual([row[0] for row in rows], ["first run (empty cache)", "cached run"])
        for _, images, first_step, total in rows:
            self.assertLess(float(images), float(first_step))
            self.assertLessEqual(float(first_step), float(total))
