"""benchmarks/time_to_quality/report.py: thresholds (fixed, and relative to alternating's final
FID), the time to them (measured and modelled), the best evaluations, the plateau test, the
levels, and results.md's tables."""

import tensorflow as tf

from benchmarks.time_to_quality.environment import environment
from benchmarks.time_to_quality.report import (
    best_evaluation,
    last_fifth_change,
    levels,
    markdown,
    mean_curve_reaches,
    median_or_none,
    seconds_model,
    summarize,
    thresholds,
    time_to_threshold,
)
from tests import testing_utils as tu
from tests.benchmarks.time_to_quality.fixtures import plateau_records


class MedianTest(tu.TestCase):
    def test_median_counts_runs_that_never_reached_as_infinitely_slow(self):
        self.assertEqual(median_or_none([3.0, None, 1.0]), 3.0)
        self.assertIsNone(median_or_none([3.0, None, None]))
        self.assertEqual(median_or_none([4.0, 2.0]), 3.0)


class PlateauThresholdTest(tu.TestCase):
    """mnist and digits32: the threshold is relative to alternating's final FID, and time is
    also modelled as G updates x seconds per update."""

    def test_threshold_is_a_tenth_above_alternatings_mean_final_fid(self):
        records = plateau_records()
        reached, text = thresholds(records)["mnist", "nonsaturating"]
        self.assertEqual(text, "FID <= 12.1 (1.1x alternating's mean final FID)")
        self.assertEqual((reached({"fid": 12.0}), reached({"fid": 12.2})), (True, False))
        by_id = {r["id"]: r for r in records}
        self.assertEqual(time_to_threshold(by_id["mnist-nonsaturating-fused-s0"], reached), (200.0, 1000))
        self.assertIsNone(time_to_threshold(by_id["mnist-nonsaturating-fused-s1"], reached))
        self.assertIsNone(time_to_threshold(by_id["mnist-nonsaturating-fused-s1"]))  # no fixed threshold
        unfinished = thresholds([r for r in records if r["form"] == "fused"])
        self.assertEqual(
            unfinished["mnist", "nonsaturating"][1], "FID <= 1.1x alternating's mean final FID (none finished yet)"
        )

    def test_modelled_time_is_updates_times_seconds_per_update(self):
        seconds = {"alternating": 0.3, "mnist/fused": 0.24}
        rows = {row["form"]: row for row in summarize(plateau_records(), seconds)}
        self.assertEqual((rows["alternating"]["steps"], rows["fused"]["steps"]), (1500, 1000))
        self.assertEqual(rows["fused"]["reached"], 2)
        fused = rows["fused"]["modelled"]
        self.assertAllClose(
            [fused["threshold_seconds"], fused["threshold_vs_alternating"], fused["schedule_seconds"]],
            [240.0, 240.0 / 450.0, 360.0],
        )
        self.assertAllClose(fused["schedule_vs_alternating"], 0.8)
        table = markdown(plateau_records(), environment(), "grid", seconds)
        self.assertIn("| mnist | nonsaturating | fused | 0.24 | 1000 | 240 | 0.53x | 1500 | 360 | 0.80x |", table)
        self.assertIn("| 2/3 (FID <= 12.1 (1.1x alternating's mean final FID)) |", table)
        self.assertNotIn("Time modelled", markdown(plateau_records(), environment(), "grid"))
        threads = {**environment(), "inter_op_threads": "1"}
        self.assertIn(", inter-op threads 1.", markdown(plateau_records(), threads, "grid"))
        self.assertIn(
            ", inter-op threads TF default.", markdown(plateau_records(), {**threads, "inter_op_threads": None}, "grid")
        )
        recorded_before = {k: v for k, v in threads.items() if k != "inter_op_threads"}
        self.assertNotIn("inter-op", markdown(plateau_records(), recorded_before, "grid"))

    def test_a_warm_starts_updates_are_modelled_at_alternatings_seconds(self):
        seconds = {"alternating": 0.3, "fused": 0.24}
        recorded = {"form": "fused", "n_dis": 1, "g_lr": 2e-4}  # and the other fields of a record's config
        runs = [{"form": "fused", "config": {**recorded, "warmup": 500, "steps": 1500}}]
        self.assertAllClose(seconds_model("mnist", runs, seconds)(1500), 500 * 0.3 + 1000 * 0.24)
        self.assertAllClose(seconds_model("mnist", runs, seconds)(400), 400 * 0.3)
        recorded_before_warmup_existed = [{"form": "fused", "config": {**recorded, "steps": 1500}}]
        self.assertAllClose(seconds_model("mnist", recorded_before_warmup_existed, seconds)(1500), 360.0)
        self.assertIsNone(seconds_model("mnist", runs, {"fused": 0.24}))  # alternating's seconds missing
        self.assertIsNotNone(seconds_model("mnist", recorded_before_warmup_existed, {"fused": 0.24}))
        mixed = [{"form": "fused", "config": {**recorded, "warmup": 500, "alternate_every": 4, "steps": 1500}}]
        # updates 0-499 alternating, then of 500-1499 those u with (u + 1) % 4 == 0: 250 of them
        self.assertAllClose(seconds_model("mnist", mixed, seconds)(1500), 750 * 0.3 + 750 * 0.24)

    def test_an_auto_schedules_updates_are_modelled_from_each_runs_alternated_log(self):
        seconds = {"alternating": 0.3, "fused": 0.24}
        config = {"form": "fused", "n_dis": 1, "g_lr": 2e-4, "steps": 1000, "auto": {"threshold": 0.4}}
        runs = [
            {"form": "fused", "config": config, "history": [{"step": 500, "alternated": a}, {"step": 1000}]}
            for a in (100, 200, 400)
        ]
        seconds_at = seconds_model("mnist", runs, seconds)
        self.assertAllClose(seconds_at(500), 300 * 0.24 + 200 * 0.3)  # the median run's
        self.assertAllClose(seconds_at(250), 150 * 0.24 + 100 * 0.3)  # between evaluations: interpolated
        self.assertIsNone(seconds_at(1000))  # no run logged it there
        warm = {**config, "warmup": 100}  # a warm start's updates are among `alternated`
        runs = [{"form": "fused", "config": warm, "history": [{"step": 500, "alternated": 100}]}]
        self.assertAllClose(seconds_model("mnist", runs, seconds)(500), 400 * 0.24 + 100 * 0.3)

    def test_the_best_evaluation_of_each_run_and_its_modelled_time(self):
        records = plateau_records()
        by_id = {r["id"]: r for r in records}
        self.assertEqual(best_evaluation(by_id["mnist-nonsaturating-alternating-s2"], "fid"), (11.0, 1000))
        table = markdown(records, environment(), "grid", {"alternating": 0.3, "fused": 0.24})
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
        alternating = [r for r in plateau_records() if r["form"] == "alternating"]
        step, start, end, change = last_fifth_change(alternating, "fid")
        self.assertEqual(step, 1000)  # four fifths of 1,500 is 1,200: the evaluation before it
        self.assertAllClose([start, end, change], [56.0 / 3.0, 11.0, 11.0 / (56.0 / 3.0) - 1.0])
        alternating[0]["history"][-1]["finite"] = False  # a run without a final FID: no mean
        self.assertIsNone(last_fifth_change(alternating, "fid"))

    def test_the_mean_curve_meets_the_threshold_where_the_mean_over_runs_first_does(self):
        records = plateau_records()
        reached, _ = thresholds(records)["mnist", "nonsaturating"]
        fused = [r for r in records if r["form"] == "fused"]
        self.assertEqual(mean_curve_reaches(fused, "fid", reached), 1500)  # means 160, 21.3, 11.8
        self.assertEqual(mean_curve_reaches(fused, "fid", lambda m: m["fid"] <= 25.0), 1000)
        self.assertIsNone(mean_curve_reaches(fused, "fid", lambda m: m["fid"] <= 11.0))
        fused[1]["history"][1]["finite"] = False  # a run without a FID at 1,000: no mean there
        self.assertEqual(mean_curve_reaches(fused, "fid", lambda m: m["fid"] <= 25.0), 1500)
        table = markdown(plateau_records(), environment(), "grid", {"alternating": 0.3, "fused": 0.24})
        self.assertIn(": -41% | 1500, 450 s |", table)
        self.assertIn(": -45% | 1500, 360 s, 0.80x |", table)
        self.assertIn(": -45% | 1500 |", markdown(plateau_records(), environment(), "grid"))

    def test_the_levels_run_from_ten_times_the_threshold_down_to_it(self):
        self.assertAllClose(levels(1.988), [20.0, 15.0, 10.0, 7.0, 5.0, 3.0, 2.0, 1.988])
        self.assertAllClose(levels(12.1), [150.0, 100.0, 70.0, 50.0, 30.0, 20.0, 15.0, 12.1])
        self.assertAllClose(levels(2.0), [20.0, 15.0, 10.0, 7.0, 5.0, 3.0, 2.0])
        self.assertAllClose(levels(0.5), [5.0, 3.0, 2.0, 1.5, 1.0, 0.7, 0.5])

    def test_each_level_is_read_where_the_mean_curves_first_meet_it(self):
        records = plateau_records()
        # alternating's means at 500 / 1,000 / 1,500: 110, 18.67, 11; fused's: 160, 21.33, 11.83
        table = markdown(records, environment(), "grid", {"alternating": 0.3, "fused": 0.24})
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
        table = markdown(records, environment(), "grid", {"alternating": 0.3, "fused": 0.24})
        self.assertIn("| 1500 (1.20x) | 1500 (0.80x) | — | never |", table)
        table = markdown(records, environment(), "grid")  # no seconds: updates only
        self.assertIn(
            "| mnist | nonsaturating | fused | 3 | 1000 | 1000 | 1000 | 1000 | 1000 | 1500 | 1500 | — | — |", table
        )

    def test_runs_from_several_machines_are_counted_per_machine(self):
        records = plateau_records()
        self.assertNotIn("Runs per machine", markdown(records, environment(), "grid"))
        for i, r in enumerate(records):
            r["machine"] = "CPU A" if i % 2 else "CPU B"
        table = markdown(records, environment(), "grid")
        self.assertIn("Runs per machine (their wall-clock seconds do not compare): CPU B: 3; CPU A: 3.", table)


if __name__ == "__main__":
    tf.test.main()
