"""Trains a GAN with FusedProp; a thin command line over `tf_fusedprop.experiment.train_lib.train`.

    python train.py                                    # the embedded default: configs/digits.py
    python train.py --config=configs/ring8.py          # any config file ...
    python train.py --config=configs/cifar10_cnn_ns.py:fused --config.steps=2000  # variant, overrides
    python train.py --workdir=runs/mine                # choose the run directory (resumes it)
    python train.py --strategy=mirrored                # all GPUs of this machine (see below)

`--config.<key>=<value>` overrides a field of the config (nested: `--config.generator.width=16`);
see `configs/base.py` for the fields. Without `--workdir`, the latest unfinished run of the
same config under `runs/` is resumed, otherwise `runs/<name>-<timestamp>` is started.

A run whose losses or gradients become non-finite stops at once and exits with status 3 and
one line `error: training diverged at step S: ...` naming the player, the last good checkpoint
(kept in WORKDIR/backup; the diverged epoch writes nothing) and the command that resumes from
it with smaller learning rates: a tenth of the rates that diverged, at most the config file's.
A rerun may change `--config.d_lr` and `--config.g_lr` (recorded in WORKDIR/learning_rates.json)
and, with `--workdir`, lengthen the schedule (`--config.steps`: a finished run trains on from
its last checkpoint) or name another `--config.cache_dir` (a moved cache); any other change of
config is refused.

A finished (or interrupted) run's samples and metrics, from its last checkpoint (the EMA
generator when it has one), without training:

    python train.py --mode=sample --workdir=DIR [--num=1000]   # DIR/samples-1000.npz and .png
    python train.py --mode=sample --workdir=DIR --class=cats   # a conditional run's class (classes.json)
    python train.py --mode=evaluate --workdir=DIR [--num=N]    # prints the metrics; DIR/evaluation.json

`--mode=evaluate` scores the run's `eval_samples` generated samples, or `--num`; a run trained
without evaluation (`--config.eval_samples=0`) gets its dataset's default number (digits 1,797,
CIFAR-10 10,000, the 2-D mixtures 2,500). The line printed says how many.

`--strategy=auto|one_device|mirrored|multi_worker|tpu` picks the `tf.distribute` strategy
(`tf_fusedprop/experiment/distribution.py`); `auto` (the default) is `multi_worker` when
`TF_CONFIG` names several workers, `mirrored` with several GPUs, else one device.
`config.batch_size` stays the global batch. Multi-worker: start this command on every worker
with the same `--workdir` (shared storage) and its own `TF_CONFIG`; the chief writes the workdir,
and rerunning all of them after a failure resumes from the chief's last checkpoint.
`--cpu_devices=N` splits the CPU into N logical devices, to try `mirrored` on a CPU-only machine.

Ctrl-C (SIGINT) or SIGTERM stops a run after the train-function call in progress, saves a
checkpoint at the step reached and says so in one line on stderr (`interrupted at step N, saved
in WORKDIR/backup; run ... to resume from it`; `stopped by SIGTERM at step N, ...`), exit status
130 or 143; rerunning the same command resumes from that step. After the last epoch (while the
generator and the summary are written) the line says so, and the rerun trains nothing and
writes them. A hard kill (SIGKILL) loses the steps since the last checkpoint: every epoch's end
and every `--config.checkpoint_minutes` (10) within an epoch. A full or unwritable disk stops
the run with one line `error: cannot write ...` (what, where, how much space) and status 2,
keeping the last good checkpoint. One run per workdir: a second one is refused in one line
naming the first (`WORKDIR/lock`); a lock whose process is gone is taken over, in one line.

Exit status: 0 when training is done; 3 when training diverged (above); 130 when interrupted
(Ctrl-C), 143 when stopped by SIGTERM; 2 for bad input or a disk that cannot take the run's files
(unknown config key or value, invalid (loss, form) pair, unwritable workdir, a workdir in use, a full disk, CIFAR-10 or
the Inception module neither local nor downloadable: offline, within seconds; a strategy
that cannot run here, a batch not divisible by replicas x iter_size), with one line
`error: ...` on stderr saying what was received and what to do. TensorFlow's native
start-up lines are hidden whatever `TF_CPP_MIN_LOG_LEVEL` says, unless it is 0 (show TF's
info logs); a Python error while TensorFlow loads still shows them, with its traceback
(`tf_fusedprop/_startup.py`: importing `tf_fusedprop` does it for every program).
"""

import os
import shlex
import signal
import sys
import threading

from absl import flags, logging
from ml_collections import config_flags

REPO = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(REPO, "configs")
DEFAULT_CONFIG = os.path.join(CONFIGS, "digits.py")
EXIT_BAD_INPUT = 2
EXIT_DIVERGED = 3
#: What this command sets in the environment before TensorFlow loads, unless the user set it.
TENSORFLOW_ENVIRONMENT = {
    "TF_CPP_MIN_LOG_LEVEL": "1",
    # TF turns oneDNN on by default only on CPUs with AVX512-VNNI/BF16/AMX; on an AVX2-only CPU
    # turning it on made the SNGAN step 1.4-2.5x faster (benchmarks/speed.py). =0 turns it off.
    "TF_ENABLE_ONEDNN_OPTS": "1",
    # One thread runs a step's ops one after another (each op still uses every core). With more,
    # the bfloat16 step at 64 px and batch 64 rounded differently from call to call (G's last
    # up-sampling block: its kernel and input gradients), so one seed did not repeat. It costs the
    # fused step 6% at 64 px on 2 cores (docs/guide.md#same-seed-same-run); =0 is TF's default.
    "TF_NUM_INTEROP_THREADS": "1",
}


def _one_line(text):
    return " ".join(str(text).split())


def _config_files():
    return sorted(f for f in os.listdir(CONFIGS) if f.endswith(".py") and f not in ("__init__.py", "base.py"))


def _define_flags(argv):
    flag_values = flags.FlagValues()
    config = config_flags.DEFINE_config_file(
        "config",
        default=DEFAULT_CONFIG,
        flag_values=flag_values,
        sys_argv=argv,
        help_string="config file, configs/<name>.py[:variant]; override fields with --config.<key>=<value>",
    )
    flags.DEFINE_string(
        "workdir",
        None,
        "run directory (default: resume the latest unfinished runs/<name>-*, or start runs/<name>-<timestamp>)",
        flag_values=flag_values,
    )
    flags.DEFINE_enum(
        "strategy",
        "auto",
        ["auto", "one_device", "mirrored", "multi_worker", "tpu"],
        "tf.distribute strategy; auto: multi_worker if TF_CONFIG names several workers, mirrored with several "
        "GPUs, else one device",
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "cpu_devices",
        1,
        "split the CPU into this many logical devices (to try --strategy=mirrored without GPUs)",
        lower_bound=1,
        flag_values=flag_values,
    )
    flags.DEFINE_enum(
        "mode",
        "train",
        ["train", "sample", "evaluate"],
        "train; or, for the run in --workdir, write --num samples (sample) or its metrics (evaluate)",
        flag_values=flag_values,
    )
    flags.DEFINE_integer(
        "num",
        None,
        "samples that --mode=sample writes (default 1000) or --mode=evaluate scores (default: the run's "
        "eval_samples, else its dataset's default)",
        lower_bound=1,
        flag_values=flag_values,
    )
    flags.DEFINE_string(
        "class",
        None,
        "--mode=sample of a conditional run: samples of this class only (a name of its classes.json, or a label)",
        flag_values=flag_values,
    )
    return flag_values, config


class CommandLine:
    """The command line, read in one place, once.

    `CommandLine(argv)` splits `argv` (the program first) into what the rest reads: the config
    file and variant of `--config=PATH[:VARIANT]` (a relative PATH found under this repository
    when it is not under the working directory), the config keys set (`--config.<key>=<value>`,
    `--config.<key> <value>`), and those set to None. `read()` then parses it with absl, once:
    `flag_values` and `config`, or `problem`, one line saying what is wrong.

    Attributes:
      typed: `argv` as typed (the commands that resume or rerun a run repeat it).
      argv: `argv` with the config file's path resolved.
      config_path: the config file as typed (None: the default, configs/digits.py); and
        `config_variant`, the text after its ':' (None without one).
      overridden: the config keys set on the command line, dotted (`generator.width`).
      flag_values, config, problem: what `read` found.
    """

    def __init__(self, argv):
        self.typed, self.argv = list(argv), list(argv)
        self.config_path = self.config_variant = None
        self._config_file = DEFAULT_CONFIG  # the `--config=` value as absl reads it
        self._overrides = []  # (index in argv, the argument, key, value typed after "=")
        self.flag_values = self.config = self.problem = None
        for i, arg in enumerate(argv[1:], 1):
            # `--config=FILE`, or `--config FILE` (absl reads both): the file's path at `at`.
            at, prefix = (i, "--config=") if arg.startswith("--config=") else (i + 1, "")
            if arg.startswith("--config=") or arg == "--config" and at < len(argv):
                path, sep, variant = argv[at][len(prefix) :].partition(":")
                self.config_path, self.config_variant = path, variant if sep else None
                if path and not os.path.isabs(path) and not os.path.exists(path):
                    if os.path.exists(os.path.join(REPO, path)):
                        self.argv[at] = f"{prefix}{os.path.join(REPO, path)}{sep}{variant}"
                self._config_file = self.argv[at][len(prefix) :]
            elif arg.startswith(("--config.", "--noconfig.")):
                key, _, value = arg.split(".", 1)[1].partition("=")
                self._overrides.append((i, arg, key, value))
        self.overridden = {key for _, _, key, _ in self._overrides}
        self._nones = [(i, key, value) for i, _, key, value in self._overrides if value.lower() in ("none", "null")]

    def read(self):
        """Parses the command line (see the class docstring); returns self."""
        # absl reads None as text (a path named "None") or refuses it for a number: those keys
        # are set once the config is read. `none` and `null` (any case) mean None too, but for a
        # text field, where they may be the value itself (`--config.background=none`).
        nones = {i for i, _, _ in self._nones}
        argv = [arg for i, arg in enumerate(self.argv) if i not in nones]
        try:
            flag_values, config_flag = _define_flags(argv)
            flag_values(argv)
            config = config_flag.value
            config.keys()
        except (flags.Error, AttributeError, KeyError, OSError, ValueError, TypeError) as err:
            self.problem = self._describe(err)
            return self
        for _, key, value in self._nones:
            found, current = _lookup(config, key)
            if not found:
                self.problem = (
                    f"unknown config key {key!r} (received --config.{key}={value}); valid keys here: "
                    f"{', '.join(current)}."
                )
                return self
            *parents, last = key.split(".")
            node = config
            for parent in parents:
                node = node[parent]
            # A field that may not be None is refused by the config's validation, in one line.
            node[last] = value if value != "None" and isinstance(current, str) else None
        self.flag_values, self.config = flag_values, config
        return self

    def file_config(self):
        """The config that the config file (and variant) gives, without the command line's
        overrides (a divergence caps its suggested rates at the file's), or None if it does not load."""
        try:
            parser = _define_flags(self.argv[:1])[0]["config"].parser  # loads nothing
            return parser.parse(self._config_file)
        except Exception:  # The caller reports the original error.
            return None

    def _describe(self, err):
        """One line saying what was wrong with the command line and what to do."""
        path = self._config_file.partition(":")[0]
        missing = self.config_path and not os.path.exists(path)
        if missing:
            where = os.path.relpath(CONFIGS)
            return (
                f"config file {self.config_path} does not exist; use --config=configs/<name>.py with one of: "
                f"{', '.join(_config_files())} (in {CONFIGS if where.startswith('..') else where})."
            )
        if "before a value for --config was specified" in str(err):
            return (
                f"{_one_line(err)}: put --config=FILE before the --config.<key>=<value> overrides, e.g. "
                f"python train.py --config=configs/ring8.py --config.steps=1000."
            )
        config = self.file_config()
        if config is not None:
            for _, arg, key, _ in self._overrides:
                found, value = _lookup(config, key)
                if not found:
                    return f"unknown config key {key!r} (received {arg}); valid keys here: {', '.join(value)}."
            if isinstance(err, flags.IllegalFlagValueError):
                for _, arg, key, value in self._overrides:
                    if arg in str(err) or f"--config.{key}=" in str(err):
                        expected = type(_lookup(config, key)[1]).__name__
                        if expected == "bool":
                            return f"config.{key} must be True or False (true/false, 1/0 too); received {value!r}."
                        return f"bad value for config.{key}: {_one_line(err)}; expected a value of type {expected}."
        if isinstance(err, OSError):
            return (
                f"cannot load the config file ({_one_line(err)}); use --config=configs/<name>.py with one of: "
                f"{', '.join(_config_files())}."
            )
        if isinstance(err, flags.UnrecognizedFlagError):
            return f"{_one_line(err)}; the flags are --config=FILE, --config.<key>=<value>, --workdir=DIR, --strategy, --cpu_devices, --mode, --num and --class (see --help)."
        if self.config_variant is not None and "get_config() takes 0 positional arguments" in str(err):
            path = os.path.relpath(path) if os.path.isabs(path) else path
            return (
                f"config file {path} has no variants (received --config={path}:{self.config_variant}); use "
                f"--config={path}. The config files: {', '.join(_config_files())}."
            )
        message = str(err)
        if "Traceback (most recent call last)" in message:  # An error raised inside get_config.
            message = f"cannot load the config: {message.strip().splitlines()[-1]}"
        return _one_line(message)

    def rerun(self, workdir):
        """The command that resumes the run in `workdir`: the command as typed with `--workdir=WORKDIR`."""
        kept, skip = [], False
        for arg in self.typed[1:]:
            if skip:
                skip = False
            elif arg == "--workdir":
                skip = True
            elif not arg.startswith("--workdir="):
                kept.append(arg)
        return shlex.join(["python", self.typed[0], *kept, f"--workdir={workdir}"])


def _lookup(config, path):
    """`(found, value)` of a dotted path in a ConfigDict, and the keys where it stops."""
    node = config
    for part in path.split("."):
        if not hasattr(node, "keys") or part not in node:
            return False, sorted(node.keys()) if hasattr(node, "keys") else []
        node = node[part]
    return True, node


def read_command_line(argv):
    """`(flag values, config, None)` that `argv` says (`--config=FILE[:variant]`, its
    `--config.<key>=<value>` overrides, `None` typed as None), or `(None, None, one line)` saying
    what is wrong with it (`CommandLine`)."""
    line = CommandLine(argv).read()
    return line.flag_values, line.config, line.problem


def _error(message):
    print(f"error: {_one_line(message)}", file=sys.stderr, flush=True)
    return EXIT_BAD_INPUT


def _diverged(err, line):
    """The divergence's line with the command to resume (or restart) with smaller rates."""
    from tf_fusedprop.experiment import divergence

    if sys.stdout.isatty():
        print(flush=True)  # End the progress bar's line.
    base = line.file_config()
    caps = None if base is None else (base.d_lr, base.g_lr)
    rates = divergence.suggested_learning_rates(err.learning_rates, caps)
    command = divergence.resume_command(err.workdir, rates, line.typed[1:], program=line.typed[0])
    print(f"error: {_one_line(err.describe(command))}", file=sys.stderr, flush=True)
    return EXIT_DIVERGED


def _use_run(flag_values):
    """--mode=sample / evaluate: the run in --workdir, restored from its last checkpoint."""
    from tf_fusedprop.experiment import inference
    from tf_fusedprop.experiment.config import ConfigError

    if not flag_values.workdir:
        raise ConfigError(f"--mode={flag_values.mode} needs the --workdir=DIR of a run of train.py.")
    if flag_values.mode == "sample":
        num, class_name = flag_values.num or 1000, flag_values["class"].value
        npz, png, run = inference.sample(flag_values.workdir, num, class_name)
        of_class = "" if class_name is None else f" of class {class_name!r}"
        print(f"Wrote {num} samples{of_class} ({_source(run)}) to {npz} and a grid to {png}.", flush=True)
    else:
        _, line, run = inference.evaluate(flag_values.workdir, flag_values.num)
        print(f"{line} ({_source(run)}); written to {os.path.join(flag_values.workdir, 'evaluation.json')}", flush=True)
    return 0


def _source(run):
    generator = "the EMA generator" if run.weights == "ema" else "the generator"
    return f"{generator} at epoch {run.checkpoint['epoch']}, step {run.checkpoint['steps']}"


class _Terminated(KeyboardInterrupt):
    """SIGTERM before training starts (`train_lib` handles it, and Ctrl-C, while it trains)."""

    signum = signal.SIGTERM


def _terminated(signum, frame):
    raise _Terminated()


def _interrupted_status(message, err):
    if sys.stdout.isatty():
        print(flush=True)  # End the progress bar's line.
    print(message, file=sys.stderr, flush=True)
    return 128 + getattr(err, "signum", signal.SIGINT)


def run(argv):
    """Parses `argv` (with the program name first), trains, and returns the exit status."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if main else None  # Said in one line, as Ctrl-C is.
    try:
        return _run(argv)
    except KeyboardInterrupt as err:  # while TensorFlow loads or the config is read: nothing was written
        what = "interrupted" if getattr(err, "signum", signal.SIGINT) == signal.SIGINT else "stopped by SIGTERM"
        return _interrupted_status(
            f"{what} before training started; nothing was trained or written to resume from", err
        )
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)


def _run(argv):
    if any(arg in ("-h", "--help", "--helpfull", "-?") for arg in argv[1:]):
        print(__doc__)
        print(f"Config files ({CONFIGS}): {', '.join(_config_files())}")
        return 0
    # Before anything loads TensorFlow, which reads these once, when it loads (a config file
    # does not, but a user's own config may import tf_fusedprop).
    for key, value in TENSORFLOW_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    line = CommandLine(argv).read()
    if line.problem is not None:
        return _error(line.problem)
    flag_values, config = line.flag_values, line.config

    logging.set_verbosity(logging.ERROR)  # TFDS's warnings repeat what our errors say.
    # Importing tf_fusedprop loads TensorFlow with its native start-up lines hidden (_startup).
    from tf_fusedprop.experiment import distribution, divergence, train_lib
    from tf_fusedprop.experiment.config import ConfigError
    from tf_fusedprop.experiment.features import InceptionModuleUnavailableError
    from tf_fusedprop.experiment.files import WriteError
    from tf_fusedprop.experiment.interrupt import TrainingInterrupted
    from tf_fusedprop.experiment.real_samples import DatasetUnavailableError

    if flag_values.cpu_devices > 1:
        distribution.split_cpu(flag_values.cpu_devices)
    try:
        if flag_values.mode != "train":
            return _use_run(flag_values)
        strategy = distribution.make_strategy(flag_values.strategy)
        train_lib.train(
            config,
            workdir=flag_values.workdir,
            verbose=1 if sys.stdout.isatty() else 2,
            strategy=strategy,
            overridden=line.overridden,
        )
    except (ConfigError, DatasetUnavailableError, InceptionModuleUnavailableError) as err:
        return _error(err)
    except WriteError as err:
        return _error(
            f"{err}; free space there (or make it writable) and rerun the same command: it resumes from the last checkpoint"
        )
    except divergence.TrainingDivergedError as err:
        return _diverged(err, line)
    except TrainingInterrupted as err:
        return _interrupted_status(err.describe(line.rerun(err.workdir)), err)
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv))
