"""benchmarks/quality.py, the command line: its flag of seconds per update, and a tiny --quick grid
end to end (the three files, a rerun that trains nothing, a refused config, a signal, a diverged
and a raising run)."""

import contextlib
import dataclasses
import io
import os
import signal
import subprocess
import sys
from unittest import mock

import tensorflow as tf

import train
from benchmarks import quality
from benchmarks.time_to_quality.tasks import TASKS
from tests import testing_utils as tu
from tests.benchmarks.time_to_quality.fixtures import read_results
from tf_fusedprop.experiment import config as fp_config
from tf_fusedprop.experiment import interrupt, train_lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: --quick shrunk to seconds: 2 epochs of 10 G updates, small evaluations, one seed; digits at
#: 8 px (its FID classifier too) and width 8.
TINY = {
    "ring8": {"steps": 20, "steps_per_epoch": 10, "steps_per_execution": 1, "eval_samples": 200, "grid_samples": 50},
    "grid25": {"steps": 20, "steps_per_epoch": 10, "steps_per_execution": 1, "eval_samples": 200, "grid_samples": 50},
    "digits": {
        "steps": 20,
        "steps_per_epoch": 10,
        "steps_per_execution": 1,
        "eval_samples": 100,
        "grid_samples": 16,
        "image_size": 8,
        "generator": {"width": 8},
        "discriminator": {"width": 8},
    },
}


def quiet_run(*args):
    """`quality.run` on `args`; returns (exit status, printed text)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        status = quality.run(["quality.py", *args])
    return status, out.getvalue()


class SecondsPerUpdateTest(tu.TestCase):
    def test_seconds_per_update_are_per_form_or_per_task_and_form(self):
        self.assertEqual(
            quality.parse_seconds_per_update(["alternating=0.3", "mnist/fused=0.24"]),
            {"alternating": 0.3, "mnist/fused": 0.24},
        )

    def test_seconds_per_update_must_be_form_equals_a_positive_number(self):
        for bad in ("fused", "fused=0", "fused=fast", "=0.3"):
            with self.assertRaisesRegex(fp_config.ConfigError, "--seconds_per_update takes FORM=S or TASK/FORM=S"):
                quality.parse_seconds_per_update([bad])


class TensorFlowEnvironmentTest(tu.TestCase):
    def test_the_harness_loads_tensorflow_as_train_py_does(self):
        # In a fresh process (TensorFlow reads these once, when it loads), as a user's shell has it.
        env = {k: v for k, v in os.environ.items() if k not in train.TENSORFLOW_ENVIRONMENT}
        out = os.path.join(self.get_temp_dir(), "quality")
        args = ["--dry_run", f"--out={out}", "--tasks=ring8", "--forms=fused", "--losses=nonsaturating", "--seeds=1"]
        result = subprocess.run(
            [sys.executable, os.path.join(ROOT, "benchmarks", "quality.py"), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        self.assertIn("oneDNN 1; inter-op threads 1;", result.stdout)


class OnlySeedsTest(tu.TestCase):
    def test_only_seeds_plans_the_whole_grid_and_trains_the_seeds_named(self):
        out = os.path.join(self.get_temp_dir(), "quality")
        status, printed = quiet_run(
            "--dry_run", f"--out={out}", "--tasks=ring8", "--forms=fused", "--losses=nonsaturating", "--only_seeds=2,4"
        )
        self.assertEqual(status, 0, printed)
        self.assertIn("5 runs, 0 done in", printed)
        self.assertIn("2 to run now, 3 left for later (--only_seeds)", printed)

    def test_only_seeds_must_be_seed_numbers(self):
        for bad in ("two", "-1"):
            status, printed = quiet_run("--dry_run", "--tasks=ring8", f"--only_seeds={bad}")
            self.assertEqual(status, 2)
            self.assertIn("error: --only_seeds takes seed", printed)


class QuickGridTest(tu.TestCase):
    def setUp(self):
        super().setUp()
        tiny = {name: dataclasses.replace(TASKS[name], quick=quick, quick_seeds=1) for name, quick in TINY.items()}
        patcher = mock.patch.dict(TASKS, tiny)
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
