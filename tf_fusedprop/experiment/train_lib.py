"""The training job behind `train.py`, as a testable function: `train(config, workdir)`.

`train` reads as a straight line in which the config visits each part once: `config.check`
(`ConfigError`, one line, before anything is built; it opens the run's dataset, a
`datasets.OpenedDataset` that the rest shares: pipeline, evaluator, renderer, the networks'
shapes, and keeps what it built to check the rest: the training plan and `FusedPropGAN`'s
arguments), `distribution.check_run` (does it fit the strategy), `workdir.find` (the run
directory, finished or not), `build_gan` (the networks and `FusedPropGAN`, with the checked
arguments), `callbacks.RunCallbacks.create`; then it restores the last checkpoint
if there is one, fits, exports G and writes `summary.json`. The workdir holds:

| path | what |
|---|---|
| `config.json` | the run's config; a rerun must match it, except for the learning rates and `steps` |
| `learning_rates.json` | the learning-rate changes of reruns (epoch, step, from, to), if any |
| `samples/epoch_XXXX.png` | a sample grid (2-D data: a scatter plot) after every epoch |
| `logs/` | TensorBoard events: losses, logits, steps/s, metrics, sample grids, config |
| `backup/` | the last checkpoint (weights, optimizers, every seed stream and plugin state) |
| `lock` | the pid, host and start time of the run training here (empty when none is) |
| `generator/` | G as a SavedModel: `generator = tf.saved_model.load(path)`, then `generator.serve(z)` |
| `summary.json` | steps, steps/s, final metrics, metrics per evaluation (`history`), config, paths |
| `summary_N.json` | the summary of the first N steps, when a rerun lengthened the schedule |
| `classes.json` | a conditional GAN's class names, by label (`--mode=sample --class=NAME`) |
| `weight_gradients.json` | the convolutions' weight-gradient formulations timed on this machine (`conv_weight_gradients`), kept for a resume |

The summary (`train`'s result): `steps` (G updates in total), `d_steps`, `epochs`,
`learning_rate_changes` (`workdir.learning_rate_changes`), `steps_per_second` and
`train_seconds` (this process's epochs, tracing included; None and 0 when nothing was left to
train), `wall_seconds` (this process), `resumed_from_epoch`, `precision` (`{"policy",
"reason"}`), `metrics` (the last evaluation), `final_metric` (`{"name", "value"}`), `history`
(this process's evaluations: `epoch`, `step`, `train_seconds` so far, `metrics`, `finite`; see
`callbacks.Evaluation`), paths `workdir`, `samples`, `generator`, `config`, and `strategy`,
`replicas`, `workers` (`distribution.facts`).

Resume: rerunning with the same workdir and config continues from the last checkpoint (every
epoch's end, every `config.checkpoint_minutes` within an epoch, and the step a Ctrl-C or SIGTERM
stopped at: `interrupt`, `callbacks.BackupAndRestore`) with the same step count, weights,
optimizer state, every seed stream (latents, augmentation, penalties), the data stream's
position (the stream skips the batches already trained) and, within an epoch, the epoch's
metric sums, so a resumed run ends with the weights and logs of an uninterrupted one. Earlier
epochs' files are kept. One run trains in a workdir at a time (`workdir.locked`). A rerun may
change `d_lr` and `g_lr` (recorded in `learning_rates.json`) and `steps` (a finished run trains
on to a longer schedule, as an uninterrupted run of that length; `workdir.record_steps`); the
rest must match. Without an
explicit workdir, the most recent unfinished `runs/<name>-*` with the same config is resumed,
otherwise a new `runs/<name>-<timestamp>` is started.

Several devices or machines: `train(..., strategy=...)` builds the GAN in the strategy's
scope; `config.batch_size` is the global batch; under several workers only the chief writes
the workdir and evaluates (`distribution`).

The evaluation models (digits classifier, Inception) and reference statistics are cached once
per user (`config.cache_dir`, else `$TF_FUSEDPROP_CACHE`, else `~/.cache/tf_fusedprop`), so a
new run does not train the digits classifier again.

Metrics per dataset (see `datasets`): digits, FID, KID (and classifier score) under
`features.DigitsClassifier`; CIFAR-10, FID and IS under TF-GAN's Inception when
`config.inception_path` is set; 2-D mixtures, modes covered and the fraction of
high-quality samples (`metrics.mode_coverage`).

Divergence: when a player's loss or gradients become non-finite, training stops at that
batch (`divergence.DivergenceMonitor`) with `divergence.TrainingDivergedError`; the diverged
epoch writes nothing, so `backup/` keeps the last good checkpoint to resume from.
"""

import contextlib
import os
import signal
import time

import keras
import numpy as np
import tensorflow as tf

from tf_fusedprop import conv_weight_gradients
from tf_fusedprop import networks as fp_networks
from tf_fusedprop import optimizers as fp_optimizers
from tf_fusedprop import precision as fp_precision
from tf_fusedprop.experiment import callbacks, datasets, distribution, divergence, files, interrupt, training_plan
from tf_fusedprop.experiment import workdir as fp_workdir
from tf_fusedprop.experiment.config import (
    ConfigError,
    check,
    fit_steps_per_execution,
    gan_arguments,
    json_values,
    schedule,
)
from tf_fusedprop.experiment.interrupt import TrainingInterrupted
from tf_fusedprop.gan import FusedPropGAN

__all__ = ["build_gan", "train"]


def train(config, workdir=None, runs_root="runs", verbose=1, strategy=None, overridden=None, extra_callbacks=()):
    """Trains a GAN as `config` says, in `workdir`; resumes the run found there.

    Under a multi-worker `strategy` every worker calls this with the same `workdir`; only the
    chief writes it and evaluates, the others write to temporary directories (`distribution`).

    Args:
      config: an `ml_collections.ConfigDict` as built by `configs/*.py` (see `config.check`).
      workdir: the run directory; None for `workdir.default_workdir(config, runs_root)`.
      runs_root: the parent of default workdirs.
      verbose: `fit`'s verbosity (1: progress bar).
      strategy: the `tf.distribute.Strategy` to train under (`distribution.make_strategy`);
        None for the current one (the default strategy outside any scope).
      overridden: the config keys the user set (train.py: those on the command line); a
        `steps_per_execution` not among them is fitted to the epoch length
        (`config.fit_steps_per_execution`, with a note). None: every key counts as set.
      extra_callbacks: more Keras callbacks for `fit`, run after the run's own (an evaluation's
        metrics are in their epoch logs) and before its checkpoint.

    Returns:
      The summary, also written to `workdir/summary.json` (its fields: the module docstring).

    Raises:
      ConfigError: invalid config, unwritable workdir, a workdir holding another run, a batch
        or model that does not fit the strategy (`distribution.check_run`).
      real_samples.DatasetUnavailableError: CIFAR-10 is neither prepared nor downloadable.
      features.InceptionModuleUnavailableError: bad `config.inception_path`.
      image_files.ImageSourceError: a user's images cannot be read.
      divergence.TrainingDivergedError: a loss or gradient became non-finite; the last good
        checkpoint is kept.
      interrupt.TrainingInterrupted: Ctrl-C or SIGTERM during training, after a checkpoint at the
        step reached.
      files.WriteError: the disk is full or not writable (the last good checkpoint is kept).
      workdir.WorkdirInUseError: another run trains in the workdir.
    """
    start = time.perf_counter()
    strategy = strategy or tf.distribute.get_strategy()
    fitted = None
    if overridden is not None and "steps_per_execution" not in overridden:
        config, fitted = fit_steps_per_execution(config)
    checked = check(config)
    completed = datasets.completed(config, checked.data)  # widths left None; a user's conditional images: num_classes
    if completed is not config:
        config = completed
        checked = check(config, checked.data)
    data = checked.data
    distribution.check_run(config, workdir, strategy)
    run = fp_workdir.find(config, workdir, runs_root)
    if run.summary is not None:
        _print(f"Run already complete: {run.summary_path}")
        return run.summary
    make_evaluator = data.evaluation(enabled=distribution.is_chief(strategy))
    _, steps_per_epoch = schedule(config)
    signals = interrupt.Signals()
    checkpoint = callbacks.BackupAndRestore(run.backup_dir, steps_per_epoch, config.checkpoint_minutes, signals)
    _clear_global_seed()
    epochs = schedule(config)[0]
    calls = [  # one pipeline per fit call, all made now (see _segments)
        (initial_epoch, length, distribution.shard_by_data(_from_batch(data.pipeline(config.seed), first_batch)))
        for initial_epoch, length, first_batch in _segments(checkpoint.metadata(), epochs, steps_per_epoch)
    ]
    chief = distribution.is_chief(strategy)
    with (
        signals,
        distribution.output_dir(run.path, strategy) as out,
        fp_workdir.locked(out, say=_print) if chief else contextlib.nullcontext(),
        _kept_weight_gradients(out),
    ):
        for directory in (out, run.backup_dir):
            files.remove_stale_temporaries(directory)
        rerun_changes = run.start(out, checkpoint.metadata())
        if config.num_classes is not None:
            files.write_json(os.path.join(out, "classes.json"), data.class_names)
        evaluator, note = make_evaluator(run.cache_dir)
        gan, precision, initial_epoch = _build(config, checked, strategy, checkpoint)
        # Other workers run the chief's callbacks (the same variable reads), writing under `out`.
        saving = checkpoint
        if out != run.path:
            saving = callbacks.BackupAndRestore(
                os.path.join(out, "backup"), steps_per_epoch, config.checkpoint_minutes, signals
            )
            saving.resume(checkpoint.metadata())
        hooks = callbacks.RunCallbacks.create(
            config, data, out, evaluator, saving, initial_epoch, terminal=verbose == 1
        )
        notes = [fitted, note, distribution.fit_under(gan, strategy), *rerun_changes]
        _announce(config, strategy, precision, run, out, gan, checkpoint.metadata(), notes)
        several = distribution.facts(strategy)["workers"] > 1
        together = distribution.StopTogether(strategy, signals) if several else None
        _fit(
            gan,
            calls,
            epochs,
            steps_per_epoch,
            hooks,
            out,
            verbose,
            together,
            (config.d_lr, config.g_lr),
            extra_callbacks,
        )
        try:
            return _write_results(
                config, gan, out, evaluator, hooks, initial_epoch, start, precision, distribution.facts(strategy)
            )
        except KeyboardInterrupt as err:
            raise _interruption(gan, saving, out, err, trained=True) from None


def _clear_global_seed():
    """Leaves TensorFlow's global seed unset, as in a fresh process.

    tf.data combines a shuffle's own seed with the global one when the dataset is made, so
    without this a run's data order would depend on what ran before it in the process (the
    seed of the previous run, or of a classifier trained for the metrics): two runs of one
    config in one process (`benchmarks/quality.py` trains its grid in one) would differ, and a
    run resumed in a fresh process would read another order than it started with. Unset, the
    order is the one `train.py` always had. `_build` seeds everything else afterwards.
    """
    tf.random.set_seed(None)


@contextlib.contextmanager
def _kept_weight_gradients(out):
    """Within it, the run's weight-gradient choices are kept in `out` (`conv_weight_gradients.table_file`).

    Raises:
      ConfigError: the run's table is damaged.
    """
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(conv_weight_gradients.table_file(os.path.join(out, "weight_gradients.json")))
        except ValueError as err:
            raise ConfigError(f"{err} Delete it to time the formulations again.") from None
        yield


def _build(config, checked, strategy, checkpoint):
    """`(gan, precision, initial_epoch)`: the GAN of a `CheckedConfig` built in the strategy's
    scope and restored."""
    precision = fp_precision.choose(config.mixed_precision)
    keras.utils.set_random_seed(config.seed)
    data = checked.data
    with strategy.scope():
        gan = build_gan(config, precision, data.network_inputs, checked)
    initial_epoch = checkpoint.restore(gan)
    # After the restore: the images the pipeline leaves out now, also if the data changed.
    if gan.augment is not None and gan.augment.adaptive is not None and gan.augment.adaptive.held_out:
        gan.augment.adaptive.hold_out(data.held_out(gan.augment.adaptive.held_out))
    # The checkpoint holds the optimizers' learning rates too; the config's are used.
    gan.d_optimizer.learning_rate = config.d_lr
    gan.g_optimizer.learning_rate = checked.plan.g_learning_rate()
    return gan, precision, initial_epoch


def _announce(config, strategy, precision, run, out, gan, checkpoint, notes):
    """Prints what is about to be trained, where, how, from which step, and the notes."""
    epochs, steps_per_epoch = schedule(config)
    _print(distribution.describe(strategy))
    _print(f"precision: {precision.policy} ({precision.reason})")
    if out != run.path:
        _print(f"Not the chief: this worker writes to {out} (deleted at the end); the chief writes {run.path}.")
    _print(
        f"{config.name}: {config.dataset}, network {config.network}, loss {config.loss}, form {config.form}, "
        f"{config.steps} steps ({epochs} epochs of {steps_per_epoch}), batch {config.batch_size}"
    )
    plugins = [
        repr(p) for p in (gan.form, *gan.regularizers, gan.augment, gan.ema, gan.lookahead, gan.probe) if p is not None
    ]
    _print(f"step: {', '.join(plugins)}")
    _print(f"Writing to {run.path}; rerun the same command (or pass --workdir={run.path}) to resume it.")
    if checkpoint and checkpoint.get("epoch_steps"):
        _print(
            f"Resuming from step {checkpoint['steps']}: epoch {checkpoint['epoch'] + 1}/{epochs}, "
            f"{checkpoint['epoch_steps']} of its {steps_per_epoch} steps done."
        )
    elif checkpoint:
        _print(f"Resuming from epoch {checkpoint['epoch']}/{epochs} ({checkpoint['steps']} steps done).")
    for note in notes:
        if note:
            _print(note)


def _segments(checkpoint, epochs, steps_per_epoch):
    """The `fit` calls that train a run on from its `checkpoint` (metadata, or None): triples
    `(initial_epoch, steps_per_epoch, first_batch)`, the rest of a broken epoch first (one epoch
    of its remaining steps), then the whole epochs left (as one call); none when every epoch is
    done. `first_batch` is where the call starts reading the data stream: one batch per step.

    Each call needs a pipeline of its own, made as the first one is (before `_build` seeds
    TensorFlow): a shuffling pipeline iterated a second time in one process reshuffles (tf.data's
    `reshuffle_each_iteration` keeps its count in the dataset), so a second `fit` over the same
    pipeline would read another order than a fresh process does."""
    epoch, within, batch = (
        (checkpoint["epoch"], checkpoint.get("epoch_steps", 0), checkpoint["steps"]) if checkpoint else (0, 0, 0)
    )
    calls = []
    if within:
        calls.append((epoch, steps_per_epoch - within, batch))
        epoch, batch = epoch + 1, batch + steps_per_epoch - within
    return calls + ([(epoch, steps_per_epoch, batch)] if epoch < epochs else [])


def _from_batch(pipeline, first_batch):
    """The training batches from `first_batch` on: every step takes one batch of the
    (deterministically shuffled) stream, so a resumed run skips the steps already trained and
    sees the batches the uninterrupted run would have."""
    return pipeline.skip(first_batch) if first_batch else pipeline


class _StopAfterThisEpoch(keras.callbacks.Callback):
    """Ends `fit` after its first epoch: the rest of a broken epoch, trained on its own."""

    def on_epoch_end(self, epoch, logs=None):
        self.model.stop_training = True


def _fit(gan, calls, epochs, steps_per_epoch, hooks, out, verbose, together=None, learning_rates=None, extra=()):
    """`gan.fit` over `calls`, `(initial_epoch, length, dataset)` of `_segments`, in the run's
    `epochs` of `steps_per_epoch` (a call of another length trains the rest of a broken epoch). A
    divergence stops it (`divergence.TrainingDivergedError`), and so does a signal
    (`interrupt.TrainingInterrupted`, after a checkpoint at the step reached); under several
    workers (`together`, a `distribution.StopTogether`) signals wait for the workers to agree
    after a call. A divergence names `learning_rates`, the config's (d_lr, g_lr). `extra`
    callbacks run just before the checkpoint."""
    checkpoint = hooks.all[-1]
    try:
        with together.signals.deferred() if together else contextlib.nullcontext():
            for initial_epoch, length, dataset in calls:
                gan.fit(
                    dataset,
                    epochs=epochs,
                    steps_per_epoch=length,
                    initial_epoch=initial_epoch,
                    callbacks=[divergence.DivergenceMonitor(checkpoint, out, learning_rates)]
                    + ([together] if together else [])
                    + hooks.all[:-1]
                    + list(extra)
                    + [checkpoint]
                    + ([_StopAfterThisEpoch()] if length != steps_per_epoch else []),
                    verbose=verbose,
                    shuffle=False,
                )
    except divergence.TrainingDivergedError:
        hooks.writer.close()
        raise
    except KeyboardInterrupt as err:
        hooks.writer.close()
        checkpoint.save(gan)
        raise _interruption(gan, checkpoint, out, err) from None


def _interruption(gan, checkpoint, out, signal_error, trained=False):
    """The `TrainingInterrupted` of a signal (`signal_error`, an `interrupt.Interrupted` or a
    plain `KeyboardInterrupt`) at `gan`'s step, with `checkpoint`'s last save."""
    step = int(gan.g_optimizer.iterations.numpy())
    signum = getattr(signal_error, "signum", signal.SIGINT)
    return TrainingInterrupted(step, checkpoint.metadata(), checkpoint.backup_dir, out, trained, signum)


def build_gan(config, precision=None, network_inputs=None, checked=None):
    """The compiled `FusedPropGAN` of a valid config (weights as the global seed makes them).

    Args:
      config: a valid config.
      precision: a `precision.Precision`; None chooses from `config.mixed_precision`. Under
        `mixed_float16` both optimizers are wrapped in one-scale `LossScaleOptimizer`s.
      network_inputs: the builders' arguments that the data fix (`datasets.OpenedDataset.network_inputs`);
        None opens the config's dataset for them.
      checked: the config's `config.CheckedConfig`, whose GAN arguments and plan it uses (a
        run's, checked once); None builds them from `config`.

    Raises:
      ConfigError: a network builder refused the config's arguments.
    """
    precision = precision or fp_precision.choose(config.mixed_precision)
    g_fn, d_fn = fp_networks.get(config.network)
    g_data, d_data = network_inputs or datasets.open_dataset(config).network_inputs
    conditional = {} if config.num_classes is None else {"num_classes": config.num_classes}
    dtype = precision.layer_dtype
    try:
        generator = g_fn(
            latent_dim=config.latent_dim, dtype=dtype, **g_data, **conditional, **config.generator.to_dict()
        )
        discriminator = d_fn(dtype=dtype, **d_data, **conditional, **config.discriminator.to_dict())
        arguments = checked.arguments if checked is not None else gan_arguments(config)
        gan = FusedPropGAN(generator, discriminator, **arguments)
    except ValueError as err:
        raise ConfigError(f"cannot build network {config.network!r}: {' '.join(str(err).split())}") from None

    def adam(learning_rate):
        optimizer = fp_optimizers.Adam(learning_rate, beta_1=config.beta1, beta_2=config.beta2)
        return keras.optimizers.LossScaleOptimizer(optimizer) if precision.loss_scaling else optimizer

    gan.compile(
        d_optimizer=adam(config.d_lr),
        # A schedule from the start: an optimizer built with a float rate has a variable for it,
        # and a checkpoint of one would not load into the other.
        g_optimizer=adam((checked.plan if checked is not None else training_plan.plan(config)).g_learning_rate()),
        jit_compile=config.jit_compile,
        steps_per_execution=config.steps_per_execution,
    )
    return gan


def _print(*args):
    print(*args, flush=True)


def _write_results(config, gan, workdir, evaluator, hooks, initial_epoch, start, precision, strategy_facts):
    """Exports G, writes and returns the summary, and prints the final metrics."""
    metrics = {}
    if evaluator is not None:
        metrics = hooks.evaluation.last if hooks.evaluation.last is not None else evaluator(gan.sampling_generator)
        metrics = {
            key: float(value) if isinstance(value, (float, np.floating)) else int(value)
            for key, value in metrics.items()
        }
    generator_path = os.path.join(workdir, "generator")
    files.atomic_write(generator_path, gan.export_generator, "the exported generator")
    hooks.writer.close()
    epochs, _ = schedule(config)
    samples = hooks.grid.last_path or hooks.grid.path(epochs - 1)
    summary = {
        "name": config.name,
        "steps": int(gan.g_optimizer.iterations.numpy()),
        "d_steps": int(gan.d_optimizer.iterations.numpy()),
        "epochs": epochs,
        "learning_rate_changes": fp_workdir.learning_rate_changes(workdir),
        "steps_per_second": hooks.throughput.steps_per_second,
        "train_seconds": hooks.throughput.seconds,
        "wall_seconds": time.perf_counter() - start,
        "resumed_from_epoch": initial_epoch,
        "precision": {"policy": precision.policy, "reason": precision.reason},
        "metrics": metrics,
        "final_metric": {"name": evaluator.primary, "value": metrics.get(evaluator.primary)} if evaluator else None,
        "history": hooks.evaluation.history if hooks.evaluation else [],
        "workdir": workdir,
        "samples": samples if os.path.exists(samples) else None,
        "generator": generator_path,
        "config": json_values(config),
        **strategy_facts,
    }
    summary_path = os.path.join(workdir, "summary.json")
    files.write_json(summary_path, summary, "the summary")
    if evaluator is not None:
        _print(evaluator.describe(metrics))
    rate = f", {hooks.throughput.steps_per_second:.1f} steps/s" if hooks.throughput.steps_per_second else ""
    _print(f"Done: {summary['steps']} steps{rate} in {summary['wall_seconds']:.0f} s; summary {summary_path}")
    return summary
