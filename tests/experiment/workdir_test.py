"""workdir: the default run directory, the existing-run check and the workdir's creation."""

import json
import os
import socket
import subprocess
import sys
from unittest import mock

import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop.experiment import workdir
from tf_fusedprop.experiment.config import ConfigError


class DefaultWorkdirTest(tu.TestCase):
    def test_resumes_the_latest_unfinished_run_of_the_same_config(self):
        root = self.get_temp_dir()
        config = tu.tiny_config("ring8")
        fresh = workdir.default_workdir(config, root)
        self.assertEqual(os.path.dirname(fresh), root)
        self.assertTrue(os.path.basename(fresh).startswith("ring8-"))

        def make_run(name, run_config, finished=False):
            os.makedirs(os.path.join(root, name))
            with open(os.path.join(root, name, "config.json"), "w") as f:
                f.write(json.dumps(run_config.to_dict()))
            if finished:
                with open(os.path.join(root, name, "summary.json"), "w") as f:
                    f.write("{}")

        other = tu.tiny_config("ring8")
        other.seed = 5
        make_run("ring8-20240101-000000", config)
        make_run("ring8-20240102-000000", config, finished=True)
        make_run("ring8-20240103-000000", other)
        self.assertEqual(workdir.default_workdir(config, root), os.path.join(root, "ring8-20240101-000000"))


class CompletedRunTest(tu.TestCase):
    def test_a_new_workdir_has_no_run(self):
        self.assertIsNone(workdir.completed_run(os.path.join(self.get_temp_dir(), "new"), tu.tiny_config("ring8")))

    def test_an_unfinished_run_is_resumed_a_finished_one_returned_another_refused(self):
        directory = os.path.join(self.get_temp_dir(), "run")
        config = tu.tiny_config("ring8")
        workdir.make_workdir(directory, config)
        self.assertIsNone(workdir.completed_run(directory, config))
        with open(os.path.join(directory, "summary.json"), "w") as f:
            json.dump({"steps": 2}, f)
        self.assertEqual(workdir.completed_run(directory, config), {"steps": 2})
        config.generator.units = 9
        with self.assertRaisesRegex(ConfigError, r"different config \(config.generator.units: 8 there, 9 now\)"):
            workdir.completed_run(directory, config)

    def test_a_run_recorded_with_lookahead_forms_listed_resumes_under_the_rule(self):
        directory = os.path.join(self.get_temp_dir(), "listed")
        config = tu.tiny_config("ring8")  # fused
        config.lookahead.every = 10
        config.lookahead.forms = "fused,inverse,adaptive,simultaneous"  # what a run recorded before the rules
        workdir.make_workdir(directory, config)
        config.lookahead.forms = "simultaneous_forms"
        self.assertIsNone(workdir.completed_run(directory, config))  # the same run: resumed
        config.lookahead.forms = "alternating"  # Lookahead off for fused: another run
        with self.assertRaisesRegex(ConfigError, r"different config \(config.lookahead.every: 10 there, 0 now\)"):
            workdir.completed_run(directory, config)


class LearningRateChangeTest(tu.TestCase):
    def test_a_rerun_may_change_the_learning_rates_only_and_the_change_is_recorded(self):
        directory = os.path.join(self.get_temp_dir(), "run")
        config = tu.tiny_config("ring8")
        workdir.make_workdir(directory, config)
        self.assertIsNone(workdir.record_learning_rates(directory, config))
        self.assertEqual(workdir.learning_rate_changes(directory), [])

        config.d_lr, config.g_lr = 1e-4, 5e-5
        self.assertIsNone(workdir.completed_run(directory, config))  # Not refused.
        checkpoint = {"epoch": 3, "steps": 30, "weights": "epoch_0003.weights.h5"}
        change = workdir.record_learning_rates(directory, config, checkpoint)
        expected = {"epoch": 3, "step": 30, "d_lr": {"from": 2e-3, "to": 1e-4}, "g_lr": {"from": 1e-3, "to": 5e-5}}
        self.assertEqual(change, expected)
        self.assertEqual(
            workdir.describe_learning_rate_change(directory, change),
            f"Learning rates changed from epoch 3 (step 30): d_lr 0.002 -> 0.0001, g_lr 0.001 -> 5e-05; recorded in "
            f"{directory}/learning_rates.json.",
        )
        with open(os.path.join(directory, "config.json")) as f:
            self.assertEqual(json.load(f), config.to_dict())  # config.json holds the rates in use.
        self.assertIsNone(workdir.record_learning_rates(directory, config, checkpoint))  # Recorded once.

        config.d_lr = 2e-3
        workdir.record_learning_rates(directory, config)
        self.assertEqual(
            workdir.learning_rate_changes(directory),
            [expected, {"epoch": 0, "step": 0, "d_lr": {"from": 1e-4, "to": 2e-3}, "g_lr": {"from": 5e-5, "to": 5e-5}}],
        )
        config.beta1 = 0.0
        with self.assertRaisesRegex(
            ConfigError, r"config.beta1: 0.5 there, 0.0 now\); .*\(only d_lr, g_lr, steps and cache_dir may change\)"
        ):
            workdir.completed_run(directory, config)


class ScheduleChangeTest(tu.TestCase):
    def _run(self, steps, steps_per_epoch, name="run", finished=True):
        directory = os.path.join(self.get_temp_dir(), name)
        config = tu.tiny_config("ring8")
        config.steps, config.steps_per_epoch = steps, steps_per_epoch
        workdir.make_workdir(directory, config)
        if finished:
            with open(os.path.join(directory, "summary.json"), "w") as f:
                json.dump({"steps": steps}, f)
        return directory, config

    def test_a_longer_schedule_trains_a_finished_run_on_and_is_recorded(self):
        directory, config = self._run(steps=4, steps_per_epoch=2)
        config.steps = 8
        self.assertIsNone(workdir.completed_run(directory, config))  # To be trained on.
        run = workdir.find(config, directory)
        self.assertEqual(
            run.start(directory, {"epoch": 2, "steps": 4, "weights": "epoch_0002.weights.h5"}),
            [
                f"Schedule changed from 4 to 8 steps; recorded in {directory}/config.json (the finished run's summary "
                f"kept as {directory}/summary_4.json)."
            ],
        )
        with open(os.path.join(directory, "config.json")) as f:
            self.assertEqual(json.load(f), config.to_dict())
        self.assertEqual(sorted(os.listdir(directory)), ["config.json", "summary_4.json"])
        self.assertEqual(run.start(directory), [])  # Recorded once.
        # Killed while training on: unfinished, resumed by the same rerun; shortened again
        # only down to its last checkpoint.
        self.assertIsNone(workdir.completed_run(directory, config))
        config.steps = 4
        run = workdir.find(config, directory)
        self.assertIsNone(run.summary)
        with self.assertRaisesRegex(
            ConfigError,
            r"^the run in .*run has a checkpoint at step 6, beyond config.steps=4: pass steps of at least 6",
        ):
            run.start(directory, {"epoch": 3, "steps": 6, "weights": "epoch_0003.weights.h5"})
        self.assertEqual(
            run.start(directory, {"epoch": 2, "steps": 4, "weights": "epoch_0002.weights.h5"}),
            [f"Schedule changed from 8 to 4 steps; recorded in {directory}/config.json."],
        )

    def test_another_cache_directory_resumes_the_run_and_is_recorded(self):
        directory, config = self._run(steps=4, steps_per_epoch=2, finished=False)
        config.cache_dir = os.path.join(self.get_temp_dir(), "moved cache")
        run = workdir.find(config, directory)
        self.assertIsNone(run.summary)
        self.assertEqual(
            run.start(directory, {"epoch": 1, "steps": 2, "weights": "epoch_0001.weights.h5"}),
            [f"Cache directory changed from None to {config.cache_dir}; recorded in {directory}/config.json."],
        )
        with open(os.path.join(directory, "config.json")) as f:
            self.assertEqual(json.load(f), config.to_dict())
        self.assertEqual(run.start(directory), [])  # Recorded once.
        config.seed += 1  # anything else still belongs to another run
        with self.assertRaisesRegex(ConfigError, r"different config \(config.seed: 0 there, 1 now\)"):
            workdir.completed_run(directory, config)

    def test_a_finished_run_is_not_shortened_and_epochs_keep_their_length(self):
        refusals = [
            # (steps, steps_per_epoch, finished, new steps, the refusal after "the run in DIR ")
            (4, 2, True, 2, r"has finished 4 steps, more than config.steps=2: pass steps of at least 4, or a new "),
            (
                1,
                2,
                True,
                4,
                r"is one epoch of 1 steps \(steps_per_epoch 2\), which another length would change: pass a new ",
            ),
            (
                8,
                4,
                False,
                2,
                r"has epochs of 4 steps, which config.steps=2 would shorten: pass steps of at least 4, or a new ",
            ),
        ]
        for index, (steps, steps_per_epoch, finished, new_steps, refusal) in enumerate(refusals):
            directory, config = self._run(steps, steps_per_epoch, name=f"run{index}", finished=finished)
            config.steps = new_steps
            with self.assertRaisesRegex(ConfigError, rf"^the run in .*run{index} {refusal}--workdir.$"):
                workdir.completed_run(directory, config)
        config.steps = 4  # The last run is unfinished: shorter is allowed.
        self.assertIsNone(workdir.completed_run(directory, config))


class MakeWorkdirTest(tu.TestCase):
    def test_writes_config_json_once(self):
        directory = os.path.join(self.get_temp_dir(), "a", "run")
        config = tu.tiny_config("ring8")
        workdir.make_workdir(directory, config)
        self.assertEqual(os.listdir(directory), ["config.json"])
        with open(os.path.join(directory, "config.json")) as f:
            self.assertEqual(json.load(f), config.to_dict())
        config.seed = 7  # A rerun does not rewrite it (completed_run compares first).
        workdir.make_workdir(directory, config)
        with open(os.path.join(directory, "config.json")) as f:
            self.assertEqual(json.load(f)["seed"], 0)

    def test_unwritable(self):
        blocker = os.path.join(self.get_temp_dir(), "file")
        open(blocker, "w").close()
        with self.assertRaisesRegex(
            ConfigError, r"cannot write to workdir '.*file/run' \(NotADirectoryError.*--workdir=DIR"
        ):
            workdir.make_workdir(os.path.join(blocker, "run"), tu.tiny_config("ring8"))


class LockTest(tu.TestCase):
    def test_a_second_run_is_refused_naming_the_first_and_the_lock_is_free_after(self):
        directory = os.path.join(self.get_temp_dir(), "run")
        said = []
        with workdir.locked(directory, say=said.append):
            with open(os.path.join(directory, workdir.LOCK)) as f:
                owner = json.load(f)
            self.assertEqual((owner["pid"], owner["host"]), (os.getpid(), socket.gethostname()))
            with self.assertRaisesRegex(
                workdir.WorkdirInUseError,
                rf"^workdir {directory} is in use by another run \(pid {os.getpid()} on {socket.gethostname()}, since "
                r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\): wait for it to end or stop it, or pass another --workdir.$",
            ):
                with workdir.locked(directory, say=said.append):
                    pass
        with workdir.locked(directory, say=said.append):
            pass
        self.assertEqual(said, [])  # a lock released at the end is not a stale one

    def test_a_lock_whose_process_is_gone_is_taken_over_in_one_line(self):
        directory = self.get_temp_dir()
        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        owner = {"pid": int(gone.stdout), "host": socket.gethostname(), "started": "2026-12-06 01:02:03"}
        with open(os.path.join(directory, workdir.LOCK), "w") as f:
            json.dump(owner, f)
        said = []
        with workdir.locked(directory, say=said.append):
            pass
        self.assertEqual(
            said,
            [
                f"Took over the lock of workdir {directory} from pid {owner['pid']} on {owner['host']} "
                "(since 2026-12-06 01:02:03): that process is gone."
            ],
        )

    def test_without_flock_a_live_owner_on_this_host_refuses_and_a_dead_one_is_stale(self):
        directory = self.get_temp_dir()
        with open(os.path.join(directory, workdir.LOCK), "w") as f:
            json.dump({"pid": os.getppid(), "host": socket.gethostname(), "started": "then"}, f)
        with mock.patch.object(workdir, "fcntl", None):
            with self.assertRaisesRegex(workdir.WorkdirInUseError, rf"pid {os.getppid()} on"):
                with workdir.locked(directory, say=print):
                    pass

    def test_an_unwritable_workdir_is_one_line(self):
        blocker = os.path.join(self.get_temp_dir(), "file")
        open(blocker, "w").close()
        with self.assertRaisesRegex(ConfigError, r"^cannot write to workdir '.*file/run' \(NotADirectoryError"):
            with workdir.locked(os.path.join(blocker, "run")):
                pass


if __name__ == "__main__":
    tf.test.main()
