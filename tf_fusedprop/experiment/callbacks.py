"""Keras callbacks for `FusedPropGAN` runs: sample grids, evaluation, throughput, scalars and
checkpoints that survive SIGKILL.

Their step counter is the number of G updates, `model.g_optimizer.iterations`, so TensorBoard
curves of a resumed run continue where the killed run stopped. Per-epoch callbacks that add
values (`Throughput`, `Evaluation`) write them into the epoch's `logs`, so the progress bar,
`History` and `Scalars` (placed after them) see them too. Every file is written atomically
(`files.atomic_write`); images are rendered by `images`, TensorBoard records by `summaries`.
`RunCallbacks.create` puts together those of a `train_lib` run.
"""

import dataclasses
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
            self.writer.flush()


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
    """

    def __init__(self, writer):
        super().__init__()
        self.writer = writer

    def on_epoch_end(self, epoch, logs=None):
        step = _global_step(self.model)
        with self.writer.as_default():
            for name, value in (logs or {}).items():
                if np.ndim(value) == 0 and np.isfinite(float(value)):
                    summaries.summary_scalar(name, float(value), step=step)
        self.writer.flush()


class BackupAndRestore(keras.callbacks.Callback):
    """Saves the whole training state after every epoch, so that a killed run can resume.

    The equivalent of `keras.callbacks.BackupAndRestore`, made safe against SIGKILL at any
    instant: each epoch's state goes to a new file `epoch_XXXX.weights.h5` (both networks,
    both optimizers, the latent sampler), written under a temporary name and renamed; then
    `checkpoint.json` (epoch, steps, file) is replaced atomically; only then are older weight
    files deleted. `restore` loads the state the JSON names and returns the epoch to pass to
    `fit(initial_epoch=...)`. Checkpoints are kept after training. A `FusedPropGAN` whose
    updates became non-finite (`divergence()`) is not saved: the last good checkpoint stays.

    Args:
      backup_dir: a directory used by this callback only.
    """

    METADATA = "checkpoint.json"

    def __init__(self, backup_dir):
        super().__init__()
        self.backup_dir = backup_dir

    def metadata(self):
        """The last checkpoint's `{"epoch", "steps", "weights"}`, or None if there is none."""
        path = os.path.join(self.backup_dir, self.METADATA)
        if not os.path.exists(path):
            return None
        return files.read_json(path)

    def restore(self, model):
        """Loads the last checkpoint into the (compiled) `model`; returns its epoch, or 0."""
        metadata = self.metadata()
        if metadata is None:
            return 0
        model.load_weights(os.path.join(self.backup_dir, metadata["weights"]))
        return int(metadata["epoch"])

    def on_epoch_end(self, epoch, logs=None):
        divergence = getattr(self.model, "divergence", None)
        if divergence is not None and divergence() is not None:
            return  # Never replace the last good checkpoint with non-finite weights.
        os.makedirs(self.backup_dir, exist_ok=True)
        weights = f"epoch_{epoch + 1:04d}.weights.h5"
        path = os.path.join(self.backup_dir, weights)
        files.atomic_write(path, lambda tmp: self.model.save_weights(tmp, overwrite=True))
        metadata = {"epoch": epoch + 1, "steps": _global_step(self.model), "weights": weights}
        files.write_json(os.path.join(self.backup_dir, self.METADATA), metadata)
        for name in os.listdir(self.backup_dir):
            if name.endswith(".weights.h5") and name != weights:
                os.remove(os.path.join(self.backup_dir, name))


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
        writer = tf.summary.create_file_writer(os.path.join(out, "logs"))
        with writer.as_default():
            summaries.summary_text("config", f"```\n{json.dumps(json_values(config), indent=2)}\n```", step=step)
        throughput = Throughput()
        evaluation = Evaluation(evaluator, every=config.eval_every, throughput=throughput) if evaluator else None
        latents, labels = data.grid_inputs
        grid = SampleGrid(latents, os.path.join(out, "samples"), render=data.render, writer=writer, labels=labels)
        everything = [throughput] + ([evaluation] if evaluation else []) + [grid, Scalars(writer), checkpoint]
        return cls(writer, throughput, evaluation, grid, everything)
