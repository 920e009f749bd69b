"""train.py: bad input (in process), the default run's artefacts (in a subprocess) and resume
after SIGKILL (of a subprocess)."""

import contextlib
import glob
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from unittest import mock

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds
from absl.testing import parameterized

import train
from tests import testing_utils as tu
from tf_fusedprop import precision
from tf_fusedprop.experiment import real_samples, train_lib

TRAIN = os.path.abspath(train.__file__)


class _Terminal(io.StringIO):
    """A captured stdout that says whether it is a terminal."""

    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def run_cli(*args, program="train.py"):
    """`train.run` in this process, as `program`: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = train.run([program, *args])
    return status, out.getvalue(), err.getvalue()


def _python(*args, cwd, timeout=180, env=None):
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env or os.environ
    )


def _md5(path):
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


def _read_json(path):
    with open(path) as f:
        return json.load(f)


#: `train.py` whose run waits once its first checkpoint is written, until a signal ends it: a
#: test's kill or Ctrl-C then lands at a known point, however slowly the test is scheduled.
_WAITS_AFTER_FIRST_CHECKPOINT = """
import signal, sys, time
# As under a terminal: a test started in a background job inherits SIGINT ignored (Python then
# installs no KeyboardInterrupt handler), and the Ctrl-C would never arrive.
signal.signal(signal.SIGINT, signal.default_int_handler)
import train
from tf_fusedprop.experiment import callbacks
save = callbacks.BackupAndRestore.on_epoch_end
def save_then_wait(self, epoch, logs=None):
    save(self, epoch, logs)
    for _ in range(3000 if epoch == 0 else 0):  # short sleeps: a signal that another thread
        time.sleep(0.1)  # receives is handled within 0.1 s
callbacks.BackupAndRestore.on_epoch_end = save_then_wait
sys.exit(train.run([train.__file__, *sys.argv[1:]]))
"""


def _start_until_first_checkpoint(test, args, workdir=None, **popen_kwargs):
    """A `train.py` process (`args`, and `--workdir=workdir` unless None: the default workdir
    under the test's temporary directory), returned once it waits after writing its first
    checkpoint (`_WAITS_AFTER_FIRST_CHECKPOINT`), with the run's directory."""
    tmp = test.get_temp_dir()
    command = [sys.executable, "-c", _WAITS_AFTER_FIRST_CHECKPOINT, *args]
    command += [f"--workdir={workdir}"] if workdir else []
    env = {**os.environ, "PYTHONPATH": os.path.dirname(TRAIN)}
    process = subprocess.Popen(command, cwd=tmp, env=env, **popen_kwargs)
    test.addCleanup(process.wait)
    test.addCleanup(process.kill)
    deadline = time.monotonic() + 120
    pattern = os.path.join(workdir or os.path.join(tmp, "runs", "*"), "backup", "checkpoint.json")
    while not (found := glob.glob(pattern)):
        test.assertTrue(process.poll() is None and time.monotonic() < deadline, "no checkpoint was written")
        time.sleep(0.02)
    return process, os.path.dirname(os.path.dirname(found[0]))


class BadInputTest(tu.TestCase):
    @parameterized.parameters(
        (
            ["--config.nonexistent=1"],
            r"unknown config key 'nonexistent' \(received --config.nonexistent=1\); valid keys here: adaptive_augment, alternate_every, augment, auto, batch_size",
        ),
        (["--config.generator.depth=2"], r"unknown config key 'generator.depth' .*; valid keys here: width\."),
        (["--config.steps=abc"], r"bad value for config.steps: .*'abc'.*expected a value of type int"),
        (
            ["--config=configs/cifar10_cnn_hinge.py:fused"],
            r"unknown config variant 'fused'; expected one of alternating, inverse",
        ),
        (["--bogus=1"], r"Unknown command line flag 'bogus'.*--workdir=DIR"),
        (
            ["--config=configs/digits.py:nonexistent"],
            r"config file .*configs/digits.py has no variants \(received --config=.*digits.py:nonexistent\); use "
            r"--config=.*configs/digits.py. The config files: cifar10_cnn_hinge.py",
        ),
        (
            ["--config=configs/nonexistent.py"],
            r"^error: config file configs/nonexistent.py does not exist; use --config=configs/<name>.py with one of: "
            r"cifar10_cnn_hinge.py, .*ring8.py \(in .*configs\).\n$",
        ),
        (
            ["--config=configs/nonexistent.py:fused", "--config.steps=10"],
            r"^error: config file configs/nonexistent.py does not exist; use",
        ),
        (
            ["--config.steps=10", "--config=configs/ring8.py"],
            r"Found --config.steps=10 in argv before a value for --config was specified: put --config=FILE before "
            r"the --config.<key>=<value> overrides",
        ),
        # Only a pair the user set is refused (a steps_per_execution not typed is fitted: FitTest).
        (
            ["--config=configs/ring8.py", "--config.steps_per_epoch=10", "--config.steps_per_execution=50"],
            r"the epoch length \(10 steps\) must be a multiple of config.steps_per_execution; received "
            r"steps_per_execution=50",
        ),
        # A feature's settings are checked while it is off (R1, GP and Lookahead are off in digits).
        (["--config.r1.every=0"], r"invalid config.r1: every must be a positive integer. Received: every=0"),
        (["--config.gp.every=0"], r"invalid config.gp: every must be a positive integer. Received: every=0"),
        (["--config.lookahead.alpha=5.0"], r"invalid config.lookahead: Lookahead's alpha must be in \(0, 1\]"),
        (["--config.loss=hinge"], r"invalid config.loss, config.form: The hinge loss does not support form='fused'"),
        (["--config.loss=l2"], r"invalid config.loss: Unknown GAN loss. Received: loss='l2'"),
        (["--config.form=fusd"], r"^error: invalid config.form: Unknown training form. Received: form='fusd'. Valid"),
        (
            ["--config=configs/ring8.py", "--config.jit_compile=yes"],
            r"^error: config.jit_compile must be True or False \(true/false, 1/0 too\); received 'yes'.\n$",
        ),
        (["--config.steps=0"], r"config.steps must be a positive integer; received steps=0"),
        (
            ["--strategy=gpu"],
            r"flag --strategy=gpu: value should be one of <auto\|one_device\|mirrored\|multi_worker\|tpu>",
        ),
        (["--strategy=multi_worker"], r"--strategy=multi_worker needs TF_CONFIG, the cluster and this worker's task"),
        (["--strategy=tpu"], r"--strategy=tpu found no TPU \(.+\); run on a Cloud TPU VM or set TPU_NAME"),
        (["--workdir={tmp}/file/run"], r"cannot write to workdir '.*file/run' \(NotADirectoryError"),
        (
            ["--config=configs/cifar10_cnn_ns.py", "--config.data_dir={tmp}"],
            r"CIFAR-10 is not prepared in data_dir=.* and cannot be downloaded: cannot reach http://127.0.0.1:.*"
            r"--config.data_dir=DIR",
        ),
        (
            ["--config=configs/cifar10_cnn_ns.py", "--config.inception_path={offline}/inception/1"],
            r"received path_or_url='http://127.0.0.1:\d+/inception/1', which could not be downloaded: cannot reach "
            r".*ConnectionRefusedError.*\(config.inception_path\)",
        ),
    )
    def test_bad_input_is_one_line_with_exit_status_2(self, args, message):
        tmp = self.get_temp_dir()
        open(os.path.join(tmp, "file"), "w").close()
        offline = tu.closed_port_url("")  # This machine's internet: nothing answers there.
        args = [arg.format(tmp=tmp, offline=offline) for arg in args]
        if not any(arg.startswith("--workdir") for arg in args):
            args.append(f"--workdir={os.path.join(tmp, 'run')}")
        with mock.patch.object(real_samples, "CIFAR10_URL", offline + "/cifar-10-binary.tar.gz"):
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


class QuietStartTest(tu.TestCase):
    """TensorFlow's native start-up lines ignore TF_CPP_MIN_LOG_LEVEL: bad input is one line anyway.
    And train.py's oneDNN and inter-op defaults are in the environment before the config file
    (configs/base.py imports tf_fusedprop, so TensorFlow loads while the flags are parsed)."""

    # Each kind of bad input once, each TF_CPP_MIN_LOG_LEVEL once (unset: TF's default, all lines).
    @parameterized.parameters((None, "batch_size"), ("3", "workdir"))
    def test_bad_input_is_one_line_in_a_fresh_process_whatever_tf_cpp_min_log_level(self, level, bad):
        tmp = self.get_temp_dir()
        open(os.path.join(tmp, "file"), "w").close()
        args = {
            "batch_size": ["--config.batch_size=-3", f"--workdir={os.path.join(tmp, 'run')}"],
            "workdir": [f"--workdir={os.path.join(tmp, 'file', 'run')}"],
        }[bad]
        unset = ("TF_CPP_MIN_LOG_LEVEL", "TF_ENABLE_ONEDNN_OPTS", "TF_NUM_INTEROP_THREADS")  # as a user has them
        env = {key: value for key, value in os.environ.items() if key not in unset}
        if level is not None:
            env["TF_CPP_MIN_LOG_LEVEL"] = level
        marks = os.path.join(tmp, "marks")
        script = (  # `python train.py ARGS`, then what TensorFlow was loaded with, written to a file
            "import os, sys\n"
            f"sys.path.insert(0, {os.path.dirname(TRAIN)!r})\n"
            "import train\n"
            f"status = train.run(['train.py', *{args!r}])\n"
            "from tf_fusedprop import machine\n"
            f"with open({marks!r}, 'w') as f:\n"
            "    f.write(repr((machine._ONEDNN_AT_IMPORT, os.environ.get('TF_NUM_INTEROP_THREADS'))))\n"
            "sys.exit(status)\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", script], cwd=tmp, env=env, capture_output=True, text=True, timeout=180
        )
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(result.stdout, "")
        self.assertLen(result.stderr.splitlines(), 1, result.stderr)
        self.assertRegex(
            result.stderr, r"^error: (config.batch_size must be a positive integer|cannot write to workdir)"
        )
        with open(marks) as f:
            self.assertEqual(f.read(), "('1', '1')")  # oneDNN on and one inter-op thread, as train.py sets

    def test_what_native_code_printed_is_shown_with_a_python_error_raised_meanwhile(self):
        script = (  # _startup loaded alone: it imports nothing of TensorFlow, so this process starts at once
            "import importlib.util, os, sys\n"
            "spec = importlib.util.spec_from_file_location('_startup', os.path.join('tf_fusedprop', '_startup.py'))\n"
            "_startup = importlib.util.module_from_spec(spec)\n"
            "spec.loader.exec_module(_startup)\n"
            "assert 'tensorflow' not in sys.modules\n"
            "with _startup.native_stderr_silenced(True):\n"
            "    os.write(2, b'hidden unless it fails\\n')\n"
            "with _startup.native_stderr_silenced(True):\n"
            "    os.write(2, b'native context\\n')\n"
            "    raise ImportError('broken install')\n"
        )
        result = _python("-c", script, cwd=os.path.dirname(TRAIN), timeout=60)
        self.assertEqual(result.returncode, 1)
        self.assertNotIn("hidden unless it fails", result.stderr)
        self.assertRegex(
            result.stderr,
            r"^native context\nTraceback \(most recent call last\):\n(.|\n)*ImportError: broken install\n$",
        )


def _leaves(value, prefix=""):
    """`{dotted key: value}` of a config's fields."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _leaves(item, f"{prefix}{key}.").items()}
    return {prefix[:-1]: value}


class EveryValueTypeableTest(tu.TestCase):
    """Every value a shipped config holds can be typed back on the command line, None included
    (absl reads None as text, or refuses it for a number)."""

    def test_each_configs_fields_read_back_as_typed(self):
        for name in train._config_files():
            base = ["train.py", f"--config=configs/{name}"]
            _, config, problem = train.read_command_line(base)
            self.assertIsNone(problem, name)
            leaves = _leaves(config.to_dict())
            typed = [f"--config.{key}={'None' if value is None else value}" for key, value in leaves.items()]
            _, again, problem = train.read_command_line(base + typed)
            self.assertIsNone(problem, f"{name}: {problem}")
            self.assertEqual(_leaves(again.to_dict()), leaves, name)

    def test_an_optional_number_can_be_set_to_none_and_an_unknown_key_is_one_line(self):
        base = ["train.py", "--config=configs/mnist.py"]
        _, config, _ = train.read_command_line([*base, "--config.ema.decay=None", "--config.cache_dir=None"])
        self.assertEqual((config.ema.decay, config.cache_dir), (None, None))
        _, _, problem = train.read_command_line([*base, "--config.ema.decy=None"])
        self.assertRegex(
            problem,
            r"^unknown config key 'ema.decy' \(received --config.ema.decy=None\); valid keys here: decay, rampup, start\.$",
        )
        self.assertEqual(run_cli(*base[1:], "--config.steps=None")[0], 2)  # refused by validation, in one line
        for spelled in ("none", "NULL"):  # as typed by hand; a text field keeps the word (a background "none")
            images = ["train.py", "--config=configs/images.py", "--config.data=x"]
            _, config, _ = train.read_command_line(
                [*images, f"--config.ema.decay={spelled}", f"--config.background={spelled}"]
            )
            self.assertEqual((config.ema.decay, config.background), (None, spelled))


#: Trains the 64 px SNGAN pair (G's width 256, D's 8: G's top layers at full size, where the
#: rounding varied) in the precision train.py picks on this machine (`precision.choose("auto")`:
#: bfloat16 where the CPU has it natively, float32 where bfloat16 would be emulated) with batch
#: 64 for 6 updates, under train.py's TensorFlow environment, and prints the policy and a digest
#: of the weights.
_TRAINS_64_PX = """
import hashlib, os
import train
for key, value in train.TENSORFLOW_ENVIRONMENT.items():
    os.environ.setdefault(key, value)
import keras
import numpy as np
import tf_fusedprop as fp
from tf_fusedprop import networks, optimizers, precision
policy = precision.choose("auto").policy
print("POLICY", policy)
keras.utils.set_random_seed(0)
g = networks.sngan.cnn_generator(16, 256, 3, dtype=policy, image_size=64)
d = networks.sngan.cnn_discriminator((64, 64, 3), 8, dtype=policy, bottom=4)
gan = fp.FusedPropGAN(g, d, loss="nonsaturating", form="fused", seed=0)
adam = lambda: optimizers.Adam(2e-4, beta_1=0.0)
gan.compile(d_optimizer=adam(), g_optimizer=adam())
real = np.random.default_rng(1).uniform(-1, 1, size=(6 * 64, 64, 64, 3)).astype("float32")
gan.fit(real, batch_size=64, epochs=1, verbose=0, shuffle=False)
print("WEIGHTS", hashlib.sha256(b"".join(np.asarray(w).tobytes() for w in g.weights + d.weights)).hexdigest())
"""


class RepeatableTest(tu.TestCase):
    def test_two_fresh_processes_train_the_64_px_pair_in_the_machines_precision_to_the_same_weights(self):
        # TensorFlow's default inter-op threads gave 4 digests in 4 processes in bfloat16 (Intel
        # Xeon with AMX) and 3 in 3 in float32 (AMD EPYC with AVX2 only, where bfloat16 is emulated,
        # slower, and not what train.py picks); the weight-gradient formulation is pinned, so only
        # the runtime's scheduling is tested.
        env = {key: value for key, value in os.environ.items() if key != "TF_NUM_INTEROP_THREADS"}
        env.update(PYTHONPATH=os.path.dirname(TRAIN), TF_FUSEDPROP_WEIGHT_GRADIENT="native")
        processes = [
            subprocess.Popen(
                [sys.executable, "-c", _TRAINS_64_PX],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        digests = []
        for process in processes:
            out, err = process.communicate(timeout=300)
            self.assertEqual(process.returncode, 0, err[-3000:])
            digests.append(tu.marked_lines(out)["WEIGHTS"])
            self.assertEqual(tu.marked_lines(out)["POLICY"], precision.choose("auto").policy)
        self.assertEqual(digests[0], digests[1])


class CommandLineTest(tu.TestCase):
    def test_sigterm_while_the_config_is_read_is_one_line_and_exit_143(self):
        script = (
            "import os, signal, sys, time, train\n"
            "def read(self):\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "    time.sleep(30)\n"
            "train.CommandLine.read = read\n"
            "sys.exit(train.run(['train.py']))\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", script], cwd=os.path.dirname(TRAIN), capture_output=True, text=True, timeout=60
        )
        self.assertEqual(result.returncode, 143, result.stderr[-2000:])
        self.assertEqual(
            result.stderr, "stopped by SIGTERM before training started; nothing was trained or written to resume from\n"
        )

    def test_progress_bar_on_a_terminal_and_one_line_per_epoch_otherwise(self):
        calls = []
        fake_train = lambda config, workdir, verbose, strategy, overridden: calls.append(
            (config.name, workdir, verbose)
        )
        with mock.patch.object(train_lib, "train", fake_train):
            for tty in (True, False):
                with contextlib.redirect_stdout(_Terminal(tty)):
                    self.assertEqual(train.run(["train.py", "--workdir=w"]), 0)
        self.assertEqual(calls, [("digits", "w", 1), ("digits", "w", 2)])

    def test_the_config_file_is_read_alike_after_an_equals_sign_or_a_space(self):
        path = "configs/cifar10_cnn_hinge.py"
        for config_args in ([f"--config={path}:inverse"], ["--config", f"{path}:inverse"]):
            line = train.CommandLine(["train.py", *config_args, "--config.steps=3"]).read()
            self.assertEqual((line.problem, line.config.steps, line.config.form), (None, 3, "inverse"))
            # The file's own values (what a divergence caps its suggested rates at), overrides aside.
            self.assertEqual((line.config_path, line.config_variant), (path, "inverse"))
            self.assertEqual((line.file_config().steps, line.file_config().form), (100_000, "inverse"))

    def test_the_keys_set_on_the_command_line_reach_train(self):
        calls = []
        fake_train = lambda config, workdir, verbose, strategy, overridden: calls.append(overridden)
        with mock.patch.object(train_lib, "train", fake_train), contextlib.redirect_stdout(io.StringIO()):
            train.run(["train.py", "--config.steps=10", "--config.generator.width", "8", "--workdir=w"])
        self.assertEqual(calls, [{"steps", "generator.width"}])

    def test_a_new_epoch_length_alone_fits_steps_per_execution_with_a_note(self):
        workdir = os.path.join(self.get_temp_dir(), "run")
        args = [arg for arg in _TINY_RING8 if not arg.startswith("--config.steps_per_execution")]
        status, out, err = run_cli(*args, "--config.steps=20", "--config.steps_per_epoch=10", f"--workdir={workdir}")
        self.assertEqual(status, 0, err)
        self.assertIn(
            "config.steps_per_execution: 10, not the config's 50, to divide the epoch length (10 steps); set it on "
            "the command line to choose another divisor.\n",
            out,
        )
        self.assertEqual(_read_json(os.path.join(workdir, "config.json"))["steps_per_execution"], 10)
        self.assertEqual(_read_json(os.path.join(workdir, "summary.json"))["steps"], 20)

    def test_help(self):
        status, out, _ = run_cli("--help")
        self.assertEqual(status, 0)
        self.assertIn("--config.<key>=<value>", out)
        self.assertIn("ring8.py", out)


class EndToEndTest(tu.TestCase):
    def test_default_run_leaves_its_artefacts_and_the_generator_reloads_in_a_fresh_process(self):
        tmp = self.get_temp_dir()
        workdir, user_cache = os.path.join(tmp, "run"), os.path.join(self.get_temp_dir(), "user_cache")
        args = [
            TRAIN,
            "--config.steps=4",
            "--config.steps_per_epoch=2",
            "--config.steps_per_execution=2",
            "--config.batch_size=16",
            "--config.eval_samples=50",
            "--config.generator.width=8",
            "--config.discriminator.width=8",
        ]
        env = {**os.environ, "TF_FUSEDPROP_CACHE": user_cache}
        result = _python(*args, f"--workdir={workdir}", cwd=tmp, env=env)
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        self.assertNotIn("Traceback", result.stderr)
        self.assertIn("Epoch 1/2", result.stdout)
        self.assertIn("FID (digits classifier, 50 samples)", result.stdout)
        self.assertEqual(sorted(os.listdir(tmp)), ["run", "user_cache"])  # nothing else beside the workdir

        self.assertEqual(sorted(os.listdir(os.path.join(workdir, "samples"))), ["epoch_0001.png", "epoch_0002.png"])
        summary = _read_json(os.path.join(workdir, "summary.json"))
        self.assertEqual(summary["steps"], 4)
        self.assertGreater(summary["steps_per_second"], 0)
        self.assertEqual(summary["config"]["name"], "digits")
        self.assertEqual(summary["final_metric"]["name"], "fid")
        self.assertGreater(summary["final_metric"]["value"], 0)
        # The evaluation models are cached once per user, not per run.
        self.assertNotEmpty([f for f in os.listdir(user_cache) if f.startswith("digits_classifier")])
        self.assertFalse(os.path.exists(os.path.join(workdir, "cache")))
        self.assertIn("trained now in", result.stdout)
        self.assertIn(f"Writing to {workdir}; rerun the same command", result.stdout)
        with mock.patch.dict(os.environ, {"TF_FUSEDPROP_CACHE": user_cache}):  # a second run, in this process
            status, out, err = run_cli(*args[1:], f"--workdir={os.path.join(tmp, 'second')}")
        self.assertEqual(status, 0, err[-3000:])
        self.assertIn(f"(cached in {user_cache})", out)
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

    def test_sigkill_then_the_same_command_resumes_from_the_last_checkpoint_and_a_second_run_is_refused(self):
        tmp = self.get_temp_dir()
        args = [
            "--config=configs/ring8.py",
            "--config.steps=60",
            "--config.steps_per_epoch=20",
            "--config.eval_samples=200",
            "--config.grid_samples=200",
            "--config.generator.units=32",
            "--config.discriminator.units=32",
        ]
        process, workdir = _start_until_first_checkpoint(
            self, args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        # The later commands run in this process, from the same directory: what matters is the
        # killed process's lock and checkpoint.
        self.addCleanup(os.chdir, os.getcwd())
        os.chdir(tmp)
        # The same command again meanwhile (a second terminal, a requeued job): it finds the run
        # and is refused, in one line naming the process that trains it.
        status, _, err = run_cli(*args, program=TRAIN)
        self.assertEqual(status, 2, err[-3000:])
        self.assertRegex(
            err,
            rf"^error: workdir {re.escape(os.path.relpath(workdir, tmp))} is in use by another run \(pid {process.pid} on .*, since .*\): "
            r"wait for it to end or stop it, or pass another --workdir.\n$",
        )
        process.kill()  # SIGKILL.
        process.wait()
        self.assertFalse(os.path.exists(os.path.join(workdir, "summary.json")))
        self.assertEqual(_read_json(os.path.join(workdir, "backup", "checkpoint.json"))["epoch"], 1)
        samples_dir = os.path.join(workdir, "samples")
        before = {name: _md5(os.path.join(samples_dir, name)) for name in os.listdir(samples_dir)}
        self.assertEqual(set(before), {"epoch_0001.png"})

        status, out, err = run_cli(*args, program=TRAIN)  # the same command: it finds its run
        self.assertEqual(status, 0, err[-3000:])
        self.assertEqual(glob.glob(os.path.join(tmp, "runs", "ring8-*")), [workdir])
        self.assertIn("Resuming from epoch 1/3 (20 steps done)", out)
        self.assertIn(f"Took over the lock of workdir {os.path.relpath(workdir, tmp)} from pid {process.pid} on ", out)
        self.assertIn("modes covered: ", out)
        self.assertIn("/8, high-quality samples: ", out)

        summary = _read_json(os.path.join(workdir, "summary.json"))
        self.assertEqual((summary["steps"], summary["d_steps"], summary["resumed_from_epoch"]), (60, 60, 1))
        self.assertEqual(_read_json(os.path.join(workdir, "backup", "checkpoint.json"))["steps"], 60)
        self.assertEqual(sorted(os.listdir(samples_dir)), [f"epoch_{e:04d}.png" for e in range(1, 4)])
        self.assertEqual(_md5(os.path.join(samples_dir, "epoch_0001.png")), before["epoch_0001.png"])
        events = tu.read_events(os.path.join(workdir, "logs"))
        self.assertEqual(sorted({step for step, _, _ in events["d_loss"]}), [20, 40, 60])


#: configs/images.py shrunk to seconds: tiny networks, batch 4, 2 epochs of 10 G updates.
_TINY_IMAGES = [
    "--config.generator.width=16",
    "--config.discriminator.width=4",
    "--config.batch_size=4",
    "--config.steps=20",
    "--config.steps_per_epoch=10",
    "--config.grid_samples=4",
    "--config.mixed_precision=float32",
]


class OwnImagesTest(tu.TestCase):
    """configs/images.py on a folder (and a zip) of real PNG, JPEG, BMP, GIF and WebP files."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.root = tu.class_temp_dir(cls)
        cls.folder = os.path.join(cls.root, "images")
        tu.write_image_tree(cls.folder)
        cls.zip = shutil.make_archive(os.path.join(cls.root, "images"), "zip", cls.folder)

    def train(self, *args, config="configs/images.py"):
        workdir = os.path.join(self.get_temp_dir(), "run")
        cache = f"--config.cache_dir={os.path.join(self.root, 'cache')}"
        status, out, err = run_cli(f"--config={config}", *_TINY_IMAGES, cache, *args, f"--workdir={workdir}")
        return status, out, err, workdir

    def test_a_folder_at_32_px_fused_then_its_generator_serves(self):
        status, out, err, workdir = self.train(f"--config.data={self.folder}", "--config.image_size=32")
        self.assertEqual((status, err), (0, ""))
        self.assertRegex(
            out,
            r"Images: 16 from .*images at 32x32x3, 2 classes, 1 with transparency \(composited onto white\); skipped 1 "
            r"of 17 files: .*one/corrupt.jpg \(not an image file: .*\), each with its reason in .*skipped.txt; "
            r"(prepared into|reused from) .*images/[0-9a-f]{16}_32px_autoc_v3_on_white.\n",
        )
        self.assertRegex(
            out, r"\nFID/KID/IS off: TF-GAN's Inception module could not be fetched \(.*\); training goes on\."
        )
        self.assertIn("form fused, 20 steps (2 epochs of 10), batch 4", out)
        self.assertEqual(_read_json(os.path.join(workdir, "summary.json"))["steps"], 20)
        # Loaded here: export_test and EndToEndTest load SavedModels in fresh processes.
        generator = tf.saved_model.load(os.path.join(workdir, "generator"))
        self.assertEqual(generator.serve(tf.random.normal([5, 128])).shape, (5, 32, 32, 3))

    def test_a_zip_at_64_px_alternating_gray_and_mirrored(self):
        args = [f"--config.data={self.zip}", "--config.image_size=64", "--config.channels=1", "--config.mirror=True"]
        status, out, err, workdir = self.train(*args, config="configs/images.py:alternating")
        self.assertEqual((status, err), (0, ""))
        self.assertRegex(
            out, r"Images: 16 from .*images.zip at 64x64x1, 2 classes, 1 with transparency .*; skipped 1 of 17 files"
        )
        self.assertIn("form alternating", out)
        grid = tf.io.decode_png(tf.io.read_file(os.path.join(workdir, "samples", "epoch_0002.png")))
        self.assertEqual(grid.shape[-1], 1)

    def test_conditional_from_subfolders_samples_a_class_by_name_and_serves_with_labels(self):
        status, out, err, workdir = self.train(
            f"--config.data={self.folder}", "--config.image_size=32", "--config.conditional=True"
        )
        self.assertEqual((status, err), (0, ""))
        self.assertEqual(_read_json(os.path.join(workdir, "classes.json")), ["one", "zero"])
        self.assertEqual(_read_json(os.path.join(workdir, "config.json"))["num_classes"], 2)
        status, out, err = run_cli("--mode=sample", f"--workdir={workdir}", "--class=zero", "--num=6")
        self.assertEqual((status, err), (0, ""))
        self.assertRegex(out, r"Wrote 6 samples of class 'zero' \(the EMA generator at epoch 2, step 20\) to ")
        with np.load(os.path.join(workdir, "samples-6-zero.npz")) as arrays:
            self.assertAllEqual(arrays["labels"], [1] * 6)
            self.assertEqual(arrays["samples"].shape, (6, 32, 32, 3))
        status, _, err = run_cli("--mode=sample", f"--workdir={workdir}", "--class=two")
        self.assertEqual(
            (status, err), (2, f"error: the run in {workdir} has no class 'two'; its classes: one, zero.\n")
        )
        generator = tf.saved_model.load(os.path.join(workdir, "generator"))
        self.assertEqual(generator.serve(tf.random.normal([3, 128]), tf.constant([0, 1, 1])).shape, (3, 32, 32, 3))

    def test_fid_against_your_images_under_an_inception_module_during_training_and_in_evaluate_mode(self):
        module = os.path.join(self.get_temp_dir(), "inception")
        tf.saved_model.save(tu.InceptionModuleStandIn(), module)  # pool_3: the images' channel means
        scoring = [f"--config.inception_path={module}", "--config.eval_samples=20", "--config.eval_real_samples=12"]
        status, out, err, workdir = self.train(f"--config.data={self.folder}", "--config.image_size=16", *scoring)
        self.assertEqual((status, err), (0, ""))
        self.assertRegex(
            out,
            r"FID \(Inception, 20 samples\): [\d.]+, KID: -?[\d.e-]+ \(raw MMD\^2, as kid in the epoch lines\), inception score",
        )
        cached = [name for name in os.listdir(os.path.join(self.root, "cache")) if name.endswith("_stats.npz")]
        self.assertLen(cached, 1)
        self.assertRegex(cached[0], r"^[0-9a-f]{16}_16px_autoc_v3_on_white_real12_inception[0-9a-f]{8}_kid_stats.npz$")
        with np.load(os.path.join(self.root, "cache", cached[0])) as stats:
            self.assertEqual(stats["features"].shape, (12, 3))  # the stand-in's 3 features of the 12 real images
        status, out, err = run_cli("--mode=evaluate", f"--workdir={workdir}", "--num=30")
        self.assertEqual((status, err), (0, ""))
        # The run's images are opened once more (from the cache) for the shapes and the reference.
        self.assertRegex(
            out,
            r"^Images: 16 from .*; reused from .*\.\nFID \(Inception, 30 samples\): [\d.]+.*; written to .*evaluation.json\n$",
        )
        self.assertEqual(_read_json(os.path.join(workdir, "evaluation.json"))["samples"], 30)

    def test_a_tfds_dataset_under_tfds_mock_data(self):
        with tfds.testing.mock_data(num_examples=12):
            status, out, err, workdir = self.train("--config.data=tfds:fashion_mnist:test", "--config.image_size=32")
        self.assertEqual((status, err), (0, ""))
        self.assertRegex(out, r"Images: 12 from tfds:fashion_mnist:test at 32x32x1, 10 classes; prepared into ")
        self.assertEqual(_read_json(os.path.join(workdir, "summary.json"))["steps"], 20)

    @parameterized.parameters(
        (
            [],
            r"config.data must name your images: a folder \(searched recursively\), a .zip of one, or "
            r"tfds:NAME\[:SPLIT\]; received data=None",
        ),
        (["--config.data=/nonexistent/photos"], r"config.data='/nonexistent/photos' does not exist"),
        (["--config.data={empty}"], r"config.data='.*empty' holds no image file"),
        (["--config.data={broken}"], r"none of the 1 image files in config.data=.* decodes"),
        (["--config.data={folder}", "--config.batch_size=32"], r"holds 16 decodable images, fewer than one batch"),
        (
            ["--config.data={folder}", "--config.image_size=36"],
            r"network 'sngan_cnn' builds images whose side is a multiple of 8; received image_size=36 \(e.g. --config.image_size=32\)",
        ),
        (
            ["--config.data=tfds:mnist", "--config.data_dir={empty}"],
            r"config.data='tfds:mnist' is not prepared in data_dir=.*empty \(TFDS looked in .*empty/mnist/.*\): run "
            r"`tfds build mnist --data_dir=DIR`",
        ),
        (["--config.data=tfds:no_such_dataset"], r"TFDS knows no dataset 'no_such_dataset'"),
        (
            ["--config.data={flat}", "--config.conditional=True"],
            r"config.conditional=True takes the classes from the first level of subfolders .* has images at its "
            r"top level",
        ),
        (["--config.data={folder}", "--config.channels=2"], r"config.channels must be 1 \(gray\), 3 \(RGB\) or None"),
        (
            ["--config.data={folder}", "--config.background=transparent"],
            r"config.background: a background is one of white, black, gray, #rrggbb or none; received 'transparent' "
            r"\(e.g. --config.background=black",
        ),
    )
    def test_bad_input_is_one_line_exit_2_and_nothing_written(self, args, message):
        empty, broken = os.path.join(self.get_temp_dir(), "empty"), os.path.join(self.get_temp_dir(), "broken")
        os.makedirs(empty)
        os.makedirs(broken)
        with open(os.path.join(broken, "x.png"), "wb") as f:
            f.write(b"not a png")
        flat = tu.image_folder(os.path.join(self.get_temp_dir(), "flat"), count=4)
        args = [arg.format(empty=empty, broken=broken, folder=self.folder, flat=flat) for arg in args]
        status, out, err, workdir = self.train(*args)
        self.assertEqual(status, 2)
        self.assertEqual(err.count("\n"), 1, err)
        self.assertTrue(err.startswith("error: "), err)
        self.assertRegex(err, message)
        self.assertFalse(os.path.exists(workdir))


class SampleAndEvaluateTest(tu.TestCase):
    def test_a_runs_samples_and_metrics_from_its_checkpoint(self):
        workdir = os.path.join(self.get_temp_dir(), "run")
        status, _, err = run_cli(
            *_TINY_RING8, "--config.steps=20", "--config.steps_per_epoch=10", f"--workdir={workdir}"
        )
        self.assertEqual(status, 0, err)
        status, out, err = run_cli("--mode=sample", f"--workdir={workdir}", "--num=64")
        self.assertEqual((status, err), (0, ""))
        self.assertRegex(
            out, r"^Wrote 64 samples \(the EMA generator at epoch 2, step 20\) to .*samples-64.npz and a grid to"
        )
        with np.load(os.path.join(workdir, "samples-64.npz")) as arrays:
            self.assertEqual((arrays["samples"].shape, arrays["latents"].shape), ((64, 2), (64, 16)))
        self.assertEqual(tf.io.decode_png(tf.io.read_file(os.path.join(workdir, "samples-64.png"))).shape[-1], 3)
        again = os.path.join(self.get_temp_dir(), "again.npz")
        os.rename(os.path.join(workdir, "samples-64.npz"), again)
        run_cli("--mode=sample", f"--workdir={workdir}", "--num=64")
        with np.load(again) as first, np.load(os.path.join(workdir, "samples-64.npz")) as second:
            self.assertAllEqual(first["samples"], second["samples"])  # fixed latents: the same samples
        status, out, err = run_cli("--mode=evaluate", f"--workdir={workdir}")
        self.assertEqual((status, err), (0, ""))
        self.assertRegex(
            out,
            r"^modes covered: [\d.]+/8, high-quality samples: \d+% of 100 \(the EMA generator at epoch 2, step 20\)",
        )
        evaluation = _read_json(os.path.join(workdir, "evaluation.json"))
        self.assertEqual((evaluation["steps"], evaluation["weights"]), (20, "ema"))
        self.assertEqual(set(evaluation["metrics"]), {"modes_covered", "high_quality"})

    def test_a_run_trained_without_evaluation_is_evaluated_with_its_datasets_default_or_num(self):
        workdir = os.path.join(self.get_temp_dir(), "run")
        args = [arg for arg in _TINY_RING8 if not arg.startswith("--config.eval_samples")]
        status, _, err = run_cli(*args, "--config.steps=10", "--config.eval_samples=0", f"--workdir={workdir}")
        self.assertEqual(status, 0, err)
        self.assertEqual(_read_json(os.path.join(workdir, "summary.json"))["metrics"], {})
        for num, samples in ((None, 2500), (300, 300)):
            status, out, err = run_cli("--mode=evaluate", f"--workdir={workdir}", *([f"--num={num}"] if num else []))
            self.assertEqual((status, err), (0, ""))
            self.assertRegex(
                out,
                rf"^modes covered: [\d.]+/8, high-quality samples: \d+% of {samples} \(the EMA generator at epoch 1, "
                rf"step 10\); written to .*evaluation.json\n$",
            )
            evaluation = _read_json(os.path.join(workdir, "evaluation.json"))
            self.assertEqual((evaluation["samples"], evaluation["steps"]), (samples, 10))

    def test_a_workdir_without_a_run_is_one_line_exit_2(self):
        for mode in ("sample", "evaluate"):
            status, out, err = run_cli(f"--mode={mode}", f"--workdir={self.get_temp_dir()}")
            self.assertEqual((status, out), (2, ""))
            self.assertRegex(
                err, r"^error: .* holds no run \(no config.json\): pass the --workdir of a run of train.py.\n$"
            )
        status, _, err = run_cli("--mode=sample")
        self.assertEqual((status, err), (2, "error: --mode=sample needs the --workdir=DIR of a run of train.py.\n"))


def _start_waiting_at_step(test, args, workdir, step, tmp):
    """A `train.py` process (`tu.WAITS_AT_STEP`) that will wait at G update `step` in its own
    directory under `tmp`; returns it and the marker file it writes when it waits there."""
    cwd = tempfile.mkdtemp(dir=tmp)
    env = {**os.environ, "PYTHONPATH": os.path.dirname(TRAIN), "TF_FUSEDPROP_TEST_WAIT_AT": str(step)}
    process = subprocess.Popen(
        [sys.executable, "-c", tu.WAITS_AT_STEP, *args, f"--workdir={workdir}"],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    test.addCleanup(process.kill)
    return process, os.path.join(cwd, "waiting")


class InterruptTest(tu.TestCase):
    def test_ctrl_c_and_a_full_disk_mid_epoch_lose_no_step_and_every_resume_ends_as_the_uninterrupted_run(self):
        """Two runs wait at update 30 (mid-epoch: epochs of 20, calls of 10): one gets Ctrl-C, the
        other SIGTERM when its disk (a small tmpfs) is full. (SIGTERM's own exit, 143 after its
        checkpoint, is distribution_test's, where it stops two workers.)"""
        tmp = self.get_temp_dir()
        disk = tu.small_disk(self, megabytes=8)
        # The digits: a finite set, shuffled (2-D mixtures draw each batch from its index alone,
        # so they could not tell a resumed run's data order from another).
        args = [*_TINY_DIGITS, "--config.steps=60", "--config.steps_per_epoch=20"]
        workdirs = {"SIGINT": os.path.join(tmp, "sigint"), "full": os.path.join(disk, "run")}
        started = {name: _start_waiting_at_step(self, args, workdir, 30, tmp) for name, workdir in workdirs.items()}
        deadline = time.monotonic() + 180
        for process, waiting in started.values():
            while not os.path.exists(waiting):
                self.assertTrue(process.poll() is None and time.monotonic() < deadline, "it never reached step 30")
                time.sleep(0.02)
        filler = tu.fill_disk(disk)
        for name, signum in (("SIGINT", signal.SIGINT), ("full", signal.SIGTERM)):
            started[name][0].send_signal(signum)
        errors = {}
        for name, (process, _) in started.items():
            _, errors[name] = process.communicate(timeout=60)
        statuses = {name: process.returncode for name, (process, _) in started.items()}
        self.assertEqual(statuses, {"SIGINT": 130, "full": 2}, errors)
        self.assertRegex(
            errors["SIGINT"],
            r"^interrupted at step 30, saved in .*backup; run python .*train.py .*--workdir=.*sigint'? to resume from "
            r"it\n$",
        )
        saved = _read_json(os.path.join(workdirs["SIGINT"], "backup", "checkpoint.json"))
        self.assertEqual(
            {k: saved[k] for k in ("epoch", "steps", "epoch_steps")}, {"epoch": 1, "steps": 30, "epoch_steps": 10}
        )
        self.assertRegex(
            errors["full"],
            r"^error: cannot write the checkpoint to .*/run/backup/step_00000030.weights.h5: No space left on device "
            r"\(it needs [\d.]+ kB, 0 bytes free there\); free space there \(or make it writable\) and rerun the "
            r"same command: it resumes from the last checkpoint\n$",
        )
        backup = os.path.join(workdirs["full"], "backup")
        self.assertEqual(
            sorted(os.listdir(backup)), ["checkpoint.json", "epoch_0001.weights.h5"]
        )  # nothing half-written
        self.assertEqual(_read_json(os.path.join(backup, "checkpoint.json"))["steps"], 20)

        # Resumed (the full disk's with room again, and a copy of it elsewhere) and run straight
        # through, in this process: what matters is what the checkpoints restore.
        os.remove(filler)
        workdirs["copied"] = shutil.copytree(workdirs["full"], os.path.join(tmp, "copied"))
        workdirs["straight"] = os.path.join(tmp, "straight")
        resumed = {
            "SIGINT": "Resuming from step 30: epoch 2/3, 10 of its 20 steps done.",
            "full": "Resuming from epoch 1/3 (20 steps done).",
            "copied": "Resuming from epoch 1/3 (20 steps done).",
        }
        for name, workdir in workdirs.items():
            status, out, err = run_cli(*args, f"--workdir={workdir}")
            self.assertEqual(status, 0, err)
            self.assertEqual(resumed.get(name, "Resuming") in out, name in resumed, out)
        # Every weight, optimizer slot and seed state: the data stream and the seed streams resumed exactly.
        final = {name: tu.h5_arrays(os.path.join(d, "backup", "epoch_0003.weights.h5")) for name, d in workdirs.items()}
        for name in resumed:
            self.assertEqual(sorted(final[name]), sorted(final["straight"]))
            for key in final["straight"]:
                self.assertAllEqual(final[name][key], final["straight"][key], msg=f"{name}: {key}")
        # The broken epoch's logged means cover all its steps, as the uninterrupted run's do.
        logged = {name: tu.read_events(os.path.join(d, "logs")) for name, d in workdirs.items()}
        for key in ("d_loss", "g_loss", "real_logit", "fake_logit"):
            series = {name: sorted((step, float(value)) for step, _, value in logged[name][key]) for name in workdirs}
            self.assertEqual(series["SIGINT"], series["straight"], key)


#: configs/digits.py shrunk to seconds: tiny networks, float32, calls of 10 steps, no evaluation.
_TINY_DIGITS = [
    "--config.generator.width=4",
    "--config.discriminator.width=4",
    "--config.latent_dim=8",
    "--config.batch_size=16",
    "--config.steps_per_execution=10",
    "--config.mixed_precision=float32",
    "--config.eval_samples=0",
    "--config.grid_samples=4",
]
_TINY_RING8 = [
    "--config=configs/ring8.py",
    "--config.steps_per_execution=10",  # epochs of 10 steps
    "--config.eval_samples=100",
    "--config.grid_samples=50",
    "--config.generator.units=8",
    "--config.discriminator.units=8",
    "--config.warmup=0",  # fused from the first update, as these tests' step counts assume
]
_DIVERGED = re.compile(
    r"^error: training diverged at step (?P<step>\d+): (D's|G's|D's and G's) (loss|losses) or gradients became "
    r"non-finite \(NaN or infinite\) with d_lr=1e\+30, g_lr=1e\+30; (?P<kept>.*) with a smaller learning rate: "
    r"(?P<command>python .*)\n$"
)


class DivergenceTest(tu.TestCase):
    def test_divergence_in_the_first_epoch_exits_3_and_the_suggested_restart_completes(self):
        workdir = os.path.join(self.get_temp_dir(), "run")
        args = [*_TINY_RING8, "--config.steps=20", "--config.steps_per_epoch=10", f"--workdir={workdir}"]
        status, _, err = run_cli(*args, "--config.d_lr=1e30", "--config.g_lr=1e30")
        self.assertEqual(status, 3)
        match = _DIVERGED.match(err)
        self.assertIsNotNone(match, err)
        self.assertEqual(
            match["kept"],
            "no checkpoint was saved before it (it diverged in the first epoch), so there is nothing to "
            "resume: restart",
        )
        command = shlex.split(match["command"])
        self.assertEqual(
            command,
            ["python", "train.py", *args[:-1], f"--workdir={workdir}", "--config.d_lr=0.002", "--config.g_lr=0.001"],
        )
        self.assertFalse(os.path.exists(os.path.join(workdir, "backup")))

        status, out, err = run_cli(*command[2:])
        self.assertEqual(status, 0, err)
        self.assertIn("Learning rates changed from the start: d_lr 1e+30 -> 0.002, g_lr 1e+30 -> 0.001", out)
        summary = _read_json(os.path.join(workdir, "summary.json"))
        self.assertEqual((summary["steps"], summary["resumed_from_epoch"]), (20, 0))
        self.assertEqual(summary["learning_rate_changes"][0]["d_lr"], {"from": 1e30, "to": 0.002})

    def test_a_diverged_run_keeps_its_last_good_checkpoint_and_the_suggested_command_resumes_from_it(self):
        tmp = self.get_temp_dir()
        workdir = os.path.join(tmp, "run")
        args = [*_TINY_RING8, "--config.steps=30", "--config.steps_per_epoch=10"]
        # A run at the config's rates, stopped once its first checkpoint is written.
        with tu.stopped_after_checkpoint(1), self.assertRaises(tu.StoppedAfterCheckpoint):
            run_cli(*args, f"--workdir={workdir}", program=TRAIN)
        self.assertFalse(os.path.exists(os.path.join(workdir, "summary.json")))
        checkpoint = _read_json(os.path.join(workdir, "backup", "checkpoint.json"))
        epoch, steps = checkpoint["epoch"], checkpoint["steps"]
        self.assertEqual(epoch, 1)
        weights = os.path.join(workdir, "backup", checkpoint["weights"])
        good = _md5(weights)

        # Resumed (in this process) with absurd rates: the first update is finite, the second is not.
        status, _, err = run_cli(
            *args, f"--workdir={workdir}", "--config.d_lr=1e30", "--config.g_lr=1e30", program=TRAIN
        )
        self.assertEqual(status, 3, err[-3000:])
        match = _DIVERGED.match(err)
        self.assertIsNotNone(match, err)
        self.assertEqual(int(match["step"]), steps + 2)
        self.assertEqual(
            match["kept"],
            f"the last good checkpoint (epoch {epoch}, step {steps}) is kept in {workdir}/backup; resume from it",
        )
        self.assertEqual(_read_json(os.path.join(workdir, "backup", "checkpoint.json")), checkpoint)
        self.assertEqual(_md5(weights), good)
        self.assertTrue(tu.weights_are_finite(weights))
        self.assertNotIn(f"epoch_{epoch + 1:04d}.png", os.listdir(os.path.join(workdir, "samples")))

        # The command it suggests resumes from that checkpoint at the config file's rates and completes.
        suggested = shlex.split(match["command"])
        self.assertEqual(suggested[:2], ["python", TRAIN])
        self.assertEqual(suggested[-2:], ["--config.d_lr=0.002", "--config.g_lr=0.001"])
        status, out, err = run_cli(*suggested[2:], program=suggested[1])
        self.assertEqual(status, 0, err[-3000:])
        self.assertIn(f"Resuming from epoch {epoch}/3 ({steps} steps done)", out)
        summary = _read_json(os.path.join(workdir, "summary.json"))
        self.assertEqual((summary["steps"], summary["resumed_from_epoch"]), (30, epoch))
        self.assertEqual(
            [(change["epoch"], change["d_lr"], change["g_lr"]) for change in summary["learning_rate_changes"]],
            [
                (epoch, {"from": 2e-3, "to": 1e30}, {"from": 1e-3, "to": 1e30}),
                (epoch, {"from": 1e30, "to": 2e-3}, {"from": 1e30, "to": 1e-3}),
            ],
        )


if __name__ == "__main__":
    tf.test.main()
