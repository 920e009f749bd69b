"""README.md: every Python block runs as written, each in a fresh process in an empty directory."""

import os
import re
import subprocess
import sys

import tensorflow as tf

from tests import testing_utils as tu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python_blocks(path=os.path.join(ROOT, "README.md")):
    """The ```python blocks of a Markdown file, in order."""
    with open(path) as f:
        return re.findall(r"^```python\n(.*?)^```$", f.read(), flags=re.MULTILINE | re.DOTALL)


class ReadmeTest(tu.TestCase):
    def test_there_are_blocks_to_run(self):
        self.assertGreaterEqual(len(python_blocks()), 2)

    def test_every_python_block_runs_as_written(self):
        for index, block in enumerate(python_blocks()):
            directory = os.path.join(self.get_temp_dir(), f"block_{index}")
            os.makedirs(directory)
            result = subprocess.run(
                [sys.executable, "-c", block],
                cwd=directory,
                capture_output=True,
                text=True,
                timeout=600,
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ROOT},
            )
            self.assertEqual(result.returncode, 0, f"block {index}:\n{block}\n{result.stderr[-3000:]}")


if __name__ == "__main__":
    tf.test.main()
