"""Training on several devices and machines: which `tf.distribute` strategy, and who writes.

TensorFlow's own strategies do the distributed work; this module only picks one and states
the harness's rules under it:

| `--strategy` | what |
|---|---|
| `auto` | `multi_worker` if `TF_CONFIG` names more than one task, else `mirrored` if more than one GPU is visible, else `one_device` |
| `one_device` | TensorFlow's default strategy: one device (the first GPU if there is one, else the CPU) |
| `mirrored` | `tf.distribute.MirroredStrategy` over this machine's GPUs (its logical CPUs if it has none) |
| `multi_worker` | `tf.distribute.MultiWorkerMirroredStrategy`: one process per machine, the cluster in `TF_CONFIG` |
| `tpu` | `tf.distribute.TPUStrategy` through `TPUClusterResolver` (a Cloud TPU VM, or `TPU_NAME`) |

Batches: `config.batch_size` is the global batch, split evenly over the replicas, and each
replica's share is split into `iter_size` micro-batches, so it must be divisible by
replicas x iter_size (`check_run`). Every worker runs the same pipeline with the same
seed and keeps its replicas' rows of each global batch (`shard_by_data`: tf.data's DATA
auto-shard policy): replica r of R gets rows [r*b, (r+1)*b) of each global batch of R*b,
so the workers together consume exactly the batches one process would, each sample once
per pass over the data; `FusedPropGAN` draws the latents of the global batch and each
replica takes the same rows. Keras 3 needs a workaround under a strategy (`fit_under`).

Who writes: the chief (`is_chief`) writes the workdir and evaluates; every other worker runs
the same callbacks (checkpoint, export, sample grid, logs) into a temporary directory of its
own, deleted when training ends or fails (`output_dir`), so that all workers read variables
in step. (Measured here: Keras reads the epoch's metrics, sync-on-read variables, with an
all-reduce on every worker; the h5 checkpoint and the SavedModel export read mirrored
variables only, without collectives.) All workers restore from the chief's checkpoint, so a
multi-machine workdir must be a shared file system mounted at the same path on every
machine (the harness writes with Python's file functions: no gs:// paths). After
a worker dies the others fail within seconds (TensorFlow's heartbeats); rerunning every
worker's command resumes from the chief's last checkpoint. A signal (Ctrl-C, SIGTERM) that
reaches some workers stops all of them after the same step (`StopTogether`), each saving there
(the chief into the workdir), so the rerun resumes from that step.

Replicas and state: spectral norm's power-iteration vector `sn_u` is a sync-on-read variable
aggregated ONLY_FIRST_REPLICA: each replica updates its own copy in its training calls (no
cross-replica merge, so it also works inside gradient accumulation's loop); every replica
computes it from the same mirrored kernel and the same previous `u` (no data enters the power
iteration), so the copies stay identical on every replica of every worker, and the chief's
first replica's copy is checkpointed. BatchNormalization layers (in the digits
and SNGAN generators) normalize with per-replica batch statistics, so such a G trains on
several replicas as with `iter_size` micro-batches, not exactly as on one device; networks
without BatchNorm (ring8, grid25) train exactly as one device with the global batch.
"""

import contextlib
import json
import os
import shutil
import tempfile

import keras
import tensorflow as tf

from tf_fusedprop.experiment import interrupt
from tf_fusedprop.experiment.config import ConfigError

__all__ = [
    "STRATEGIES",
    "StopTogether",
    "StrategyError",
    "check_run",
    "describe",
    "facts",
    "fit_under",
    "is_chief",
    "make_strategy",
    "output_dir",
    "resolve",
    "shard_by_data",
    "split_cpu",
    "tf_config_tasks",
]

#: The values of `train.py --strategy`.
STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker", "tpu")


class StrategyError(ConfigError):
    """The requested strategy cannot run here; one line saying why and what to do."""


def split_cpu(count):
    """Splits the (first) CPU into `count` logical devices, e.g. to train `mirrored` on a
    CPU-only machine; call before TensorFlow initialises its devices (again later with the
    same count: nothing to do)."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    if len(tf.config.get_logical_device_configuration(cpu) or [None]) != count:
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * count)


def tf_config_tasks(environ=os.environ):
    """The number of tasks (chief and workers) in the cluster of `$TF_CONFIG`; 0 without one.

    Raises:
      StrategyError: `TF_CONFIG` is not JSON with a `cluster` dict.
    """
    text = environ.get("TF_CONFIG", "")
    if not text.strip():
        return 0
    try:
        cluster = json.loads(text)["cluster"]
        return sum(len(cluster.get(job, [])) for job in ("chief", "worker"))
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise StrategyError(
            f"TF_CONFIG is not a cluster description ({type(err).__name__}: {err}); expected JSON like "
            '{"cluster": {"worker": ["host1:port", "host2:port"]}, "task": {"type": "worker", "index": 0}}.'
        ) from None


def resolve(name, environ=os.environ):
    """The strategy that `name` means here: `auto` resolved (see the module docstring)."""
    if name != "auto":
        return name
    if tf_config_tasks(environ) > 1:
        return "multi_worker"
    return "mirrored" if len(tf.config.list_physical_devices("GPU")) > 1 else "one_device"


def make_strategy(name="auto", environ=os.environ):
    """The `tf.distribute.Strategy` that `--strategy=name` means (see the module docstring).

    Create it at the start of the program, before TensorFlow runs anything (a multi-worker
    strategy configures the runtime's collectives; it returns once every worker is up).

    Raises:
      StrategyError: an unknown name, `multi_worker` without `TF_CONFIG`, or `tpu` without a TPU.
    """
    if name not in STRATEGIES:
        raise StrategyError(f"unknown strategy {name!r}; expected one of {', '.join(STRATEGIES)}.")
    name = resolve(name, environ)
    if name == "one_device":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
        return tf.distribute.MirroredStrategy([device.name for device in devices])
    if name == "multi_worker":
        if not tf_config_tasks(environ):
            raise StrategyError(
                "--strategy=multi_worker needs TF_CONFIG, the cluster and this worker's task, e.g. "
                'TF_CONFIG=\'{"cluster": {"worker": ["host1:12345", "host2:12345"]}, "task": {"type": "worker", '
                '"index": 0}}\' (index 1 on host2).'
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    except Exception as err:  # No TPU: each platform fails its own way.
        raise StrategyError(
            f"--strategy=tpu found no TPU ({type(err).__name__}: {err}); run on a Cloud TPU VM or set TPU_NAME, "
            "or pick another --strategy."
        ) from None


def facts(strategy):
    """`{"strategy": name, "replicas": n, "workers": w}` of a strategy, as `summary.json` holds them."""
    kinds = (
        (tf.distribute.MultiWorkerMirroredStrategy, "multi_worker"),
        (tf.distribute.MirroredStrategy, "mirrored"),
        (tf.distribute.TPUStrategy, "tpu"),
    )
    name = next((label for kind, label in kinds if isinstance(strategy, kind)), "one_device")
    resolver = getattr(strategy, "cluster_resolver", None)
    cluster = resolver.cluster_spec().as_dict() if resolver is not None else {}
    workers = sum(len(cluster.get(job, [])) for job in ("chief", "worker")) or 1
    return {"strategy": name, "replicas": strategy.num_replicas_in_sync, "workers": workers}


def describe(strategy):
    """One line: `strategy: mirrored, 2 replicas (CPU:0, CPU:1)`, and the worker for multi-worker."""
    info = facts(strategy)
    if info["strategy"] == "one_device":
        devices = [(tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU"))[0].name]
    else:
        devices = strategy.extended.worker_devices
    local = ", ".join(device.split("device:")[-1] for device in devices)
    replicas = info["replicas"]
    line = f"strategy: {info['strategy']}, {replicas} replica{'s' if replicas > 1 else ''} ({local}"
    if info["workers"] > 1:
        resolver = strategy.cluster_resolver
        role = "chief" if is_chief(strategy) else "not the chief"
        line += f" on {resolver.task_type} {resolver.task_id} of {info['workers']} workers, {role}"
    return line + ")"


def is_chief(strategy):
    """Whether this process writes the workdir: True but on the non-chief workers of a multi-worker cluster."""
    return bool(strategy.extended.should_checkpoint)


def check_run(config, workdir, strategy):
    """Raises `ConfigError` (one line) if `config` cannot train under `strategy`: a global batch
    that does not split into replicas x `iter_size`, or several workers without an explicit
    `workdir`."""
    replicas = strategy.num_replicas_in_sync
    parts = replicas * config.iter_size
    if config.batch_size % parts:
        raise ConfigError(
            f"config.batch_size (the global batch) must be divisible by replicas x iter_size = {replicas} x "
            f"{config.iter_size} = {parts}; received batch_size={config.batch_size} (e.g. --config.batch_size="
            f"{max(1, round(config.batch_size / parts)) * parts})."
        )
    if workdir is None and facts(strategy)["workers"] > 1:
        raise ConfigError(
            "several workers need an explicit workdir on storage they all read: pass the same --workdir=DIR to each."
        )


def fit_under(model, strategy):
    """Makes Keras's `fit` run `model` under `strategy`; returns a line saying what changed, or None.

    On several replicas a loop of `steps_per_execution` > 1 steps fails in Keras 3 ("You must
    feed a value for placeholder tensor", keras-team/keras#19246; a plain `Sequential` fails
    too), so such a model runs one step per execution (the same updates; the config is
    unchanged). (The other Keras failure under several workers, the reduction of scalar step
    results, `FusedPropGAN.train_step` handles itself.)
    """
    if strategy.num_replicas_in_sync > 1 and model.steps_per_execution > 1:
        note = (
            f"steps_per_execution {model.steps_per_execution} -> 1 on {strategy.num_replicas_in_sync} replicas "
            "(Keras's multi-step loop fails under tf.distribute, keras-team/keras#19246)."
        )
        model.steps_per_execution = 1
        return note
    return None


def shard_by_data(dataset):
    """A training pipeline as a strategy should take it: with tf.data's DATA auto-shard
    policy (under a multi-worker strategy each worker runs the whole pipeline, same seed, and
    keeps its own replicas' rows of every global batch), and repeated.

    AUTO would shard a file-backed pipeline (TFDS CIFAR-10) by files: it fails with fewer
    files than workers, and the workers' batches would no longer be one process's. The
    repeat changes no batch of an endless stream but makes its cardinality INFINITE (ring8's
    `Dataset.counter()` is finite to TensorFlow): otherwise every multi-worker step agrees
    on "data left" by an all-reduce, which fails inside Keras's loop of
    `steps_per_execution` > 1 ("You must feed a value for placeholder tensor").
    """
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.repeat().with_options(options)


@contextlib.contextmanager
def output_dir(workdir, strategy):
    """Yields where this process writes: `workdir` on the chief, else a new temporary
    directory, removed when the block exits (normally or by an exception)."""
    if is_chief(strategy):
        yield workdir
        return
    resolver = strategy.cluster_resolver
    directory = tempfile.mkdtemp(prefix=f"fusedprop-{resolver.task_type}{resolver.task_id}-")
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


class StopTogether(keras.callbacks.Callback):
    """Under several workers, stops every worker after the same train-function call when a
    signal reached any of them: each keeps its signal (`interrupt.Signals.deferred`, held over
    the whole `fit` by `train_lib`), and after every call the workers agree with one all-reduce
    (how many replicas got each signal), then all raise `interrupt.Interrupted`. A worker stopped
    alone would leave the others waiting in the next step's collectives.

    Args:
      strategy: the multi-worker strategy.
      signals: this worker's `interrupt.Signals`.
    """

    def __init__(self, strategy, signals):
        super().__init__()
        self.signals = signals

        @tf.function
        def agree(received):  # a count per stopping signal, summed over every replica of every worker
            return strategy.reduce("SUM", strategy.run(tf.identity, args=(received,)), axis=None)

        self._agree = agree

    def on_train_batch_end(self, batch, logs=None):
        mine = [float(self.signals.received == signum) for signum in interrupt.STOPPING]
        counts = self._agree(tf.constant(mine, tf.float32)).numpy()
        stopping = [signum for signum, count in zip(interrupt.STOPPING, counts) if count > 0]
        if stopping:
            self.signals.stop(stopping[-1])  # SIGTERM over Ctrl-C when both came
