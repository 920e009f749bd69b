"""benchmarks/quality.py: the plan, the records (divergence, thresholds) and a tiny --quick grid."""

import contextlib
import dataclasses
import io
import json
import os
import signal
from unittest import mock

import tensorflow as tf
from absl.testing import parameterized
from matplotlib.axes import Axes

from benchmarks import quality
from configs import digits, digits32, grid25, mnist, mnist1k64, mnist64, ring8
from tests import testing_utils as tu
from tf_fusedprop.experiment import config as fp_config
from tf_fusedprop.experiment import interrupt, train_lib

#: --quick shrunk to seconds: 2 epochs of 10 G updates, small evaluations, one seed.
TINY = {
    "ring8": {"steps": 20, "steps_per_epoch": 10, "steps_per_execution": 1, "eval_samples": 200, "grid_samples": 50},
    "grid25": {"steps": 20, "steps_per_epoch": 10, "steps_per_execution": 1, "eval_samples": 200, "grid_samples": 50},
    "digits": {"steps": 20, "steps_per_epoch": 10, "steps_per_execution": 1, "eval_samples": 100, "grid_samples": 16},
}


#: Each task's seeds of the full grid.
SEEDS = {name: task.seeds for name, task in quality.TASKS.items()}


def quiet_run(*args):
    """`quality.run` on `args`; returns (exit status, printed text)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        status = quality.run(["quality.py", *args])
    return status, out.getvalue()


def read_results(out):
    with open(os.path.join(out, "results.json")) as f:
        return json.load(f)


def entry(step, seconds, finite=True, **metrics):
    return {"epoch": step // 10, "step": step, "train_seconds": seconds, "metrics": metrics, "finite": finite}


class PlanTest(tu.TestCase):
    def test_the_full_grid_is_seed_major_with_hinge_on_one_task(self):
        runs = quality.plan(list(quality.DEFAULT_TASKS), quality.FORMS, SEEDS)
        self.assertLen(runs, 5 * (5 + 3) + 5 * 5 + 3 * 5)
        self.assertEqual(
            [r.id for r in runs[:9]],
            [f"ring8-nonsaturating-{f}-s0" for f in quality.FORMS]
            + [f"ring8-hinge-{f}-s0" for f in quality.HINGE_FORMS]
            + ["grid25-nonsaturating-alternating-s0"],
        )
        self.assertEqual([r.seed for r in runs], sorted(r.seed for r in runs))
        self.assertEqual(max(r.seed for r in runs if r.task == "digits"), 2)
        self.assertEqual({r.loss for r in runs if r.task != "ring8"}, {"nonsaturating"})
        self.assertLen(quality.plan(["ring8"], ["fused"], SEEDS, losses=["nonsaturating"]), 5)

    def test_the_image_gans_at_sngan_widths_run_on_request_only(self):
        self.assertEqual(quality.DEFAULT_TASKS, ("ring8", "grid25", "digits"))
        runs = quality.plan(["mnist", "digits32"], ["alternating", "fused"], SEEDS, losses=["nonsaturating"])
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
        config = quality.make_config(quality.Run(task, "nonsaturating", "simultaneous", 3), cache_dir="/c")
        expected = module.get_config()
        expected.update(form="simultaneous", seed=3, cache_dir="/c")
        self.assertEqual(fp_config.json_values(config), fp_config.json_values(expected))
        quick = quality.make_config(quality.Run(task, "nonsaturating", "fused", 0), quick=True, overrides=["g_lr=5e-4"])
        self.assertEqual((quick.steps, quick.g_lr), (quality.TASKS[task].quick["steps"], 5e-4))

    @parameterized.parameters(
        ("mnist", {"quality_periodic_mnist": "fused", "quality_augment_long": "alternating"}),
        ("digits32", {"quality_plateau": "alternating,fused"}),
    )
    def test_the_shipped_image_configs_are_the_ones_their_tracked_grid_measured(self, task, grids):
        # The numbers the README quotes for these configs come from these grids (per form: the
        # shipped fused form's and its alternating baseline's): a config edit (or one inherited,
        # digits32 from mnist) must not leave them describing another config.
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        records = [
            record
            for grid, forms in grids.items()
            for record in read_results(os.path.join(root, "benchmarks", "results", grid))["runs"]
            if record["task"] == task and record["form"] in forms.split(",")
        ]
        self.assertLen([r for r in records if r["status"] == "done"], 6)
        for rec in records:  # the shipped config itself, whatever row of its grid measured it
            config = quality.make_config(quality.Run(task, rec["loss"], rec["form"], rec["seed"]))
            self.assertEqual(
                quality._comparable(rec["config"]), quality._comparable(fp_config.json_values(config)), rec["id"]
            )

    def test_a_stabilizer_that_leaves_a_runs_effective_config_unchanged_makes_no_run(self):
        runs = [
            quality.Run("grid25", "nonsaturating", form, 0, stabilizer)
            for stabilizer in (
                "defaults",
                "lookahead_everywhere",
                "no_ema",
                "warmup250",
                "alternate_every4",
                "warmup500_g_lr_x1.5",
            )
            for form in ("alternating", "fused")
        ]
        kept, left_out = quality.distinct([(run, quality.make_config(run)) for run in runs])
        # grid25 gives Lookahead to fused already: "everywhere" changes alternating's run only; a
        # warm start of alternating (G's rate changed after it too), or a periodic mix
        # (steps_per_execution=1 for it: how many steps one call runs, not what is trained),
        # changes fused's only.
        self.assertEqual(
            left_out,
            [
                "grid25-nonsaturating-fused+lookahead_everywhere-s0",
                "grid25-nonsaturating-alternating+warmup250-s0",
                "grid25-nonsaturating-alternating+alternate_every4-s0",
                "grid25-nonsaturating-alternating+warmup500_g_lr_x1.5-s0",
            ],
        )
        self.assertLen(kept, 8)

    def test_bad_overrides_are_config_errors(self):
        run = quality.Run("ring8", "nonsaturating", "fused", 0)
        for override, message in (("g_lr", "KEY=VALUE"), ("nope=1", "unknown config key"), ("g_lr=-1", "g_lr")):
            with self.assertRaisesRegex(fp_config.ConfigError, message):
                quality.make_config(run, overrides=[override])


class RecordTest(tu.TestCase):
    def setUp(self):
        super().setUp()
        self.run_ = quality.Run("ring8", "nonsaturating", "fused", 0)
        self.config = quality.make_config(self.run_)
        self.config.update(steps=30, steps_per_epoch=10)

    def test_metrics_from_the_first_non_finite_evaluation_on_are_null(self):
        history = [
            entry(10, 1.0, modes_covered=8, high_quality=0.9),
            entry(20, 2.0, False, modes_covered=0, high_quality=0.0),
            entry(30, 3.0, False, modes_covered=0, high_quality=0.0),
        ]
        summary = {"steps": 30, "train_seconds": 3.0}
        rec = quality.record(self.run_, self.config, summary, history, 4.0)
        self.assertEqual(
            (rec["status"], rec["diverged"], rec["diverged_at_step"], rec["final"]), ("diverged", True, 20, None)
        )
        self.assertEqual([e["metrics"]["modes_covered"] for e in rec["history"]], [8, None, None])
        self.assertEqual(quality.time_to_threshold(rec), (1.0, 10))
        # The harness's exact divergence step, where it records one, wins; a NaN metric counts too.
        summary["divergence"] = {"step": 14, "players": ["generator"]}
        rec = quality.record(self.run_, self.config, summary, history, 4.0)
        self.assertEqual(rec["diverged_at_step"], 14)
        history = [entry(10, 1.0, modes_covered=8, high_quality=float("nan"))]
        self.assertEqual(quality.record(self.run_, self.config, None, history, 1.0)["diverged_at_step"], 10)

    def test_a_finished_run_and_its_time_to_threshold(self):
        history = [
            entry(10, 1.0, modes_covered=8, high_quality=0.5),
            entry(20, 2.0, modes_covered=8, high_quality=0.85),
            entry(30, 3.0, modes_covered=7, high_quality=0.9),
        ]
        rec = quality.record(self.run_, self.config, {"steps": 30, "train_seconds": 3.0}, history, 4.0)
        self.assertEqual((rec["status"], rec["final"], rec["train_seconds"]), ("done", history[-1]["metrics"], 3.0))
        self.assertEqual(quality.time_to_threshold(rec), (2.0, 20))
        stopped = quality.record(self.run_, self.config, {"steps": 20, "train_seconds": 2.0}, history[:2], 3.0)
        self.assertEqual((stopped["status"], stopped["final"]), ("stopped", None))
        self.assertNotIn("augment_p", rec["history"][0])
        history[0]["augment_p"] = 0.25  # an adaptive augmentation's probability then, kept
        rec = quality.record(self.run_, self.config, {"steps": 30, "train_seconds": 3.0}, history, 4.0)
        self.assertEqual([e.get("augment_p") for e in rec["history"]], [0.25, None, None])

    def test_median_counts_runs_that_never_reached_as_infinitely_slow(self):
        self.assertEqual(quality._median_or_none([3.0, None, 1.0]), 3.0)
        self.assertIsNone(quality._median_or_none([3.0, None, None]))
        self.assertEqual(quality._median_or_none([4.0, 2.0]), 3.0)


class PlateauThresholdTest(tu.TestCase):
    """mnist and digits32: the threshold is relative to alternating's final FID, and time is
    also modelled as G updates x seconds per update."""

    FIDS = {  # per form, per seed: FID after 500, 1,000 and 1,500 G updates
        "alternating": ([100.0, 20.0, 10.0], [120.0, 25.0, 12.0], [110.0, 11.0, 11.0]),
        "fused": ([150.0, 12.0, 11.0], [200.0, 40.0, 13.0], [130.0, 12.0, 11.5]),
    }

    def records(self):
        records = []
        for form, seeds in self.FIDS.items():
            for seed, fids in enumerate(seeds):
                run = quality.Run("mnist", "nonsaturating", form, seed)
                config = quality.make_config(run)
                config.update(steps=1500, steps_per_epoch=500, alternate_every=0)  # one form per run
                history = [entry(500 * (i + 1), 100.0 * (i + 1), fid=fid, kid=0.1) for i, fid in enumerate(fids)]
                records.append(quality.record(run, config, {"steps": 1500, "train_seconds": 300.0}, history, 400.0))
        return records

    def test_threshold_is_a_tenth_above_alternatings_mean_final_fid(self):
        records = self.records()
        reached, text = quality.thresholds(records)["mnist", "nonsaturating"]
        self.assertEqual(text, "FID <= 12.1 (1.1x alternating's mean final FID)")
        self.assertEqual((reached({"fid": 12.0}), reached({"fid": 12.2})), (True, False))
        by_id = {r["id"]: r for r in records}
        self.assertEqual(quality.time_to_threshold(by_id["mnist-nonsaturating-fused-s0"], reached), (200.0, 1000))
        self.assertIsNone(quality.time_to_threshold(by_id["mnist-nonsaturating-fused-s1"], reached))
        self.assertIsNone(quality.time_to_threshold(by_id["mnist-nonsaturating-fused-s1"]))  # no fixed threshold
        unfinished = quality.thresholds([r for r in records if r["form"] == "fused"])
        self.assertEqual(
            unfinished["mnist", "nonsaturating"][1], "FID <= 1.1x alternating's mean final FID (none finished yet)"
        )

    def test_modelled_time_is_updates_times_seconds_per_update(self):
        seconds = quality.parse_seconds_per_update(["alternating=0.3", "mnist/fused=0.24"])
        rows = {row["form"]: row for row in quality.summarize(self.records(), seconds)}
        self.assertEqual((rows["alternating"]["steps"], rows["fused"]["steps"]), (1500, 1000))
        self.assertEqual(rows["fused"]["reached"], 2)
        fused = rows["fused"]["modelled"]
        self.assertAllClose(
            [fused["threshold_seconds"], fused["threshold_vs_alternating"], fused["schedule_seconds"]],
            [240.0, 240.0 / 450.0, 360.0],
        )
        self.assertAllClose(fused["schedule_vs_alternating"], 0.8)
        table = quality.markdown(self.records(), quality.environment(), "grid", seconds)
        self.assertIn("| mnist | nonsaturating | fused | 0.24 | 1000 | 240 | 0.53x | 1500 | 360 | 0.80x |", table)
        self.assertIn("| 2/3 (FID <= 12.1 (1.1x alternating's mean final FID)) |", table)
        self.assertNotIn("Time modelled", quality.markdown(self.records(), quality.environment(), "grid"))

    def test_a_tracked_grids_runs_are_reported_beside_a_shorter_one_cut_at_its_schedule(self):
        tracked = self.get_temp_dir()
        quality.write_results(tracked, self.records(), quality.environment(), "tracked", plot=False)
        screen = []
        for seed in (0, 1):
            run = quality.Run("mnist", "nonsaturating", "fused", seed, "warmup500")
            config = quality.make_config(run)
            config.update(steps=1000, steps_per_epoch=500)
            history = [entry(500, 100.0, fid=30.0, kid=0.1), entry(1000, 200.0, fid=12.0, kid=0.1)]
            screen.append(quality.record(run, config, {"steps": 1000, "train_seconds": 200.0}, history, 300.0))
        references = quality.reference_records(tracked, screen)
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
        quality.write_results(out, screen, quality.environment(), "screen", plot=False, references=[tracked])
        self.assertEqual(len(read_results(out)["runs"]), 2)  # the references are reported, not stored
        self.assertEqual(read_results(out)["references"], [tracked])
        with open(os.path.join(out, "results.md")) as f:
            table = f.read()
        self.assertIn(f"Rows alternating, fused: the runs of {tracked} (these seeds, cut at this schedule)", table)
        # the threshold is alternating's at 1,000 updates: 1.1 x mean(20, 25)
        self.assertIn("| mnist | nonsaturating | fused+warmup500 | 2 | 0 |", table)
        self.assertIn("FID <= 24.75 (1.1x alternating's mean final FID)", table)
        with self.assertRaisesRegex(fp_config.ConfigError, "holds no results.json"):
            quality.reference_records(out + "/nothing", screen)
        # a row and seed this grid trained itself (alternating seed 0, here) is its own, not the reference's
        run = quality.Run("mnist", "nonsaturating", "alternating", 0)
        config = quality.make_config(run)
        config.update(steps=1000, steps_per_epoch=500)
        history = [entry(500, 100.0, fid=30.0, kid=0.1), entry(1000, 200.0, fid=15.0, kid=0.1)]
        own = quality.record(run, config, {"steps": 1000, "train_seconds": 200.0}, history, 300.0)
        references = quality.reference_records(tracked, [*screen, own])
        self.assertNotIn("mnist-nonsaturating-alternating-s0", [r["id"] for r in references])
        self.assertIn("mnist-nonsaturating-alternating-s1", [r["id"] for r in references])

    def test_a_warm_starts_updates_are_modelled_at_alternatings_seconds(self):
        seconds = quality.parse_seconds_per_update(["alternating=0.3", "fused=0.24"])
        recorded = {"form": "fused", "n_dis": 1, "g_lr": 2e-4}  # and the other fields of a record's config
        runs = [{"form": "fused", "config": {**recorded, "warmup": 500, "steps": 1500}}]
        self.assertAllClose(quality.seconds_model("mnist", runs, seconds)(1500), 500 * 0.3 + 1000 * 0.24)
        self.assertAllClose(quality.seconds_model("mnist", runs, seconds)(400), 400 * 0.3)
        recorded_before_warmup_existed = [{"form": "fused", "config": {**recorded, "steps": 1500}}]
        self.assertAllClose(quality.seconds_model("mnist", recorded_before_warmup_existed, seconds)(1500), 360.0)
        self.assertIsNone(quality.seconds_model("mnist", runs, {"fused": 0.24}))  # alternating's seconds missing
        self.assertIsNotNone(quality.seconds_model("mnist", recorded_before_warmup_existed, {"fused": 0.24}))
        mixed = [{"form": "fused", "config": {**recorded, "warmup": 500, "alternate_every": 4, "steps": 1500}}]
        # updates 0-499 alternating, then of 500-1499 those u with (u + 1) % 4 == 0: 250 of them
        self.assertAllClose(quality.seconds_model("mnist", mixed, seconds)(1500), 750 * 0.3 + 750 * 0.24)

    def test_the_best_evaluation_of_each_run_and_its_modelled_time(self):
        records = self.records()
        by_id = {r["id"]: r for r in records}
        self.assertEqual(quality.best_evaluation(by_id["mnist-nonsaturating-alternating-s2"], "fid"), (11.0, 1000))
        table = quality.markdown(records, quality.environment(), "grid", {"alternating": 0.3, "fused": 0.24})
        self.assertIn(
            "| mnist | nonsaturating | alternating | 11.00 ± 1.00 | 1500, 1500, 1000 | 1500 | 450 "
            "| 18.67 at 1000 to 11.00: -41% |",
            table,
        )
        self.assertIn(
            "| mnist | nonsaturating | fused | 11.83 ± 1.04 | 1500, 1500, 1500 | 1500 | 360 "
            "| 21.33 at 1000 to 11.83: -45% |",
            table,
        )

    def test_the_last_fifth_is_measured_from_the_last_evaluation_at_or_before_four_fifths(self):
        alternating = [r for r in self.records() if r["form"] == "alternating"]
        step, start, end, change = quality.last_fifth_change(alternating, "fid")
        self.assertEqual(step, 1000)  # four fifths of 1,500 is 1,200: the evaluation before it
        self.assertAllClose([start, end, change], [56.0 / 3.0, 11.0, 11.0 / (56.0 / 3.0) - 1.0])
        alternating[0]["history"][-1]["finite"] = False  # a run without a final FID: no mean
        self.assertIsNone(quality.last_fifth_change(alternating, "fid"))

    def test_the_mean_curve_meets_the_threshold_where_the_mean_over_runs_first_does(self):
        records = self.records()
        reached, _ = quality.thresholds(records)["mnist", "nonsaturating"]
        fused = [r for r in records if r["form"] == "fused"]
        self.assertEqual(quality.mean_curve_reaches(fused, "fid", reached), 1500)  # means 160, 21.3, 11.8
        self.assertEqual(quality.mean_curve_reaches(fused, "fid", lambda m: m["fid"] <= 25.0), 1000)
        self.assertIsNone(quality.mean_curve_reaches(fused, "fid", lambda m: m["fid"] <= 11.0))
        fused[1]["history"][1]["finite"] = False  # a run without a FID at 1,000: no mean there
        self.assertEqual(quality.mean_curve_reaches(fused, "fid", lambda m: m["fid"] <= 25.0), 1500)
        table = quality.markdown(self.records(), quality.environment(), "grid", {"alternating": 0.3, "fused": 0.24})
        self.assertIn(": -41% | 1500, 450 s |", table)
        self.assertIn(": -45% | 1500, 360 s, 0.80x |", table)
        self.assertIn(": -45% | 1500 |", quality.markdown(self.records(), quality.environment(), "grid"))

    def test_the_levels_run_from_ten_times_the_threshold_down_to_it(self):
        self.assertAllClose(quality.levels(1.988), [20.0, 15.0, 10.0, 7.0, 5.0, 3.0, 2.0, 1.988])
        self.assertAllClose(quality.levels(12.1), [150.0, 100.0, 70.0, 50.0, 30.0, 20.0, 15.0, 12.1])
        self.assertAllClose(quality.levels(2.0), [20.0, 15.0, 10.0, 7.0, 5.0, 3.0, 2.0])
        self.assertAllClose(quality.levels(0.5), [5.0, 3.0, 2.0, 1.5, 1.0, 0.7, 0.5])

    def test_each_level_is_read_where_the_mean_curves_first_meet_it(self):
        records = self.records()
        # alternating's means at 500 / 1,000 / 1,500: 110, 18.67, 11; fused's: 160, 21.33, 11.83
        table = quality.markdown(records, quality.environment(), "grid", {"alternating": 0.3, "fused": 0.24})
        self.assertIn(
            "| task | loss | form (+ stabilizer) | runs | 150 | 100 | 70 | 50 | 30 | 20 | 15 | 12.10 (threshold) "
            "| worst vs alternating |",
            table,
        )
        self.assertIn(
            "| mnist | nonsaturating | alternating | 3 | 500 | 1000 | 1000 | 1000 | 1000 | 1000 | 1500 | 1500 | — |",
            table,
        )
        self.assertIn(
            "| mnist | nonsaturating | fused | 3 | 1000 (1.60x) | 1000 (0.80x) | 1000 (0.80x) | 1000 (0.80x) "
            "| 1000 (0.80x) | 1500 (1.20x) | 1500 (0.80x) | 1500 (0.80x) | 1.60x |",
            table,
        )
        for r in records:
            if r["form"] == "fused":
                r["history"][-1]["metrics"]["fid"] = 14.0  # fused's mean never gets below 14.2
        table = quality.markdown(records, quality.environment(), "grid", {"alternating": 0.3, "fused": 0.24})
        self.assertIn("| 1500 (1.20x) | 1500 (0.80x) | — | never |", table)
        table = quality.markdown(records, quality.environment(), "grid")  # no seconds: updates only
        self.assertIn(
            "| mnist | nonsaturating | fused | 3 | 1000 | 1000 | 1000 | 1000 | 1000 | 1500 | 1500 | — | — |", table
        )

    def test_the_plot_shows_modelled_seconds_where_every_form_has_its_seconds_per_update(self):
        records = self.records()
        alternating = [r for r in records if r["form"] == "alternating"]
        steps, seconds, _, _ = quality._curve(alternating, "fid", 1.0, lambda step: 0.3 * step)
        self.assertAllClose(seconds, [150.0, 300.0, 450.0])
        self.assertAllClose(quality._curve(alternating, "fid", 1.0)[1], [100.0, 200.0, 300.0])  # measured
        path = os.path.join(self.get_temp_dir(), "quality.png")
        for seconds_per_update, label in (
            ({"alternating": 0.3, "mnist/fused": 0.24}, "modelled seconds (G updates x s per update)"),
            ({"alternating": 0.3}, "training seconds"),  # fused's unknown: both forms on measured seconds
        ):
            with mock.patch.object(Axes, "set_xlabel", autospec=True, side_effect=Axes.set_xlabel) as set_xlabel:
                quality.figure(records, path, seconds_per_update)
            self.assertEqual([c.args[1] for c in set_xlabel.call_args_list], [label, "G updates"])
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_the_plot_draws_each_stabilizer_row_of_a_form_in_its_own_line(self):
        fused = [r for r in self.records() if r["form"] == "fused"]
        records = [{**r, "stabilizer": f"row{k}", "row": f"fused+row{k}"} for k in range(8) for r in fused]
        with mock.patch.object(Axes, "plot", autospec=True, side_effect=Axes.plot) as plot:
            quality.figure(records, os.path.join(self.get_temp_dir(), "rows.png"))
        lines = {(c.kwargs["color"], c.kwargs["linestyle"], c.kwargs["marker"]) for c in plot.call_args_list}
        self.assertLen(lines, 8)  # one colour (fused's), eight rows: each its own style and marker

    def test_runs_from_several_machines_are_counted_per_machine(self):
        records = self.records()
        self.assertNotIn("Runs per machine", quality.markdown(records, quality.environment(), "grid"))
        for i, r in enumerate(records):
            r["machine"] = "CPU A" if i % 2 else "CPU B"
        table = quality.markdown(records, quality.environment(), "grid")
        self.assertIn("Runs per machine (their wall-clock seconds do not compare): CPU B: 3; CPU A: 3.", table)

    def test_seconds_per_update_must_be_form_equals_a_positive_number(self):
        for bad in ("fused", "fused=0", "fused=fast", "=0.3"):
            with self.assertRaisesRegex(fp_config.ConfigError, "--seconds_per_update takes FORM=S or TASK/FORM=S"):
                quality.parse_seconds_per_update([bad])


class ResumeTest(tu.TestCase):
    def test_an_unfinished_run_of_a_modelled_task_resumes_from_its_last_checkpoint(self):
        run = quality.Run("mnist", "nonsaturating", "fused", 0)
        tiny = ["generator.width=16", "discriminator.width=4", "image_size=16", "steps=20", "steps_per_epoch=10"]
        tiny += ["steps_per_execution=1", "eval_samples=50", "grid_samples=4", "mixed_precision='float32'"]
        config = quality.make_config(run, overrides=tiny, cache_dir=os.path.join(self.get_temp_dir(), "cache"))
        workdir = os.path.join(self.get_temp_dir(), "run")
        with tu.stopped_after_checkpoint(1):  # a session that ends after the first epoch
            stopped = quality.train_run(run, config, workdir)
        self.assertEqual((stopped["status"], stopped["steps"]), ("error", 10))
        resumed = quality.train_run(run, config, workdir)
        self.assertEqual((resumed["status"], resumed["steps"], resumed["error"]), ("done", 20, None))
        with open(os.path.join(workdir, "summary.json")) as f:
            self.assertEqual(json.load(f)["resumed_from_epoch"], 1)
        # Both processes' evaluations, with their training seconds added up (from the events).
        self.assertEqual([e["step"] for e in resumed["history"]], [10, 20])
        first, second = (e["train_seconds"] for e in resumed["history"])
        self.assertAllClose(first, stopped["history"][0]["train_seconds"])
        self.assertTrue(0 < first < second == resumed["train_seconds"])
        self.assertEqual(set(resumed["final"]), {"fid", "kid", "classifier_score"})

        # A longer schedule: the finished run trains on, its history all three processes'.
        longer = quality.make_config(run, overrides=tiny + ["steps=30"], cache_dir=config.cache_dir)
        self.assertTrue(quality.lengthened("mnist", fp_config.json_values(config), fp_config.json_values(longer)))
        extended = quality.train_run(run, longer, workdir)
        self.assertEqual((extended["status"], extended["steps"]), ("done", 30))
        self.assertEqual([e["step"] for e in extended["history"]], [10, 20, 30])
        self.assertAllClose(extended["history"][1]["train_seconds"], second)

    def test_only_a_longer_schedule_of_a_modelled_task_is_trained_on(self):
        def values(task, **changes):
            config = quality.make_config(quality.Run(task, "nonsaturating", "fused", 0), cache_dir="c")
            config.update(changes)
            return fp_config.json_values(config)

        self.assertTrue(quality.lengthened("digits32", values("digits32"), values("digits32", steps=8000)))
        self.assertFalse(quality.lengthened("digits32", values("digits32"), values("digits32", steps=1000)))
        self.assertFalse(quality.lengthened("digits32", values("digits32"), values("digits32", steps=8000, seed=1)))
        self.assertFalse(quality.lengthened("digits", values("digits"), values("digits", steps=8000)))

    def test_a_lengthened_run_is_estimated_for_the_updates_it_has_left(self):
        run = quality.Run("mnist", "nonsaturating", "fused", 0)
        config = quality.make_config(run, cache_dir="c", overrides=("steps=12000",))
        fixed, per_step, per_eval = quality.TASKS["mnist"].cost
        evals = 12000 // config.steps_per_epoch // config.eval_every
        self.assertAlmostEqual(quality.estimate(run, config), fixed + 12000 * per_step + evals * per_eval)
        # 8,000 of 12,000 done: a third of the updates and of the evaluations left.
        self.assertAlmostEqual(
            quality.estimate(run, config, trained_steps=8000), fixed + 4000 * per_step + evals / 3 * per_eval
        )

    def test_a_failed_lengthening_keeps_the_finished_record(self):
        done, failed, retried = {"status": "done"}, {"status": "error", "error": "x"}, {"status": "done"}
        self.assertIs(quality.newer_record(done, failed), done)
        self.assertIs(quality.newer_record(done, retried), retried)
        again = {"status": "error", "error": "y"}
        self.assertIs(quality.newer_record(failed, again), again)  # an error replaces an error
        self.assertIs(quality.newer_record(None, failed), failed)


class QuickGridTest(tu.TestCase):
    def setUp(self):
        super().setUp()
        tiny = {
            name: dataclasses.replace(quality.TASKS[name], quick=quick, quick_seeds=1) for name, quick in TINY.items()
        }
        patcher = mock.patch.dict(quality.TASKS, tiny)
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_writes_the_three_files_one_record_per_run_and_resumes(self):
        out = os.path.join(self.get_temp_dir(), "quality")
        status, printed = quiet_run("--quick", f"--out={out}", "--tasks=ring8,digits", "--forms=alternating,fused")
        self.assertEqual(status, 0, printed)
        self.assertIn("5/5", printed)
        self.assertEqual(
            sorted(os.listdir(out)), ["cache", "quality.png", "results.json", "results.md", "runs", "warm_up"]
        )
        results = read_results(out)
        self.assertEqual(
            [r["id"] for r in results["runs"]],
            [
                "ring8-nonsaturating-alternating-s0",
                "ring8-nonsaturating-fused-s0",
                "ring8-hinge-alternating-s0",
                "digits-nonsaturating-alternating-s0",
                "digits-nonsaturating-fused-s0",
            ],
        )
        for rec in results["runs"]:
            self.assertEqual((rec["status"], rec["steps"], rec["diverged"]), ("done", 20, False))
            self.assertEqual([e["step"] for e in rec["history"]], [10, 20])
            self.assertTrue(
                0 < rec["history"][0]["train_seconds"] < rec["history"][1]["train_seconds"] <= rec["wall_seconds"]
            )
            self.assertEqual(rec["final"], rec["history"][-1]["metrics"])
        self.assertEqual(set(results["runs"][-1]["final"]), {"fid", "kid", "classifier_score"})
        self.assertIn("tensorflow", results["environment"])
        with open(os.path.join(out, "results.md")) as f:
            table = f.read()
        for row in (
            "| ring8 | nonsaturating | fused | 1 | 0 |",
            "| ring8 | hinge | alternating | 1 | 0 |",
            "| digits | nonsaturating | alternating | 1 | 0 |",
        ):
            self.assertIn(row, table)
        with open(os.path.join(out, "quality.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

        # A rerun trains nothing; one with another config of the same runs is refused.
        with mock.patch.object(train_lib, "train", side_effect=AssertionError("retrained")):
            status, printed = quiet_run("--quick", f"--out={out}", "--tasks=ring8,digits", "--forms=alternating,fused")
            self.assertEqual(status, 0, printed)
            self.assertIn("5 runs, 5 done", printed)
            status, printed = quiet_run(
                "--quick", f"--out={out}", "--tasks=ring8", "--forms=fused", "--override=g_lr=5e-4"
            )
            self.assertEqual(status, 2)
            self.assertIn("holds run ring8-nonsaturating-fused-s0 with another config", printed)
        self.assertLen(read_results(out)["runs"], 5)

    def test_a_signal_stops_the_grid_in_one_line_keeping_the_finished_runs(self):
        real_train = train_lib.train

        def stopped_at_the_second_run(config, workdir, **kwargs):
            if "warm_up" in workdir or config.form == "alternating":
                return real_train(config, workdir=workdir, **kwargs)
            raise interrupt.TrainingInterrupted(3, None, workdir, workdir, signum=signal.SIGTERM)

        out = os.path.join(self.get_temp_dir(), "stopped")
        with mock.patch.object(train_lib, "train", stopped_at_the_second_run):
            status, printed = quiet_run(
                "--quick", f"--out={out}", "--tasks=ring8", "--forms=alternating,fused", "--losses=nonsaturating"
            )
        self.assertEqual(status, 143)
        self.assertRegex(
            printed.strip().splitlines()[-1],
            r"^quality: stopped by SIGTERM; 1 finished runs are in .*results.json; rerun the same command to go on\.$",
        )
        self.assertNotIn("Traceback", printed)
        self.assertEqual([r["id"] for r in read_results(out)["runs"]], ["ring8-nonsaturating-alternating-s0"])

    def test_a_diverged_run_is_counted_and_a_raising_run_recorded_from_its_logs(self):
        out = os.path.join(self.get_temp_dir(), "quality")
        status, printed = quiet_run(
            "--quick",
            f"--out={out}",
            "--tasks=ring8",
            "--forms=fused",
            "--losses=nonsaturating",
            "--override=d_lr=1e30",
            "--override=g_lr=1e30",
        )
        self.assertEqual(status, 0, printed)
        (rec,) = read_results(out)["runs"]
        self.assertEqual((rec["status"], rec["diverged"], rec["final"]), ("diverged", True, None))
        # train() stops a diverged run at once (TrainingDivergedError): no evaluation after it
        self.assertGreaterEqual(rec["diverged_at_step"], 1)
        self.assertTrue(all(e["step"] < rec["diverged_at_step"] for e in rec["history"]))
        self.assertIn("- ring8-nonsaturating-fused-s0: diverged at G update", printed)

        real_train = train_lib.train

        def train_then_raise(config, workdir, **kwargs):  # a harness that stops a run by raising
            summary = real_train(config, workdir=workdir, **kwargs)
            if "warm_up" not in workdir:
                os.remove(os.path.join(workdir, "summary.json"))
                raise RuntimeError("stopped")
            return summary

        out = os.path.join(self.get_temp_dir(), "raising")
        with mock.patch.object(train_lib, "train", train_then_raise):
            status, printed = quiet_run(
                "--quick", f"--out={out}", "--tasks=ring8", "--forms=alternating", "--losses=nonsaturating"
            )
        self.assertEqual(status, 0, printed)
        (rec,) = read_results(out)["runs"]
        self.assertEqual((rec["status"], rec["error"], rec["steps"]), ("error", "RuntimeError: stopped", 20))
        self.assertEqual([e["step"] for e in rec["history"]], [10, 20])
        self.assertTrue(all(e["finite"] and e["train_seconds"] > 0 for e in rec["history"]))
        self.assertEqual(set(rec["history"][-1]["metrics"]), {"modes_covered", "high_quality"})


if __name__ == "__main__":
    tf.test.main()
