"""benchmarks/fit_calls.py: a tiny run prints a row per way of calling, its ratios, and fits the
updates it says; bad flags are usage errors. Run in this process with flags of its own."""

import contextlib
import io
import os
import re
import sys
from unittest import mock

from absl import app

import tf_fusedprop as fp
from tests import testing_utils as tu
from tf_fusedprop.experiment import train_lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The benchmark scripts import their sibling `machine` as a top-level module, as when run.
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import fit_calls  # noqa: E402


class FitCallsTest(tu.TestCase):
    def test_a_tiny_run_prints_a_row_per_way_of_calling_and_the_ratios(self):
        out = io.StringIO()
        argv = ["fit_calls.py", "--config=configs/ring8.py", "--config.batch_size=16", "--config.generator.units=8"]
        argv += [
            "--config.discriminator.units=8",
            "--config.generator.hidden_layers=1",
            "--config.discriminator.hidden_layers=1",
        ]
        argv += ["--every=2", "--calls=4", "--updates=4", "--rounds=2"]
        gans, build_gan = [], train_lib.build_gan

        def built(*args, **kwargs):
            gans.append(build_gan(*args, **kwargs))
            return gans[-1]

        with contextlib.redirect_stdout(out), mock.patch.object(train_lib, "build_gan", built):
            result = fit_calls.run(argv)
        printed = out.getvalue()
        names = ["fused x 4", "alternating x 4", "fused x 1", "periodic x 1", "periodic x 4", "fused+gap x 4"]
        self.assertEqual(list(result), names)
        for name in names:
            self.assertRegex(printed, rf"\n{re.escape(name)} +\d+\.\d{{3}} ms \(rounds: \d+\.\d{{3}} \d+\.\d{{3}}\)\n")
            self.assertGreater(result[name], 0)
        self.assertIn("config=ring8 (network mlp, batch 16, precision", printed)
        modelled = (result["fused x 4"] + result["alternating x 4"]) / 2
        self.assertIn(f"periodic x 4 / modelled: {result['periodic x 4'] / modelled:.3f}\n", printed)
        self.assertIn(f"periodic x 1 / periodic x 4: {result['periodic x 1'] / result['periodic x 4']:.3f}\n", printed)
        self.assertIn(f"fused+gap x 4 / fused x 4: {result['fused+gap x 4'] / result['fused x 4']:.3f}\n", printed)
        # The last row read the gap on each of its 16 updates (8 traced, 8 timed) and never alternated.
        self.assertEqual([isinstance(gan.schedule, fp.schedules.Auto) for gan in gans], [False] * 5 + [True])
        auto = gans[-1].schedule
        self.assertEqual((auto.signal, auto.every, auto.window, auto.hold), ("logit_gap", 1, 10, 4))  # hold: a call
        self.assertEqual(int(auto._state["alternated"].numpy()), 0)
        self.assertNotEqual(float(auto._state["mean"].numpy()), 0.0)  # a window of readings decided

    def test_bad_flags_are_usage_errors(self):
        for argv, message in (
            ([], "--config is required"),
            (["--config=configs/ring8.py", "--every=1"], "--every >= 2"),
            (["--config=configs/ring8.py", "--every=4", "--calls=6"], "--calls a multiple of --every"),
        ):
            with self.assertRaisesRegex(app.UsageError, message):
                fit_calls.run(["fit_calls.py", *argv])
