"""benchmarks/time_to_quality/grid.py: a grid's resume policy (which runs train, which train
on, which records are kept, which results.json is refused) and its files, without training."""

import os

import tensorflow as tf

from benchmarks.time_to_quality.environment import environment
from benchmarks.time_to_quality.grid import Grid, lengthened, newer_record
from benchmarks.time_to_quality.plan import Run, estimate, make_config
from tests import testing_utils as tu
from tf_fusedprop.experiment import config as fp_config
from tf_fusedprop.experiment import files
from tf_fusedprop.experiment.config import ConfigError


class PolicyTest(tu.TestCase):
    def test_only_a_longer_schedule_of_a_modelled_task_is_trained_on(self):
        def values(task, **changes):
            config = make_config(Run(task, "nonsaturating", "fused", 0), cache_dir="c")
            config.update(changes)
            return fp_config.json_values(config)

        self.assertTrue(lengthened("digits32", values("digits32"), values("digits32", steps=8000)))
        self.assertFalse(lengthened("digits32", values("digits32"), values("digits32", steps=1000)))
        self.assertFalse(lengthened("digits32", values("digits32"), values("digits32", steps=8000, seed=1)))
        self.assertFalse(lengthened("digits", values("digits"), values("digits", steps=8000)))

    def test_a_failed_lengthening_keeps_the_finished_record(self):
        done, failed, retried = {"status": "done"}, {"status": "error", "error": "x"}, {"status": "done"}
        self.assertIs(newer_record(done, failed), done)
        self.assertIs(newer_record(done, retried), retried)
        again = {"status": "error", "error": "y"}
        self.assertIs(newer_record(failed, again), again)  # an error replaces an error
        self.assertIs(newer_record(None, failed), failed)


class GridTest(tu.TestCase):
    def setUp(self):
        super().setUp()
        self.out = os.path.join(self.get_temp_dir(), "grid")

    def stored(self, runs=(), **fields):
        """results.json in `out` holding `runs` (`(Run, status, config overrides)`) and `fields`."""
        os.makedirs(self.out, exist_ok=True)
        records = [
            {**_named(run), "status": status, "config": fp_config.json_values(make_config(run, overrides=overrides))}
            for run, status, overrides in runs
        ]
        files.write_json(os.path.join(self.out, "results.json"), {"runs": records, **fields})

    def test_runs_never_run_or_failed_train_a_finished_one_does_not_and_another_config_is_refused(self):
        alternating, fused = (Run("ring8", "nonsaturating", form, 0) for form in ("alternating", "fused"))
        self.stored([(alternating, "error", ()), (fused, "done", ())])
        grid = Grid(self.out, "grid")
        self.assertEqual(grid.plan(["ring8"], ["alternating", "fused"], {"ring8": 2}, ["nonsaturating"]), [])
        grid.resume()
        self.assertEqual(
            [r.id for r, _ in grid.todo],
            [
                "ring8-nonsaturating-alternating-s0",
                "ring8-nonsaturating-alternating-s1",
                "ring8-nonsaturating-fused-s1",
            ],
        )
        self.assertEqual((len(grid.runs), grid.done, grid.lengthenings), (4, 1, {}))
        self.assertEqual(grid.estimates(), [estimate(r, c) for r, c in grid.todo])
        self.assertEqual(grid.finished(), 1)
        grid.plan(["ring8"], ["alternating", "fused"], {"ring8": 1}, ["nonsaturating"], overrides=["g_lr=5e-4"])
        with self.assertRaisesRegex(ConfigError, "holds run ring8-nonsaturating-fused-s0 with another config"):
            grid.resume()
        self.assertEqual([r.id for r, _ in grid.todo], ["ring8-nonsaturating-alternating-s0"])  # the runs before it

    def test_only_the_seeds_asked_for_train_now_the_others_are_deferred_not_counted_done(self):
        runs = [Run("ring8", "nonsaturating", "fused", seed) for seed in range(3)]
        self.stored([(runs[0], "done", ()), (runs[1], "error", ())])
        grid = Grid(self.out, "grid")
        grid.plan(["ring8"], ["fused"], {"ring8": 3}, ["nonsaturating"])
        grid.resume(seeds={2})
        self.assertEqual([r.id for r, _ in grid.todo], [runs[2].id])
        self.assertEqual([r.id for r in grid.deferred], [runs[1].id])  # the finished seed 0 is neither
        self.assertEqual(grid.done, 1)
        grid.resume(seeds={0, 1})
        self.assertEqual(([r.id for r, _ in grid.todo], grid.deferred, grid.done), ([runs[1].id], [runs[2]], 1))
        grid.resume()
        self.assertEqual(([r.id for r, _ in grid.todo], grid.deferred), ([runs[1].id, runs[2].id], []))

    def test_a_finished_run_of_a_longer_schedule_trains_on_for_the_updates_it_has_left(self):
        run = Run("digits32", "nonsaturating", "fused", 0)
        self.stored([(run, "done", ())])
        steps = make_config(run).steps
        grid = Grid(self.out, "grid")
        grid.plan(["digits32"], ["fused"], {"digits32": 1}, ["nonsaturating"], overrides=[f"steps={2 * steps}"])
        grid.resume()
        self.assertEqual(grid.lengthenings, {run.id: (steps, 2 * steps)})
        self.assertEqual(grid.estimates(), [estimate(run, grid.todo[0][1], trained_steps=steps)])

    def test_the_stored_seconds_references_environment_and_description_are_kept(self):
        reference = os.path.join(self.get_temp_dir(), "reference")
        os.makedirs(reference)
        files.write_json(os.path.join(reference, "results.json"), {"runs": []})
        self.stored(environment=environment(), grid="stored grid", seconds_per_update={"alternating": 0.3})
        grid = Grid(self.out, "this grid", {"fused": 0.24, "alternating": 0.35}, [reference, reference])
        self.assertEqual(grid.seconds_per_update, {"alternating": 0.35, "fused": 0.24})  # the given win
        self.assertEqual(grid.references, [reference])
        grid.report()
        stored = files.read_json(grid.path)
        self.assertEqual((stored["grid"], stored["references"]), ("stored grid", [reference]))
        self.assertEqual(stored["seconds_per_update"], {"alternating": 0.35, "fused": 0.24})
        with open(os.path.join(self.out, "results.md")) as f:
            self.assertIn("0 runs; stored grid.", f.read())
        with self.assertRaisesRegex(ConfigError, "--reference=nowhere holds no results.json"):
            Grid(self.out, "this grid", references=["nowhere"])


def _named(run):
    return {"id": run.id, "task": run.task, "loss": run.loss, "form": run.form, "seed": run.seed, "row": run.row}


if __name__ == "__main__":
    tf.test.main()
