"""The TF-GAN oracle's loader: a test that cannot load it skips, except under CI, where it fails."""

import unittest

import tensorflow as tf

from tests import testing_utils as tu
from tests import tfgan_oracle


class RequireTest(tu.TestCase):
    def outcome(self, environ):
        """What a test that requires a module TF-GAN does not have ends as, under `environ`."""

        class Requiring(unittest.TestCase):
            def test(self):
                tfgan_oracle.require(self, "python.no_such_module", environ=environ)

        result = unittest.TestResult()
        Requiring("test").run(result)
        return [len(result.skipped), len(result.failures)], (result.skipped + result.failures)[0][1]

    def test_skips_with_the_reason_outside_ci_and_fails_under_ci(self):
        counts, reason = self.outcome({})
        self.assertEqual(counts, [1, 0])
        self.assertIn("TF-GAN's python.no_such_module cannot be loaded here", reason)
        counts, message = self.outcome({"CI": "true"})
        self.assertEqual(counts, [0, 1])
        self.assertIn("CI is set: the test extra must install the oracle", message)

    def test_the_installed_oracle_loads(self):
        self.assertTrue(hasattr(tfgan_oracle.require(self, "python.losses.losses_impl"), "modified_generator_loss"))


if __name__ == "__main__":
    tf.test.main()
