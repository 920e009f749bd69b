"""benchmarks/time_to_quality/plan.py: the runs of a grid, their configs, which are the same,
and their estimated seconds."""

import os

import tensorflow as tf
from absl.testing import parameterized

from benchmarks.time_to_quality.plan import Run, comparable, distinct, estimate, make_config, plan
from benchmarks.time_to_quality.tasks import DEFAULT_TASKS, FORMS, HINGE_FORMS, TASKS
from configs import digits, digits32, grid25, mnist, mnist1k64, mnist64, ring8
from tests import testing_utils as tu
from tests.benchmarks.time_to_quality.fixtures import read_results
from tf_fusedprop.experiment import config as fp_config

#: Each task's seeds of the full grid.
SEEDS = {name: task.seeds for name, task in TASKS.items()}


class PlanTest(tu.TestCase):
    def test_the_full_grid_is_seed_major_with_hinge_on_one_task(self):
        runs = plan(list(DEFAULT_TASKS), FORMS, SEEDS)
        self.assertLen(runs, 5 * (5 + 3) + 5 * 5 + 3 * 5)
        self.assertEqual(
            [r.id for r in runs[:9]],
            [f"ring8-nonsaturating-{f}-s0" for f in FORMS]
            + [f"ring8-hinge-{f}-s0" for f in HINGE_FORMS]
            + ["grid25-nonsaturating-alternating-s0"],
        )
        self.assertEqual([r.seed for r in runs], sorted(r.seed for r in runs))
        self.assertEqual(max(r.seed for r in runs if r.task == "digits"), 2)
        self.assertEqual({r.loss for r in runs if r.task != "ring8"}, {"nonsaturating"})
        self.assertLen(plan(["ring8"], ["fused"], SEEDS, losses=["nonsaturating"]), 5)

    def test_the_image_gans_at_sngan_widths_run_on_request_only(self):
        self.assertEqual(DEFAULT_TASKS, ("ring8", "grid25", "digits"))
        runs = plan(["mnist", "digits32"], ["alternating", "fused"], SEEDS, losses=["nonsaturating"])
        self.assertEqual(
            [r.id for r in runs[:4]],
            [f"{t}-nonsaturating-{f}-s0" for t in ("mnist", "digits32") for f in ("alternating", "fused")],
        )
        self.assertLen(runs, 12)

    @parameterized.parameters(
        ("ring8", ring8),
        ("grid25", grid25),
        ("digits", digits),
        ("mnist", mnist),
        ("digits32", digits32),
        ("mnist64", mnist64),
        ("mnist1k64", mnist1k64),
    )
    def test_configs_are_the_shipped_ones_with_loss_form_and_seed(self, task, module):
        config = make_config(Run(task, "nonsaturating", "simultaneous", 3), cache_dir="/c")
        expected = module.get_config()
        expected.update(form="simultaneous", seed=3, cache_dir="/c")
        self.assertEqual(fp_config.json_values(config), fp_config.json_values(expected))
        quick = make_config(Run(task, "nonsaturating", "fused", 0), quick=True, overrides=["g_lr=5e-4"])
        self.assertEqual((quick.steps, quick.g_lr), (TASKS[task].quick["steps"], 5e-4))

    @parameterized.parameters(
        ("mnist", {"quality_periodic_mnist": "fused", "quality_augment_long": "alternating"}),
        ("digits32", {"quality_plateau": "alternating,fused"}),
    )
    def test_the_shipped_image_configs_are_the_ones_their_tracked_grid_measured(self, task, grids):
        # The numbers the README quotes for these configs come from these grids (per form: the
        # shipped fused form's and its alternating baseline's): a config edit (or one inherited,
        # digits32 from mnist) must not leave them describing another config.
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        records = [
            record
            for grid, forms in grids.items()
            for record in read_results(os.path.join(root, "benchmarks", "results", grid))["runs"]
            if record["task"] == task and record["form"] in forms.split(",")
        ]
        self.assertLen([r for r in records if r["status"] == "done"], 6)
        for rec in records:  # the shipped config itself, whatever row of its grid measured it
            config = make_config(Run(task, rec["loss"], rec["form"], rec["seed"]))
            self.assertEqual(comparable(rec["config"]), comparable(fp_config.json_values(config)), rec["id"])

    def test_a_stabilizer_that_leaves_a_runs_effective_config_unchanged_makes_no_run(self):
        runs = [
            Run("grid25", "nonsaturating", form, 0, stabilizer)
            for stabilizer in (
                "defaults",
                "lookahead_everywhere",
                "no_ema",
                "warmup250",
                "alternate_every4",
                "warmup500_g_lr_x1.5",
                "warmup100_mix4",
            )
            for form in ("alternating", "fused")
        ]
        kept, left_out = distinct([(run, make_config(run)) for run in runs])
        # grid25 gives Lookahead to fused already: "everywhere" changes alternating's run only; a
        # warm start of alternating (G's rate changed after it too), or a periodic mix
        # (steps_per_execution=1 for it: how many steps one call runs, not what is trained),
        # or both, changes fused's only.
        self.assertEqual(
            left_out,
            [
                "grid25-nonsaturating-fused+lookahead_everywhere-s0",
                "grid25-nonsaturating-alternating+warmup250-s0",
                "grid25-nonsaturating-alternating+alternate_every4-s0",
                "grid25-nonsaturating-alternating+warmup500_g_lr_x1.5-s0",
                "grid25-nonsaturating-alternating+warmup100_mix4-s0",
            ],
        )
        self.assertLen(kept, 9)

    def test_bad_overrides_are_config_errors(self):
        run = Run("ring8", "nonsaturating", "fused", 0)
        for override, message in (("g_lr", "KEY=VALUE"), ("nope=1", "unknown config key"), ("g_lr=-1", "g_lr")):
            with self.assertRaisesRegex(fp_config.ConfigError, message):
                make_config(run, overrides=[override])


class EstimateTest(tu.TestCase):
    def test_a_lengthened_run_is_estimated_for_the_updates_it_has_left(self):
        run = Run("mnist", "nonsaturating", "fused", 0)
        config = make_config(run, cache_dir="c", overrides=("steps=12000",))
        fixed, per_step, per_eval = TASKS["mnist"].cost
        evals = 12000 // config.steps_per_epoch // config.eval_every
        self.assertAlmostEqual(estimate(run, config), fixed + 12000 * per_step + evals * per_eval)
        # 8,000 of 12,000 done: a third of the updates and of the evaluations left.
        self.assertAlmostEqual(
            estimate(run, config, trained_steps=8000), fixed + 4000 * per_step + evals / 3 * per_eval
        )


if __name__ == "__main__":
    tf.test.main()
