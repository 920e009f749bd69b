"""_checks: the package's shared argument checks and their one-line messages."""

import re

import numpy as np

from tests import testing_utils as tu
from tf_fusedprop._checks import Registry, positive_int


class PositiveIntTest(tu.TestCase):
    def test_accepts_integers_from_one(self):
        self.assertEqual(positive_int("n", 1), 1)
        self.assertEqual(positive_int("n", np.int64(7)), 7)
        self.assertIsInstance(positive_int("n", np.int64(7)), int)

    def test_refuses_in_one_line_naming_the_argument(self):
        for value in (0, -3, 2.0, True, "4", None):
            with self.assertRaisesRegex(
                ValueError, rf"^iter_size must be a positive integer. Received: iter_size={value!r}$"
            ):
                positive_int("iter_size", value)


class RegistryTest(tu.TestCase):
    def test_names_and_the_entry_or_the_valid_names_in_one_line(self):
        registry = Registry("thing", {"b": 2, "a": 1})
        self.assertEqual(
            (registry.get("a"), registry.names(), "a" in registry, ["a"] in registry), (1, ("b", "a"), True, False)
        )
        for name in ("c", None, ["a"]):
            with self.assertRaisesRegex(
                ValueError, "^" + re.escape(f"Unknown thing. Received: name={name!r}. Valid names: b, a.") + "$"
            ):
                registry.get(name)
        forms = Registry("training form", {"fused": 1}, argument="form", plural="forms")
        with self.assertRaisesRegex(ValueError, r"^Unknown training form. Received: form='x'. Valid forms: fused.$"):
            forms.get("x")
