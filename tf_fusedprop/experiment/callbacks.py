"""Keras callbacks for `FusedPropGAN` runs: sample grids, evaluation, throughput, scalars and
checkpoints that survive SIGKILL.

Their step counter is the number of G updates, `model.g_optimizer.iterations`, so TensorBoard
curves of a resumed run continue where the killed run stopped. Per-epoch callbacks that add
values (`Throughput`, `Evaluation`) write them into the epoch's `logs`, so the progress bar,
`History` and `Scalars` (placed after them) see them too. Every file is written atomically
(`files.atomic_write`); images are rendered by `pictures`, TensorBoard records by `summaries`.
`RunCallbacks.create` puts together those of a `train_lib` run.
"""

import contextlib
import dataclasses
import datetime
import io
import json
import os
import time

import keras
import numpy as np
import tensorflow as tf

from tf_fusedprop.experiment import files, pictures, summaries
from tf_fusedprop.experiment.config import json_values, schedule

__all__ = [
    "RECORDED_SIGNALS",
    "BackupAndRestore",
    "Evaluation",
    "Progress",
    "RunCallbacks",
    "SampleGrid",
    "Scalars",
    "Throughput",
]

#: Minutes between a run's early sample grids and, in a log file, its progress lines (`Progress`).
PROGRESS_MINUTES = 5
#: Training signals of the epoch that an evaluation's history entry keeps beside the metrics:
#: the players' losses, D's mean logits, G's spread across a batch against the data's (what a
#: stall looks like from inside) and its coverage of the batch (what mode loss looks like), an adaptive
#: augmentation's probability, a `StrayProbe`'s means over the epoch's probes, an `Auto`
#: schedule's alternating updates so far.
RECORDED_SIGNALS = (
    "d_loss",
    "g_loss",
    "real_logit",
    "fake_logit",
    "fake_spread",
    "fake_coverage",
    "augment_p",
    "stray",
    "stray_cosine",
    "alternated",
)


def _finite_or_none(value):
    """A logged number as JSON holds it: None where it is not finite (a diverged epoch's loss)."""
    value = float(value)
    return value if np.isfinite(value) else None


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

    def write(self, path):
        """Renders the model's samples of the fixed latents into the PNG `path`; returns the image."""
        inputs = self.latents if self.labels is None else [self.latents, self.labels]
        samples = np.asarray(self.model.sampling_generator(inputs, training=False), dtype=np.float32)
        image = self.render(samples)
        os.makedirs(self.directory, exist_ok=True)
        pictures.write_png(path, image)
        return image

    def on_epoch_end(self, epoch, logs=None):
        self.last_path = self.path(epoch)
        image = self.write(self.last_path)
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
        recorded a non-finite update); the epoch's `RECORDED_SIGNALS` the model logged
        (the epoch's mean losses and logits, None where not finite; `augment_p` of an adaptive
        augmentation, `stray` and `stray_cosine` of a probe, `alternated` of an `Auto` schedule).
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
                **{key: _finite_or_none(logs[key]) for key in RECORDED_SIGNALS if logs and key in logs},
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


def _duration(seconds):
    """ "45 s", "12 min", "3 h 05 min", "2 d 4 h"."""
    minutes = int(round(seconds / 60))
    if seconds < 60:
        return f"{seconds:.0f} s"
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours < 48 else f"{hours // 24} d {hours % 24} h"


#: What a progress line quotes of the logs: the losses, G's spread across a batch against the
#: data's (near 0: one sample for every latent, the sign of fused's early stall at 64 px) and its
#: coverage of the batch (~0.97 when G draws every mode, lower as it leaves some).
_PROGRESS_LOGS = ("d_loss", "g_loss", "fake_spread", "fake_coverage")


class Progress(keras.callbacks.Callback):
    """A long run you can follow: once the first updates are timed (the first train-function
    call, which traces, left out), one line with the time per update and the expected time to
    the end; then every `every_minutes`, a sample grid `samples/latest.png` (so that the first
    grid comes within minutes, not after the first epoch) and, with `lines=True` (a log file, not
    a terminal's progress bar), a progress line (the rate, the losses, G's `fake_spread` and
    `fake_coverage`, the time left). Rates count the train-function calls' own time
    (evaluations, checkpoints and grids between them left out), and each line quotes the rate
    since the line before, so that after a schedule's switch (a warm start's alternating
    updates, then fused ones) it quotes the form now training. Reading G for the grid changes
    no state.

    Args:
      total_steps: the run's G updates (`config.steps`).
      grid: the run's `SampleGrid` (None: no early grids).
      every_minutes: between grids and progress lines; None or 0: none.
      lines: print a progress line at each of them.
      log: where the lines go (`print`).
      clock: seconds, monotonic (tests pass their own).
    """

    #: The first estimate waits for this much timed training, and is said only if at least
    #: this much is left.
    TIMED_SECONDS, WORTH_SAYING_SECONDS = 20.0, 120.0

    def __init__(self, total_steps, grid=None, every_minutes=5, lines=False, log=print, clock=time.monotonic):
        super().__init__()
        self.total_steps, self.grid, self.lines, self.log, self.clock = total_steps, grid, lines, log, clock
        self.every_seconds = 60.0 * every_minutes if every_minutes else None
        self.seconds_per_update = None
        self._timed_from = None  # (training seconds, step) where timing starts: after the first call
        self._line_from = None  # the same at the last progress line
        self._trained = 0.0  # seconds inside train-function calls, the first call's left out
        self._call_began = None
        self._last = None

    def on_train_begin(self, logs=None):
        self._timed_from, self._line_from, self._last = None, None, self.clock()

    def on_train_batch_begin(self, batch, logs=None):
        self._call_began = self.clock()

    def on_train_batch_end(self, batch, logs=None):
        now = self.clock()
        if self._timed_from is None:  # the first call traces: timing starts after it
            self._timed_from = self._line_from = (self._trained, _global_step(self.model))
            return
        self._trained += now - (self._call_began if self._call_began is not None else now)
        timing = self.seconds_per_update is None and self._trained - self._timed_from[0] >= self.TIMED_SECONDS
        ticking = self.every_seconds and now - self._last >= self.every_seconds
        if not (timing or ticking):
            return  # most calls: no read of the model's step
        step = _global_step(self.model)
        if timing and step > self._timed_from[1]:
            self.seconds_per_update = self._rate_since(self._timed_from, step)
            left = (self.total_steps - step) * self.seconds_per_update
            if left >= self.WORTH_SAYING_SECONDS:
                ends = datetime.datetime.now() + datetime.timedelta(seconds=left)
                self.log(
                    f"Timed: {self.seconds_per_update:.3g} s per update; {self.total_steps - step:,} updates left, about "
                    f"{_duration(left)} of training (evaluations and checkpoints on top), until ~{ends:%a %H:%M}."
                )
        if ticking:
            self._last = now
            if self.grid is not None:
                self.grid.write(os.path.join(self.grid.directory, "latest.png"))
            if self.lines:
                self._say_progress(step, logs)

    def _rate_since(self, start, step):
        """Training seconds per update from `start` (training seconds, step) to `step`."""
        trained, first = start
        return (self._trained - trained) / (step - first)

    def _say_progress(self, step, logs):
        rate = None
        if self.seconds_per_update is not None:
            rate = self._rate_since(self._line_from, step) if step > self._line_from[1] else self.seconds_per_update
        self._line_from = (self._trained, step)
        left = (self.total_steps - step) * rate if rate is not None else None
        losses = ", ".join(f"{k} {float(logs[k]):.4g}" for k in _PROGRESS_LOGS if logs and k in logs)
        grid = f"; samples: {os.path.join(self.grid.directory, 'latest.png')}" if self.grid is not None else ""
        said = ", ".join(part for part in (f"{rate:.3g} s/update" if rate is not None else "", losses) if part)
        remaining = f"; about {_duration(left)} left" if left is not None else ""
        self.log(f"step {step:,}/{self.total_steps:,}: {said}{remaining}{grid}")


@dataclasses.dataclass
class RunCallbacks:
    """A run's callbacks (`all`, in `fit`'s order), the ones its summary reads, and their writer."""

    writer: object
    throughput: Throughput
    evaluation: Evaluation
    grid: SampleGrid
    all: list

    @classmethod
    def create(cls, config, data, out, evaluator, checkpoint, initial_epoch, terminal=True):
        """The callbacks of a run of `config` on its opened `data` (`datasets.OpenedDataset`),
        writing under `out`: progress (the timed estimate, early grids, and progress lines when
        not on a `terminal`), throughput, evaluation by `evaluator` (if any), sample grids,
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
        # On a terminal a line ends the progress bar's line first; in a log file lines are flushed.
        say = (lambda line: print(f"\n{line}", flush=True)) if terminal else (lambda line: print(line, flush=True))
        progress = Progress(config.steps, grid, PROGRESS_MINUTES, lines=not terminal, log=say)
        everything = [throughput] + ([evaluation] if evaluation else []) + [grid, Scalars(writer, logdir), checkpoint]
        return cls(writer, throughput, evaluation, grid, [progress] + everything)
