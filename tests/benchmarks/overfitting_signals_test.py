"""benchmarks/overfitting_signals.py: the candidate signals from D's logits on three sets of images."""

import json
import os
import sys

import numpy as np

from tests import testing_utils as tu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import overfitting_signals  # noqa: E402


class SignalsTest(tu.TestCase):
    def test_each_signal_from_known_logits(self):
        train = np.array([3.0, 1.0, -1.0, 2.0])
        held = np.array([1.0, 0.0, -2.0, 2.0])
        fake = np.array([-3.0, -1.0, -2.0, 0.0])
        signals = overfitting_signals.signals(train, held, fake)
        self.assertEqual(signals["r_t"], 0.5)  # signs +, +, -, +
        self.assertAlmostEqual(signals["r_v"], (1.25 - 0.25) / (1.25 + 1.5))
        # Pairs (train, held) with train above: 3>all 4, 1>0,-2 (and ties 1=1 half), -1>-2, 2>1,0,-2 (tie 2=2 half).
        self.assertAlmostEqual(signals["auc_train_held"], (4 + 2.5 + 1 + 3.5) / 16)
        self.assertAlmostEqual(signals["auc_real_fake"], (4 + 4 + 2.5 + 4) / 16)
        self.assertEqual((signals["logit_train"], signals["logit_held"], signals["logit_fake"]), (1.25, 0.25, -1.5))

    def test_a_d_that_cannot_tell_the_sets_apart_is_at_chance(self):
        logits = np.random.default_rng(0).standard_normal(4000)
        signals = overfitting_signals.signals(logits[:2000], logits[2000:], logits[2000:])
        self.assertLess(abs(signals["auc_train_held"] - 0.5), 0.03)
        self.assertLess(abs(signals["auc_real_fake"] - 0.5), 0.03)


class ReportTest(tu.TestCase):
    def test_the_table_has_a_row_per_evaluation_of_each_run(self):
        out = self.get_temp_dir()
        lines = [{"step": 250, "fid": 700.0, "auc_train_held": 0.5}, {"step": 500, "fid": 12.5, "auc_train_held": 0.75}]
        with open(os.path.join(out, "none_seed0.jsonl"), "w") as f:
            f.write("".join(json.dumps(line) + "\n" for line in lines))
        runs = overfitting_signals.read_runs(out)
        self.assertEqual(runs, {"none_seed0": lines})
        self.assertEqual(
            overfitting_signals.table(runs).splitlines()[-2:], ["| 250 | 700 | 0.5 |", "| 500 | 12.5 | 0.75 |"]
        )

    def test_the_seed_summary_has_a_row_per_setting_with_the_mean_over_its_seeds(self):
        runs = {
            "none_seed0": [{"step": 250, "fid": 10.0}, {"step": 500, "fid": 4.0}, {"step": 750, "fid": 8.0}],
            "none_seed1": [{"step": 250, "fid": 20.0}, {"step": 500, "fid": 6.0}],
            "adaptive_held_out64_seed2": [{"step": 250, "fid": 30.0}],
        }
        self.assertEqual(list(overfitting_signals.by_setting(runs)), ["none", "adaptive_held_out64"])
        lines = overfitting_signals.seed_summary(runs).splitlines()
        self.assertEqual(lines[0], "| setting | seeds | 250 | 500 | 750 | best per seed (update) |")
        # std with ddof 1: 10 and 20 -> 7.07; 4 and 6 -> 1.41
        self.assertEqual(lines[2], "| none | 0, 1 | 15 ± 7.1 | 5 ± 1.4 | 8 | s0 4 (500); s1 6 (500) |")
        self.assertEqual(lines[3], "| adaptive_held_out64 | 2 | 30 |  |  | s2 30 (250) |")
