"""benchmarks/time_to_quality/values.py: finite numbers, and records made strict JSON."""

import math

import tensorflow as tf

from benchmarks.time_to_quality.values import finite_number, json_safe
from tests import testing_utils as tu


class ValuesTest(tu.TestCase):
    def test_a_finite_number_is_an_int_or_float_neither_bool_nor_nan_nor_infinite(self):
        self.assertEqual([finite_number(v) for v in (1, 2.5, 0)], [True] * 3)
        self.assertEqual([finite_number(v) for v in (True, math.nan, -math.inf, None, "1")], [False] * 5)

    def test_nan_and_infinities_are_null_at_any_depth(self):
        value = {"a": [1.0, math.nan, (math.inf, 2)], "b": {"c": -math.inf, "d": "x"}}
        self.assertEqual(json_safe(value), {"a": [1.0, None, [None, 2]], "b": {"c": None, "d": "x"}})


if __name__ == "__main__":
    tf.test.main()
