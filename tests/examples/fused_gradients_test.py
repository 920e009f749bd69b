"""examples/fused_gradients.py: its exactness table, in a fresh process, with no TensorFlow start-up lines."""

import os
import re

import tensorflow as tf

from tests import testing_utils as tu

SCRIPT = 'import runpy; runpy.run_path("examples/fused_gradients.py", run_name="__main__")'


class FusedGradientsExampleTest(tu.TestCase):
    def test_every_form_is_exact_and_nothing_else_is_printed(self):
        env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
        result = tu.run_script(SCRIPT, timeout=600, env=env)
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        self.assertEqual(result.stderr, "")  # TensorFlow's start-up lines are hidden
        rows = [line.split() for line in result.stdout.splitlines()[1:] if line.strip()]
        self.assertLen(rows, 14)  # 5 losses x 3 forms, but hinge with fused
        for loss, form, *differences in rows:
            f32, f64, f32_all, f64_all = map(float, differences)
            self.assertLess(max(f32, f32_all), 1e-5, msg=f"{loss}/{form}")
            self.assertLess(max(f64, f64_all), 1e-12, msg=f"{loss}/{form}")
        self.assertTrue(re.match(r"^loss +form +float32 +float64", result.stdout))


if __name__ == "__main__":
    tf.test.main()
