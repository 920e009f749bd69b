"""Keras callbacks for `FusedPropGAN` runs: sample grids, evaluation, throughput, scalars and
checkpoints that survive SIGKILL.

Their step counter is the number of G updates, `model.g_optimizer.iterations`, so TensorBoard
curves of a resumed run continue where the killed run stopped. Per-epoch callbacks that add
values (`Throughput`, `Evaluation`) write them into the epoch's `logs`, so the progress bar,
`History` and `Scalars` (placed after them) see them too. Every file is written atomically
(`files.atomic_write`); images are rendered by `images`, TensorBoard records by `summaries`.
`RunCallbacks.create` puts together those of a `train_lib` run.
"""

import contextlib
import dataclasses
import io
import json
import os
import time

import keras
import numpy as np
import tensorflow as tf

from tf_fusedprop.experiment import files, pictures, summaries
from tf_fusedprop.experiment.config import json_values, schedule

__all__ = ["BackupAndRestore", "Evaluation", "RunCallbacks", "SampleGrid", "Scalars", "Throughput"]


def _global_step(model):
    return int(model.g_optimizer.iterations.numpy())


def _flush(writer, directory):
    """Flushes a `tf.summary` writer, which only logs a failed write: a full disk is checked here
    (`files.WriteError`)."""
    writer.flush()
    if directory is not None:
        files.check_free_space(directory, "the TensorBoard summaries")


class SampleGrid(keras.callbacks.Callback):
    """After every epoch, renders the model's samples of fixed latents to
    `directory/epoch_XXXX.png` (epochs numbered from 1) and, with a `writer`, to TensorBoard as
    image "samples". It samples `model.sampling_generator` (the EMA generator when on).

    Args:
      latents: the fixed latents, array `[n, latent_dim]`.
      directory: where the PNGs go (created if missing).
      render: maps float32 samples `[n, ...]` to a uint8 `[height, width, channels]` image,
        e.g. `pictures.image_grid` or an `pictures.scatter_plot` partial.
      writer: an optional `tf.summary` writer.
      labels: for a conditional G, the class of each latent (`[n]`), or None.

    Attributes:
      last_path: the path of the last PNG written, or None.
    """

    def __init__(self, latents, directory, render=pictures.image_grid, writer=None, labels=None):
        super().__init__()
        self.latents = np.asarray(latents, dtype=np.float32)
        self.labels = None if labels is None else np.asarray(labels, dtype=np.int32)
        self.directory = directory
        self.render = render
        self.writer = writer
        self.last_path = None

    def path(self, epoch):
        """The PNG of (0-based) `epoch`."""
        return os.path.join(self.directory, f"epoch_{epoch + 1:04d}.png")

    def on_epoch_end(self, epoch, logs=None):
        inputs = self.latents if self.labels is None else [self.latents, self.labels]
        samples = np.asarray(self.model.sampling_generator(inputs, training=False), dtype=np.float32)
        image = self.render(samples)
        os.makedirs(self.directory, exist_ok=True)
        self.last_path = self.path(epoch)
        pictures.write_png(self.last_path, image)
        if self.writer is not None:
            with self.writer.as_default():
                summaries.summary_image("samples", image, step=_global_step(self.model))
            _flush(self.writer, self.directory)


class Evaluation(keras.callbacks.Callback):
    """Evaluates the model's `sampling_generator` (G, or its EMA) every `every` epochs and after
    the last epoch; adds the metrics to the logs.

    Args:
      evaluate: maps the generator (a Keras model) to a dict of float metrics.
      every: epochs between evaluations.
      throughput: the run's `Throughput` (placed before this callback), whose training seconds
        so far each `history` entry records; None records None.

    Attributes:
      last: the metrics of the last evaluation of this run, or None.
      history: one entry per evaluation of this run (this process): `epoch` (1-based),
        `step` (G updates), `train_seconds` (the throughput's epoch time so far: evaluations,
        sample grids and checkpoints excluded), `metrics` (plain numbers), and `finite`
        (False once a loss of an epoch so far was not finite, or the model's `divergence()`
        recorded a non-finite update).
    """

    def __init__(self, evaluate, every=1, throughput=None):
        super().__init__()
        self.evaluate = evaluate
        self.every = every
        self.throughput = throughput
        self.last = None
        self.history = []
        self._finite = True

    def on_epoch_end(self, epoch, logs=None):
        losses = [float(logs[key]) for key in ("d_loss", "g_loss") if logs and key in logs]
        diverged = getattr(self.model, "divergence", lambda: None)() is not None
        self._finite = self._finite and all(np.isfinite(losses)) and not diverged
        last_epoch = self.params.get("epochs")
        if (epoch + 1) % self.every and epoch + 1 != last_epoch:
            return
        self.last = dict(self.evaluate(self.model.sampling_generator))
        self.history.append(
            {
                "epoch": epoch + 1,
                "step": _global_step(self.model),
                "train_seconds": None if self.throughput is None else self.throughput.seconds,
                "metrics": {
                    key: value.item() if isinstance(value, np.generic) else value for key, value in self.last.items()
                },
                "finite": self._finite,
            }
        )
        if logs is not None:
            logs.update(self.last)


class Throughput(keras.callbacks.Callback):
    """Measures training speed: G updates per second of epoch time, this run.

    Epoch time runs from `on_epoch_begin` to this callback's `on_epoch_end`; place it first
    so that evaluation and sample grids are not counted. The first epoch includes tracing.
    Adds `steps_per_second` (of the epoch) to the logs.

    Attributes:
      steps: G updates trained in this run.
      seconds: their epoch time.
    """

    def __init__(self):
        super().__init__()
        self.steps = 0
        self.seconds = 0.0
        self._start = None

    @property
    def steps_per_second(self):
        """`steps / seconds` over this run's epochs (None before the first epoch ends)."""
        return self.steps / self.seconds if self.seconds else None

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        seconds = time.perf_counter() - self._start
        steps = self.params["steps"]
        self.steps += steps
        self.seconds += seconds
        if logs is not None:
            logs["steps_per_second"] = steps / seconds


class Scalars(keras.callbacks.Callback):
    """Writes every numeric value of the epoch logs as a TensorBoard scalar.

    The step is the number of G updates. Place it after the callbacks that add to the logs.
    With `logdir` (the writer's directory), a full disk there raises `files.WriteError`.
    """

    def __init__(self, writer, logdir=None):
        super().__init__()
        self.writer = writer
        self.logdir = logdir

    def on_epoch_end(self, epoch, logs=None):
        step = _global_step(self.model)
        with self.writer.as_default():
            for name, value in (logs or {}).items():
                if np.ndim(value) == 0 and np.isfinite(float(value)):
                    summaries.summary_scalar(name, float(value), step=step)
        _flush(self.writer, self.logdir)


class _InMemoryWeightsFile(io.BytesIO):
    """A `.weights.h5` in memory: Keras's `save_weights` checks the name's suffix, and its HDF5
    writer takes a `BytesIO`; the bytes then reach the disk through Python's own writes, which
    report a full disk as an `OSError` (h5py writing to a full disk ended in a segfault)."""

    def __str__(self):
        return "checkpoint.weights.h5"

    __fspath__ = __str__


class BackupAndRestore(keras.callbacks.Callback):
    """Saves the whole training state after every epoch, every `every_minutes` and when a run
    is stopped, so that a run killed or stopped at any point resumes losing at most that much.

    The equivalent of `keras.callbacks.BackupAndRestore(save_freq=...)`, made safe against
    SIGKILL at any instant: each checkpoint goes to a new file (`epoch_XXXX.weights.h5` at an epoch's end,
    `step_XXXXXXXX.weights.h5` within one: both
    networks, both optimizers, every seed stream and plugin state), made in memory and written
    under a temporary name, then renamed; then `checkpoint.json` is replaced atomically; only
    then are older weight files deleted, so the last good checkpoint is always on disk. A full
    or read-only disk raises `files.WriteError` and leaves the last good one. A `FusedPropGAN`
    whose updates became non-finite (`divergence()`) is not saved.

    `checkpoint.json` holds `epoch` (epochs completed), `steps` (G updates), `weights` (the
    file) and, for a checkpoint within an epoch, `epoch_steps` (its steps into the next epoch)
    and `metrics` (the values of the model's metric variables, so that the epoch's logged means
    after a resume are those of an uninterrupted run). `restore` loads it and returns the epoch
    to pass to `fit(initial_epoch=...)`; `train_lib` trains the rest of a broken epoch first.

    Args:
      backup_dir: a directory used by this callback only.
      steps_per_epoch: the run's epoch length (checkpoints within an epoch); None: epoch ends only.
      every_minutes: minutes between checkpoints within an epoch (measured from the last
        checkpoint or the start of `fit`); None or 0: none.
      signals: the run's `interrupt.Signals`, held off while a checkpoint is written; None: none.
      clock: seconds, monotonic (tests pass their own).
    """

    METADATA = "checkpoint.json"

    def __init__(self, backup_dir, steps_per_epoch=None, every_minutes=None, signals=None, clock=time.monotonic):
        super().__init__()
        self.backup_dir = backup_dir
        self.steps_per_epoch = steps_per_epoch
        self.every_seconds = 60.0 * every_minutes if every_minutes else None
        self.signals = signals
        self.clock = clock
        self._last_save = None
        self._metrics_to_restore = None

    def metadata(self):
        """The last checkpoint's `{"epoch", "steps", "weights"[, "epoch_steps", "metrics"]}`, or None."""
        path = os.path.join(self.backup_dir, self.METADATA)
        if not os.path.exists(path):
            return None
        return files.read_json(path)

    def restore(self, model):
        """Loads the last checkpoint into the (compiled) `model`; returns its epochs completed, or 0."""
        metadata = self.metadata()
        if metadata is None:
            return 0
        model.load_weights(os.path.join(self.backup_dir, metadata["weights"]))
        self.resume(metadata)
        return int(metadata["epoch"])

    def resume(self, metadata):
        """Marks the checkpoint (metadata) that `fit` resumes from: when its broken epoch begins,
        the model's metric variables take the values saved with it (`restore` calls it; under
        several workers every worker must, as metric variables are summed over them)."""
        if metadata and metadata.get("epoch_steps"):
            self._metrics_to_restore = (int(metadata["epoch"]), metadata["metrics"])

    def save(self, model, epoch=None):
        """Saves `model`'s state at its step, unless it was saved there or diverged; returns the
        new metadata, or None if nothing was written.

        Args:
          model: the model.
          epoch: the epochs completed, at an epoch's end; None: from the step and `steps_per_epoch`.

        Raises:
          files.WriteError: the disk is full or not writable (the last checkpoint stays).
        """
        divergence = getattr(model, "divergence", None)
        if divergence is not None and divergence() is not None:
            return None  # Never replace the last good checkpoint with non-finite weights.
        steps = _global_step(model)
        last = self.metadata()
        if last is not None and last["steps"] == steps:
            return None
        within = 0
        if epoch is None:
            epoch, within = divmod(steps, self.steps_per_epoch)
        with self.signals.deferred() if self.signals is not None else contextlib.nullcontext():
            metadata = self._write(model, epoch, steps, within)
        self._last_save = self.clock()
        return metadata

    def _write(self, model, epoch, steps, within):
        os.makedirs(self.backup_dir, exist_ok=True)
        weights = f"step_{steps:08d}.weights.h5" if within else f"epoch_{epoch:04d}.weights.h5"
        image = _InMemoryWeightsFile()
        model.save_weights(image)
        content = image.getbuffer()  # no copy: SNGAN's state at 64 px is 176 MB

        def write(tmp):
            with open(tmp, "wb") as f:
                f.write(content)

        files.atomic_write(os.path.join(self.backup_dir, weights), write, "the checkpoint", len(content))
        metadata = {"epoch": epoch, "steps": steps, "weights": weights}
        if within:
            metadata["epoch_steps"] = within
            metadata["metrics"] = [float(v.numpy()) for metric in model.metrics for v in metric.variables]
        files.write_json(os.path.join(self.backup_dir, self.METADATA), metadata, "the checkpoint")
        for name in os.listdir(self.backup_dir):
            if name.endswith(".weights.h5") and name != weights:
                os.remove(os.path.join(self.backup_dir, name))
        return metadata

    def on_train_begin(self, logs=None):
        self._last_save = self.clock()

    def on_epoch_begin(self, epoch, logs=None):
        if self._metrics_to_restore is not None and self._metrics_to_restore[0] == epoch:
            values = iter(self._metrics_to_restore[1])
            for metric in self.model.metrics:
                for variable in metric.variables:
                    variable.assign(next(values))
        self._metrics_to_restore = None

    def on_train_batch_end(self, batch, logs=None):
        if not self.every_seconds or not self.steps_per_epoch or self.clock() - self._last_save < self.every_seconds:
            return
        if self.steps_per_epoch and _global_step(self.model) % self.steps_per_epoch == 0:
            return  # The epoch's end saves it.
        self.save(self.model)

    def on_epoch_end(self, epoch, logs=None):
        self.save(self.model, epoch + 1)


@dataclasses.dataclass
class RunCallbacks:
    """A run's callbacks (`all`, in `fit`'s order), the ones its summary reads, and their writer."""

    writer: object
    throughput: Throughput
    evaluation: Evaluation
    grid: SampleGrid
    all: list

    @classmethod
    def create(cls, config, data, out, evaluator, checkpoint, initial_epoch):
        """The callbacks of a run of `config` on its opened `data` (`datasets.OpenedDataset`),
        writing under `out`: throughput, evaluation by `evaluator` (if any), sample grids,
        TensorBoard scalars (with the config as text), and `checkpoint` last."""
        step = initial_epoch * schedule(config)[1]
        logdir = os.path.join(out, "logs")
        writer = tf.summary.create_file_writer(logdir)
        with writer.as_default():
            summaries.summary_text("config", f"```\n{json.dumps(json_values(config), indent=2)}\n```", step=step)
        throughput = Throughput()
        evaluation = Evaluation(evaluator, every=config.eval_every, throughput=throughput) if evaluator else None
        latents, labels = data.grid_inputs
        grid = SampleGrid(latents, os.path.join(out, "samples"), render=data.render, writer=writer, labels=labels)
        everything = [throughput] + ([evaluation] if evaluation else []) + [grid, Scalars(writer, logdir), checkpoint]
        return cls(writer, throughput, evaluation, grid, everything)
