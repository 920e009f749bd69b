"""benchmarks/time_to_quality/results.py: a grid's files, with another grid's runs reported
beside its own (cut at its schedule), not stored."""

import os

import tensorflow as tf

from benchmarks.time_to_quality.environment import environment
from benchmarks.time_to_quality.plan import Run, make_config
from benchmarks.time_to_quality.results import reference_records, write_results
from benchmarks.time_to_quality.runs import record
from tests import testing_utils as tu
from tests.benchmarks.time_to_quality.fixtures import entry, plateau_records, read_results
from tf_fusedprop.experiment import config as fp_config


class ReferenceTest(tu.TestCase):
    def test_a_tracked_grids_runs_are_reported_beside_a_shorter_one_cut_at_its_schedule(self):
        tracked = self.get_temp_dir()
        write_results(tracked, plateau_records(), environment(), "tracked", plot=False)
        screen = []
        for seed in (0, 1):
            run = Run("mnist", "nonsaturating", "fused", seed, "warmup500")
            config = make_config(run)
            config.update(steps=1000, steps_per_epoch=500)
            history = [entry(500, 100.0, fid=30.0, kid=0.1), entry(1000, 200.0, fid=12.0, kid=0.1)]
            screen.append(record(run, config, {"steps": 1000, "train_seconds": 200.0}, history, 300.0))
        references = reference_records(tracked, screen)
        self.assertEqual(
            sorted(r["id"] for r in references),
            [f"mnist-nonsaturating-{f}-s{s}" for f in ("alternating", "fused") for s in (0, 1)],
        )
        self.assertEqual({r["config"]["steps"] for r in references}, {1000})
        self.assertEqual({len(r["history"]) for r in references}, {2})
        by_id = {r["id"]: r for r in references}
        self.assertEqual(by_id["mnist-nonsaturating-alternating-s1"]["final"]["fid"], 25.0)  # its FID at 1,000
        out = self.get_temp_dir() + "/screen"
        os.makedirs(out)
        write_results(out, screen, environment(), "screen", plot=False, references=[tracked])
        self.assertEqual(len(read_results(out)["runs"]), 2)  # the references are reported, not stored
        self.assertEqual(read_results(out)["references"], [tracked])
        with open(os.path.join(out, "results.md")) as f:
            table = f.read()
        self.assertIn(f"Rows alternating, fused: the runs of {tracked} (these seeds, cut at this schedule)", table)
        # the threshold is alternating's at 1,000 updates: 1.1 x mean(20, 25)
        self.assertIn("| mnist | nonsaturating | fused+warmup500 | 2 | 0 |", table)
        self.assertIn("FID <= 24.75 (1.1x alternating's mean final FID)", table)
        with self.assertRaisesRegex(fp_config.ConfigError, "holds no results.json"):
            reference_records(out + "/nothing", screen)
        # a row and seed this grid trained itself (alternating seed 0, here) is its own, not the reference's
        run = Run("mnist", "nonsaturating", "alternating", 0)
        config = make_config(run)
        config.update(steps=1000, steps_per_epoch=500)
        history = [entry(500, 100.0, fid=30.0, kid=0.1), entry(1000, 200.0, fid=15.0, kid=0.1)]
        own = record(run, config, {"steps": 1000, "train_seconds": 200.0}, history, 300.0)
        references = reference_records(tracked, [*screen, own])
        self.assertNotIn("mnist-nonsaturating-alternating-s0", [r["id"] for r in references])
        self.assertIn("mnist-nonsaturating-alternating-s1", [r["id"] for r in references])


if __name__ == "__main__":
    tf.test.main()
