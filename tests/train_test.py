"""train.py: bad input (in process), the default run's artefacts and resume after SIGKILL
(in subprocesses)."""

import contextlib
import glob
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import time
from unittest import mock

import tensorflow as tf
from absl.testing import parameterized

import train
from tests import testing_utils as tu
from tf_fusedprop.experiment import train_lib

TRAIN = os.path.abspath(train.__file__)


class _Terminal(io.StringIO):
    """A captured stdout that says whether it is a terminal."""

    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def run_cli(*args):
    """`train.run` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = train.run(["train.py", *args])
    return status, out.getvalue(), err.getvalue()


def _python(*args, cwd, timeout=180):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _md5(path):
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


def _read_json(path):
    with open(path) as f:
        return json.load(f)


class BadInputTest(tu.TestCase):
    @parameterized.parameters(
        (["--config.nonexistent=1"], r"unknown config key 'nonexistent' \(received --config.nonexistent=1\); valid keys here: batch_size"),
        (["--config.generator.depth=2"], r"unknown config key 'generator.depth' .*; valid keys here: width\."),
        (["--config.steps=abc"], r"bad value for config.steps: .*'abc'.*expected a value of type int"),
        (["--config=configs/nofile.py"], r"cannot load the config file .*nofile.py.*with one of: cifar10_cnn_hinge.py"),
        (["--config=configs/cifar10_cnn_hinge.py:fused"], r"unknown config variant 'fused'; expected one of alternating, inverse"),
        (["--bogus=1"], r"Unknown command line flag 'bogus'.*--workdir=DIR"),
        (["--config.loss=hinge"], r"invalid \(loss, form\) pair: The hinge loss does not support form='fused'"),
        (["--config.loss=l2"], r"unknown loss: received config.loss='l2'"),
        (["--config.steps=0"], r"config.steps must be a positive integer; received steps=0"),
        (["--strategy=gpu"], r"flag --strategy=gpu: value should be one of <auto\|one_device\|mirrored\|multi_worker\|tpu>"),
        (["--strategy=multi_worker"], r"--strategy=multi_worker needs TF_CONFIG, the cluster and this worker's task"),
        (["--strategy=tpu"], r"--strategy=tpu found no TPU \(.+\); run on a Cloud TPU VM or set TPU_NAME"),
        (["--workdir={tmp}/file/run"], r"cannot write to workdir '.*file/run' \(NotADirectoryError"),
        (
            ["--config=configs/cifar10_cnn_ns.py", "--config.data_dir={tmp}"],
            r"CIFAR-10 is not available offline: .*data_dir=.*--config.data_dir=DIR",
        ),
        (
            ["--config=configs/cifar10_cnn_ns.py", "--config.inception_path=https://tfhub.dev/x"],
            r"received path_or_url='https://tfhub.dev/x', which is a URL.*\(config.inception_path\)",
        ),
    )
    def test_bad_input_is_one_line_with_exit_status_2(self, args, message):
        tmp = self.get_temp_dir()
        open(os.path.join(tmp, "file"), "w").close()
        args = [arg.format(tmp=tmp) for arg in args]
        if not any(arg.startswith("--workdir") for arg in args):
            args.append(f"--workdir={os.path.join(tmp, 'run')}")
        status, out, err = run_cli(*args)
        self.assertEqual(status, 2)
        self.assertEqual(out, "")
        self.assertEqual(err.count("\n"), 1)
        self.assertTrue(err.startswith("error: "), err)
        self.assertNotIn("Traceback", err)
        self.assertRegex(err, message)
        self.assertFalse(os.path.exists(os.path.join(tmp, "run")))

    def test_config_paths_resolve_from_any_directory(self):
        self.addCleanup(os.chdir, os.getcwd())
        os.chdir(self.get_temp_dir())
        status, _, err = run_cli("--config=configs/ring8.py", "--config.loss=hinge")
        self.assertEqual(status, 2)
        self.assertIn("hinge loss does not support form='fused'", err)  # The file loaded.


class CommandLineTest(tu.TestCase):
    def test_progress_bar_on_a_terminal_and_one_line_per_epoch_otherwise(self):
        calls = []
        fake_train = lambda config, workdir, verbose, strategy: calls.append((config.name, workdir, verbose))
        with mock.patch.object(train_lib, "train", fake_train):
            for tty in (True, False):
                with contextlib.redirect_stdout(_Terminal(tty)):
                    self.assertEqual(train.run(["train.py", "--workdir=w"]), 0)
        self.assertEqual(calls, [("digits", "w", 1), ("digits", "w", 2)])

    def test_help(self):
        status, out, _ = run_cli("--help")
        self.assertEqual(status, 0)
        self.assertIn("--config.<key>=<value>", out)
        self.assertIn("ring8.py", out)


class EndToEndTest(tu.TestCase):
    def test_default_run_leaves_its_artefacts_and_the_generator_reloads_in_a_fresh_process(self):
        tmp = self.get_temp_dir()
        workdir = os.path.join(tmp, "run")
        result = _python(
            TRAIN, "--config.steps=4", "--config.steps_per_epoch=2", "--config.batch_size=16", "--config.eval_samples=50",
            "--config.generator.width=8", "--config.discriminator.width=8", f"--workdir={workdir}", cwd=tmp,
        )
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        self.assertNotIn("Traceback", result.stderr)
        self.assertIn("Epoch 1/2", result.stdout)
        self.assertIn("FID (digits classifier, 50 samples)", result.stdout)
        self.assertEqual(os.listdir(tmp), ["run"])

        self.assertEqual(sorted(os.listdir(os.path.join(workdir, "samples"))), ["epoch_0001.png", "epoch_0002.png"])
        summary = _read_json(os.path.join(workdir, "summary.json"))
        self.assertEqual(summary["steps"], 4)
        self.assertGreater(summary["steps_per_second"], 0)
        self.assertEqual(summary["config"]["name"], "digits")
        self.assertEqual(summary["final_metric"]["name"], "fid")
        self.assertGreater(summary["final_metric"]["value"], 0)
        self.assertNotEmpty([f for f in os.listdir(os.path.join(workdir, "cache")) if f.startswith("digits_classifier")])
        events = tu.read_events(os.path.join(workdir, "logs"))
        self.assertContainsSubset({"d_loss", "g_loss", "fid", "steps_per_second", "samples", "config"}, set(events))
        self.assertEqual([step for step, _, _ in events["fid"]], [2, 4])

        reload = _python(
            "-c",
            "import sys, numpy as np, tensorflow as tf;"
            "generator = tf.saved_model.load(sys.argv[1]);"
            "images = generator.serve(tf.random.normal([3, 32])).numpy();"
            "print(images.shape, images.min() >= -1, images.max() <= 1)",
            os.path.join(workdir, "generator"),
            cwd=tmp,
            timeout=120,
        )
        self.assertEqual(reload.returncode, 0, reload.stderr[-3000:])
        self.assertTrue(reload.stdout.strip().endswith("(3, 16, 16, 1) True True"), reload.stdout)

    def test_sigkill_then_the_same_command_resumes_from_the_last_checkpoint(self):
        tmp = self.get_temp_dir()
        command = [
            sys.executable, TRAIN, "--config=configs/ring8.py", "--config.steps=2000", "--config.steps_per_epoch=200",
            "--config.eval_samples=200", "--config.grid_samples=200", "--config.generator.units=32",
            "--config.discriminator.units=32",
        ]
        process = subprocess.Popen(command, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while not glob.glob(os.path.join(tmp, "runs", "ring8-*", "backup", "checkpoint.json")):
                self.assertTrue(process.poll() is None and time.monotonic() < deadline, "no checkpoint was written")
                time.sleep(0.02)
            self.assertIsNone(process.poll())
        finally:
            process.kill()  # SIGKILL.
            process.wait()
        (workdir,) = glob.glob(os.path.join(tmp, "runs", "ring8-*"))
        self.assertFalse(os.path.exists(os.path.join(workdir, "summary.json")))
        epoch = _read_json(os.path.join(workdir, "backup", "checkpoint.json"))["epoch"]
        self.assertBetween(epoch, 1, 9)
        samples_dir = os.path.join(workdir, "samples")
        before = {name: _md5(os.path.join(samples_dir, name)) for name in os.listdir(samples_dir)}
        self.assertContainsSubset({f"epoch_{e:04d}.png" for e in range(1, epoch + 1)}, set(before))

        result = subprocess.run(command, cwd=tmp, capture_output=True, text=True, timeout=180)
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        self.assertEqual(glob.glob(os.path.join(tmp, "runs", "ring8-*")), [workdir])  # The same run, resumed.
        self.assertIn(f"Resuming from epoch {epoch}/10 ({200 * epoch} steps done)", result.stdout)
        self.assertIn("modes covered: ", result.stdout)
        self.assertIn("/8, high-quality samples: ", result.stdout)

        summary = _read_json(os.path.join(workdir, "summary.json"))
        self.assertEqual((summary["steps"], summary["d_steps"], summary["resumed_from_epoch"]), (2000, 2000, epoch))
        self.assertEqual(_read_json(os.path.join(workdir, "backup", "checkpoint.json"))["steps"], 2000)
        self.assertEqual(sorted(os.listdir(samples_dir)), [f"epoch_{e:04d}.png" for e in range(1, 11)])
        for e in range(1, epoch + 1):
            name = f"epoch_{e:04d}.png"
            self.assertEqual(_md5(os.path.join(samples_dir, name)), before[name])
        events = tu.read_events(os.path.join(workdir, "logs"))
        self.assertEqual(sorted({step for step, _, _ in events["d_loss"]}), list(range(200, 2001, 200)))


if __name__ == "__main__":
    tf.test.main()
