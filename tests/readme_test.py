"""README.md: every Python block runs as written, in a fresh process, each in an empty directory."""

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


RUN_BLOCKS = """
import os, sys
from tests import readme_test
for index, (block, directory) in enumerate(zip(readme_test.python_blocks(), sys.argv[1:])):
    os.chdir(directory)
    try:
        exec(compile(block, f"README.md block {index}", "exec"), {"__name__": "__main__"})
    except BaseException:
        print(f"block {index}:\\n{block}", file=sys.stderr)
        raise
print("BLOCKS_RUN", index + 1)
"""


class ReadmeTest(tu.TestCase):
    def test_there_are_blocks_to_run(self):
        self.assertGreaterEqual(len(python_blocks()), 2)

    def test_every_python_block_runs_as_written(self):
        """In one fresh process, each block in its own namespace and empty directory: a block
        that relies on another's imports or files fails as it would for a reader."""
        directories = [os.path.join(self.get_temp_dir(), f"block_{i}") for i in range(len(python_blocks()))]
        for directory in directories:
            os.makedirs(directory)
        result = subprocess.run(
            [sys.executable, "-c", RUN_BLOCKS, *directories],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ROOT},
        )
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        self.assertEqual(tu.marked_lines(result.stdout)["BLOCKS_RUN"], str(len(directories)))


if __name__ == "__main__":
    tf.test.main()
