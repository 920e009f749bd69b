"""benchmarks/adam.py: both optimizers make the same update of every variable of the pair."""

import os
import sys

from tests import testing_utils as tu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import adam  # noqa: E402


class AdamBenchmarkTest(tu.TestCase):
    def test_both_optimizers_make_the_same_first_update_of_every_variable(self):
        functions, variables = adam.update_functions("mlp")
        self.assertEqual(list(functions), ["keras.optimizers.Adam", "tf_fusedprop.optimizers.Adam"])
        start = [v.numpy() for v in variables]
        deltas = []
        for fn in functions.values():
            fn()
            deltas.append([v.numpy() - s for v, s in zip(variables, start)])
            for v, s in zip(variables, start):
                v.assign(s)
        self.assertLen(deltas[0], len(variables))
        # Adam's first step moves every parameter by lr * sign(gradient): 2e-4 (less where the
        # gradient is not much larger than epsilon); the two round alpha differently (~1e-5),
        # and a difference of weights of ~0.1 is a multiple of their ulp, 1.5e-8
        self.assertAllClose(deltas[0], deltas[1], rtol=1e-4, atol=5e-8)
        self.assertAllClose([abs(d).max() for d in deltas[0]], [2e-4] * len(variables), rtol=1e-3)
