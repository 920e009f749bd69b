"""benchmarks/time_to_quality/runs.py: a run's record (divergence, status, final metrics) and
training one, an unfinished run of a modelled task resumed from its checkpoint, its progress
lines echoed."""

import contextlib
import io
import json
import os
from unittest import mock

import tensorflow as tf

from benchmarks.time_to_quality.grid import lengthened
from benchmarks.time_to_quality.plan import Run, make_config
from benchmarks.time_to_quality.report import time_to_threshold
from benchmarks.time_to_quality.runs import ProgressEcho, record, train_run
from tests import testing_utils as tu
from tests.benchmarks.time_to_quality.fixtures import entry
from tf_fusedprop.experiment import callbacks
from tf_fusedprop.experiment import config as fp_config


class RecordTest(tu.TestCase):
    def setUp(self):
        super().setUp()
        self.run_ = Run("ring8", "nonsaturating", "fused", 0)
        self.config = make_config(self.run_)
        self.config.update(steps=30, steps_per_epoch=10)

    def test_metrics_from_the_first_non_finite_evaluation_on_are_null(self):
        history = [
            entry(10, 1.0, modes_covered=8, high_quality=0.9),
            entry(20, 2.0, False, modes_covered=0, high_quality=0.0),
            entry(30, 3.0, False, modes_covered=0, high_quality=0.0),
        ]
        summary = {"steps": 30, "train_seconds": 3.0}
        rec = record(self.run_, self.config, summary, history, 4.0)
        self.assertEqual(
            (rec["status"], rec["diverged"], rec["diverged_at_step"], rec["final"]), ("diverged", True, 20, None)
        )
        self.assertEqual([e["metrics"]["modes_covered"] for e in rec["history"]], [8, None, None])
        self.assertEqual(time_to_threshold(rec), (1.0, 10))
        # The harness's exact divergence step, where it records one, wins; a NaN metric counts too.
        summary["divergence"] = {"step": 14, "players": ["generator"]}
        rec = record(self.run_, self.config, summary, history, 4.0)
        self.assertEqual(rec["diverged_at_step"], 14)
        history = [entry(10, 1.0, modes_covered=8, high_quality=float("nan"))]
        self.assertEqual(record(self.run_, self.config, None, history, 1.0)["diverged_at_step"], 10)

    def test_a_finished_run_and_its_time_to_threshold(self):
        history = [
            entry(10, 1.0, modes_covered=8, high_quality=0.5),
            entry(20, 2.0, modes_covered=8, high_quality=0.85),
            entry(30, 3.0, modes_covered=7, high_quality=0.9),
        ]
        rec = record(self.run_, self.config, {"steps": 30, "train_seconds": 3.0}, history, 4.0)
        self.assertEqual((rec["status"], rec["final"], rec["train_seconds"]), ("done", history[-1]["metrics"], 3.0))
        self.assertEqual(time_to_threshold(rec), (2.0, 20))
        stopped = record(self.run_, self.config, {"steps": 20, "train_seconds": 2.0}, history[:2], 3.0)
        self.assertEqual((stopped["status"], stopped["final"]), ("stopped", None))
        self.assertNotIn("augment_p", rec["history"][0])
        history[0]["augment_p"] = 0.25  # an adaptive augmentation's probability then, kept
        history[1].update(stray=0.125, stray_cosine=0.5)  # a stray probe's epoch means, kept
        rec = record(self.run_, self.config, {"steps": 30, "train_seconds": 3.0}, history, 4.0)
        self.assertEqual([e.get("augment_p") for e in rec["history"]], [0.25, None, None])
        self.assertEqual([(e.get("stray"), e.get("stray_cosine")) for e in rec["history"]][1], (0.125, 0.5))


class TrainRunTest(tu.TestCase):
    def test_an_unfinished_run_of_a_modelled_task_resumes_from_its_last_checkpoint(self):
        run = Run("mnist", "nonsaturating", "fused", 0)
        # Tiny: 8 px (the smallest the digits classifier scoring FID pools), one form throughout
        # (alternate_every=0: one train function traced a process, not two).
        tiny = ["generator.width=16", "discriminator.width=4", "image_size=8", "steps=20", "steps_per_epoch=10"]
        tiny += ["steps_per_execution=1", "eval_samples=50", "grid_samples=4", "mixed_precision='float32'"]
        tiny += ["alternate_every=0"]
        config = make_config(run, overrides=tiny, cache_dir=os.path.join(self.get_temp_dir(), "cache"))
        workdir = os.path.join(self.get_temp_dir(), "run")
        with tu.stopped_after_checkpoint(1):  # a session that ends after the first epoch
            stopped = train_run(run, config, workdir)
        self.assertEqual((stopped["status"], stopped["steps"]), ("error", 10))
        # A run of hours says its time per update in the harness's output, not only in train.log.
        printed = io.StringIO()
        with (
            mock.patch.object(callbacks.Progress, "TIMED_SECONDS", 0.0),
            mock.patch.object(callbacks.Progress, "WORTH_SAYING_SECONDS", 0.0),
            contextlib.redirect_stdout(printed),
        ):
            resumed = train_run(run, config, workdir)
        self.assertEqual((resumed["status"], resumed["steps"], resumed["error"]), ("done", 20, None))
        echoed = printed.getvalue().splitlines()
        self.assertEqual(len(echoed), 1, echoed)
        self.assertRegex(echoed[0], rf"^  {run.id}: Timed: [\d.]+ s per update; \d+ updates left")
        with open(os.path.join(workdir, "train.log")) as f:
            self.assertIn(echoed[0].strip()[len(run.id) + 2 :], f.read())
        with open(os.path.join(workdir, "summary.json")) as f:
            self.assertEqual(json.load(f)["resumed_from_epoch"], 1)
        # Both processes' evaluations, with their training seconds added up (from the events).
        self.assertEqual([e["step"] for e in resumed["history"]], [10, 20])
        first, second = (e["train_seconds"] for e in resumed["history"])
        self.assertAllClose(first, stopped["history"][0]["train_seconds"])
        self.assertTrue(0 < first < second == resumed["train_seconds"])
        self.assertEqual(set(resumed["final"]), {"fid", "kid", "classifier_score"})

        # A longer schedule: the finished run trains on, its history all three processes'.
        longer = make_config(run, overrides=tiny + ["steps=30"], cache_dir=config.cache_dir)
        self.assertTrue(lengthened("mnist", fp_config.json_values(config), fp_config.json_values(longer)))
        extended = train_run(run, longer, workdir)
        self.assertEqual((extended["status"], extended["steps"]), ("done", 30))
        self.assertEqual([e["step"] for e in extended["history"]], [10, 20, 30])
        self.assertAllClose(extended["history"][1]["train_seconds"], second)


class ProgressEchoTest(tu.TestCase):
    def test_everything_goes_to_the_log_and_only_progress_lines_to_the_terminal(self):
        log, terminal = io.StringIO(), io.StringIO()
        echo = ProgressEcho(log, terminal, "mnist-s0")
        text = (
            "Epoch 1/4\nTimed: 3.96 s per update; 980 updates left, about 1 h 05 min of training.\n"
            "10/10 - 46s - 5s/step - d_loss: 0.84\nstep 80/1,000: 3.96 s/update, d_lo"
        )
        for chunk in (text[:17], text[17:60], text[60:]):  # lines split across writes
            echo.write(chunk)
        self.assertEqual(
            terminal.getvalue(),
            "  mnist-s0: Timed: 3.96 s per update; 980 updates left, about 1 h 05 min of training.\n",
        )
        rest = "ss 1.056; about 1 h 01 min left\nG update 100: alternating -> fused\n"
        echo.write(rest)
        self.assertEqual(log.getvalue(), text + rest)
        self.assertEqual(
            terminal.getvalue().splitlines()[1:],
            [
                "  mnist-s0: step 80/1,000: 3.96 s/update, d_loss 1.056; about 1 h 01 min left",
                "  mnist-s0: G update 100: alternating -> fused",
            ],
        )


if __name__ == "__main__":
    tf.test.main()
