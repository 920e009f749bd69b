"""benchmarks/startup.py: a tiny folder, trained for one step twice, prints both rows.

The script runs in this process (`startup.run`, its flags parsed into flags of its own); the two
train.py runs it times are fresh processes, as on the command line."""

import contextlib
import io
import os
import re
import sys

from tests import testing_utils as tu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The benchmark scripts import their sibling `machine` as a top-level module, as when run.
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import startup  # noqa: E402


class StartupTest(tu.TestCase):
    def test_a_tiny_folder_prints_the_first_and_the_cached_run(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                startup.run(
                    [
                        "startup.py",
                        "--images=8",
                        "--size=8",
                        "--source_size=12",
                        "--override=generator.width=16",
                        "--override=discriminator.width=4",
                        "--override=batch_size=4",
                    ]
                )
            except SystemExit as err:  # a train.py run failed: its output's end
                self.fail(f"startup.py exited: {str(err)[-2000:]}\n{out.getvalue()[-2000:]}")
        stdout = out.getvalue()
        self.assertRegex(stdout, r"flags: .*; \d+ cpus; tf ")
        rows = re.findall(
            r"^\| (first run \(empty cache\)|cached run) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$",
            stdout,
            re.MULTILINE,
        )
        self.assertEqual([row[0] for row in rows], ["first run (empty cache)", "cached run"])
        for _, images, first_step, total in rows:
            self.assertLess(float(images), float(first_step))
            self.assertLessEqual(float(first_step), float(total))
