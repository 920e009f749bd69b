"""benchmarks/time_to_quality/environment.py: the facts of the machine, and its one-line name."""

import tensorflow as tf

from benchmarks.time_to_quality.environment import environment, machine_of
from tests import testing_utils as tu


class EnvironmentTest(tu.TestCase):
    def test_the_facts_timings_depend_on_and_the_machines_line(self):
        env = environment()
        self.assertEqual(
            set(env),
            {"tensorflow", "keras", "python", "cpu", "cpu_flags", "cpus", "onednn", "inter_op_threads", "load_average"},
        )
        self.assertEqual(env["tensorflow"], tf.__version__)
        self.assertEqual(
            machine_of({"cpu": "CPU A", "cpu_flags": ["avx2", "fma"], "cpus": 2}), "CPU A (avx2 fma, 2 CPUs)"
        )


if __name__ == "__main__":
    tf.test.main()
