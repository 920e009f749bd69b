"""benchmarks/stray_signal.py: the probe's numbers beside each run's quality, from a grid's records."""

import json
import os
import sys

from tests import testing_utils as tu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import stray_signal  # noqa: E402


def run(seed, fids, strays, form="fused"):
    history = [
        {"step": 250 * (i + 1), "metrics": {"fid": fid, "kid": 1.0}, "stray": stray, "stray_cosine": 0.9}
        for i, (fid, stray) in enumerate(zip(fids, strays))
    ]
    return {"task": "mnist", "form": form, "stabilizer": "defaults", "seed": seed, "history": history}


class StraySignalTest(tu.TestCase):
    def test_a_table_row_and_a_line_per_probed_run(self):
        out = self.get_temp_dir()
        unprobed = {
            "task": "mnist",
            "form": "alternating",
            "seed": 0,
            "history": [{"step": 250, "metrics": {"fid": 9.0}}],
        }
        runs = [run(1, [700.0, 12.5], [0.05, 0.25]), run(0, [650.0], [0.125]), unprobed]
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump({"runs": runs}, f)

        stray_signal.main([out])

        with open(os.path.join(out, "stray.md")) as f:
            text = f.read()
        self.assertIn("| run | 250 | 500 |", text)
        self.assertIn("| fused s0 | 650 / 0.12 / 0.9 |  |", text)  # seed order; a missing evaluation stays empty
        self.assertIn("| fused s1 | 700 / 0.05 / 0.9 | 12.5 / 0.25 / 0.9 |", text)
        self.assertNotIn("alternating", text.split("\n\n", 2)[2])  # not probed: no row
        self.assertTrue(os.path.getsize(os.path.join(out, "stray.png")) > 1000)

    def written(self, runs, signal, stem):
        """The page `stray_signal.py --signal=SIGNAL` writes from a grid of `runs` (its figure checked)."""
        out = self.get_temp_dir()
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump({"runs": runs}, f)
        stray_signal.main([out, f"--signal={signal}"])
        self.assertTrue(os.path.getsize(os.path.join(out, f"{stem}.png")) > 1000)
        with open(os.path.join(out, f"{stem}.md")) as f:
            return f.read()

    def test_d_logits_gap_beside_quality_for_every_run_that_recorded_them(self):
        logged = run(0, [700.0, 12.5], [0.1, 0.2], form="alternating")
        for entry, (real, fake) in zip(logged["history"], ((5.5, -1.25), (0.75, -0.5))):
            entry.update(real_logit=real, fake_logit=fake)
        text = self.written([logged, run(1, [650.0], [0.125])], "logit_gap", "logits")  # seed 1: before the logits
        self.assertIn("### mnist: fid / real / fake / gap at each evaluation", text)
        self.assertIn("| alternating s0 | 700 / 5.5 / -1.2 / 6.8 | 12.5 / 0.75 / -0.5 / 1.2 |", text)
        self.assertNotIn("s1", text)  # no logits recorded: no row

    def test_g_spread_and_coverage_beside_quality_for_every_run_that_recorded_them(self):
        for signal, key in (("spread", "fake_spread"), ("coverage", "fake_coverage")):
            logged = run(2, [750.0, 120.0], [0.1, 0.2])
            for entry, value in zip(logged["history"], (0.03125, 0.5)):
                entry[key] = value
            text = self.written([logged, run(1, [650.0], [0.125])], signal, signal)  # seed 1: recorded before
            self.assertIn(f"### mnist: fid / {signal} at each evaluation", text)
            self.assertIn("| fused s2 | 750 / 0.031 | 120 / 0.5 |", text)
            self.assertNotIn("s1", text)

    def test_grids_without_a_probed_run_say_so(self):
        out = self.get_temp_dir()
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump({"runs": []}, f)
        with self.assertRaises(SystemExit) as stopped:
            stray_signal.main([out])
        self.assertEqual(stopped.exception.code, 1)
