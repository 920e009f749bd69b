"""The training job behind `train.py`, as a testable function: `train(config, workdir)`.

`train` validates the config (`config.validate` raises `ConfigError`, one line, before
anything is built), picks the workdir (`workdir`), prepares what the config's dataset needs
(`datasets.get(config.dataset)`: pipeline, evaluator, renderer), builds a `FusedPropGAN`,
restores the last checkpoint if there is one, fits with the callbacks of `callbacks`,
exports G and writes `summary.json`. The workdir holds:

| path | what |
|---|---|
| `config.json` | the run's config; a rerun must match it, except for the learning rates |
| `learning_rates.json` | the learning-rate changes of reruns (epoch, step, from, to), if any |
| `samples/epoch_XXXX.png` | a sample grid (2-D data: a scatter plot) after every epoch |
| `logs/` | TensorBoard events: losses, logits, steps/s, metrics, sample grids, config |
| `backup/` | the last epoch's checkpoint (weights, optimizers, latent sampler) |
| `cache/` | digits classifier and reference statistics (unless `config.cache_dir` is set) |
| `generator/` | G as a SavedModel: `tf.saved_model.load(path).serve(z)` |
| `summary.json` | steps, steps/s, final metrics, metrics per evaluation (`history`), config, paths |

Resume: rerunning with the same workdir and config continues after the last completed
epoch with the same step count, weights, optimizer state and latent stream (the data order
is reshuffled from a seed folded with the epoch). Earlier epochs' files are kept. A rerun may
change `d_lr` and `g_lr` (recorded in `learning_rates.json`); the rest must match. Without an
explicit workdir, the most recent unfinished `runs/<name>-*` with the same config is resumed,
otherwise a new `runs/<name>-<timestamp>` is started.

Several devices or machines: `train(..., strategy=...)` builds the GAN in the strategy's
scope; `config.batch_size` is the global batch; under several workers only the chief writes
the workdir and evaluates (`distribution`).

Metrics per dataset (see `datasets`): digits, FID, KID (and classifier score) under
`features.DigitsClassifier`; CIFAR-10, FID and IS under TF-GAN's Inception when
`config.inception_path` is set; 2-D mixtures, modes covered and the fraction of
high-quality samples (`metrics.mode_coverage`).

Divergence: when a player's loss or gradients become non-finite, training stops at that
batch (`divergence.DivergenceMonitor`) with `divergence.TrainingDivergedError`; the diverged
epoch writes nothing, so `backup/` keeps the last good checkpoint to resume from.
"""

import dataclasses
import json
import os
import time

import keras
import numpy as np
import tensorflow as tf

from tf_fusedprop import networks as fp_networks
from tf_fusedprop import precision as fp_precision
from tf_fusedprop.experiment import callbacks, datasets, distribution, divergence, files, summaries
from tf_fusedprop.experiment import workdir as fp_workdir
from tf_fusedprop.experiment.config import ConfigError, json_values, schedule, validate
from tf_fusedprop.gan import FusedPropGAN

__all__ = ["build_gan", "train"]


def train(config, workdir=None, runs_root="runs", verbose=1, strategy=None):
    """Trains a GAN as `config` says, in `workdir`; resumes the run found there.

    Under a multi-worker `strategy` every worker calls this with the same `workdir`; only the
    chief writes it and evaluates, the others write to temporary directories (`distribution`).

    Args:
      config: an `ml_collections.ConfigDict` as built by `configs/*.py` (see `config.validate`).
      workdir: the run directory; None for `workdir.default_workdir(config, runs_root)`.
      runs_root: the parent of default workdirs.
      verbose: `fit`'s verbosity (1: progress bar).
      strategy: the `tf.distribute.Strategy` to train under (`distribution.make_strategy`);
        None for the current one (the default strategy outside any scope).

    Returns:
      The summary (also written to `workdir/summary.json`): `steps` (G updates in total),
      `d_steps`, `epochs`, `learning_rate_changes` (`workdir.learning_rate_changes`),
      `steps_per_second` and `train_seconds` (this process's epochs, tracing included; None
      and 0 when nothing was left to train), `wall_seconds` (this process),
      `resumed_from_epoch`, `precision` (`{"policy", "reason"}`), `metrics` (the last
      evaluation), `final_metric` (`{"name", "value"}`), `history` (this process's
      evaluations: `epoch`, `step`, `train_seconds` so far, `metrics`, `finite`; see
      `callbacks.Evaluation`), paths `workdir`, `samples`, `generator`, `config`, and
      `strategy`, `replicas`, `workers` (`distribution.facts`).

    Raises:
      ConfigError: invalid config, unwritable workdir, a workdir holding another run, a batch
        or model that does not fit the strategy (`distribution.check_run`).
      tf_fusedprop.experiment.data.DatasetUnavailableError: CIFAR-10 is neither prepared nor
        downloadable.
      tf_fusedprop.experiment.features.InceptionModuleUnavailableError: bad `config.inception_path`.
      tf_fusedprop.experiment.divergence.TrainingDivergedError: a loss or gradient became
        non-finite; the last good checkpoint is kept.
    """
    start = time.perf_counter()
    strategy = strategy or tf.distribute.get_strategy()
    validate(config)
    distribution.check_run(config, workdir, strategy)
    spec = datasets.get(config.dataset)
    workdir = os.fspath(workdir) if workdir is not None else fp_workdir.default_workdir(config, runs_root)
    summary = fp_workdir.completed_run(workdir, config)
    if summary is not None:
        _print(f"Run already complete: {os.path.join(workdir, 'summary.json')}")
        return summary
    with distribution.output_dir(workdir, strategy) as out:
        return _train(config, spec, workdir, out, strategy, verbose, start)


def _train(config, spec, workdir, out, strategy, verbose, start):
    """`train` once the run is known: restores from `workdir`, writes to `out` (`workdir` on the chief)."""
    run = _Run.prepare(config, spec, workdir, out)
    gan, precision, initial_epoch = _build(config, strategy, run.checkpoint)
    hooks = _Callbacks.create(config, spec, out, run.evaluator, run.output_checkpoint, initial_epoch)
    _announce(config, strategy, precision, run, gan, initial_epoch)
    _fit(config, gan, run, hooks, initial_epoch, verbose)
    return _finish(
        config, gan, out, run.evaluator, hooks, initial_epoch, start, precision, distribution.facts(strategy)
    )


@dataclasses.dataclass
class _Run:
    """What a run needs before its model exists; what bad input breaks (data, Inception module,
    workdir) fails here, before anything is written.

    Attributes:
      workdir, out: the run's directory and where this process writes (`workdir` on the chief).
      checkpoint: the workdir's checkpoints (restored from); `output_checkpoint` is where this
        process saves (the chief: the same; other workers: under `out`).
      dataset: the training pipeline, sharded over the strategy's workers.
      evaluator: the dataset's evaluator (on the chief, when `eval_samples`), or None.
      rates_changed: the learning-rate change a rerun made (`workdir.record_learning_rates`).
    """

    workdir: str
    out: str
    checkpoint: callbacks.BackupAndRestore
    output_checkpoint: callbacks.BackupAndRestore
    dataset: object
    evaluator: object
    rates_changed: object

    @property
    def chief(self):
        return self.out == self.workdir

    @classmethod
    def prepare(cls, config, spec, workdir, out):
        checkpoint = callbacks.BackupAndRestore(os.path.join(workdir, "backup"))
        chief = out == workdir
        make_evaluator = spec.evaluator(config) if config.eval_samples and chief else None
        dataset = distribution.shard_by_data(spec.pipeline(config, _data_seed(config, checkpoint.metadata())))
        fp_workdir.make_workdir(out, config)
        rates_changed = fp_workdir.record_learning_rates(workdir, config, checkpoint.metadata()) if chief else None
        evaluator = (
            make_evaluator(config.cache_dir or os.path.join(workdir, "cache"), _print) if make_evaluator else None
        )
        # Other workers run the chief's callbacks (the same variable reads), writing under `out`.
        output_checkpoint = checkpoint if chief else callbacks.BackupAndRestore(os.path.join(out, "backup"))
        return cls(workdir, out, checkpoint, output_checkpoint, dataset, evaluator, rates_changed)


def _build(config, strategy, checkpoint):
    """`(gan, precision, initial_epoch)`: the GAN built in the strategy's scope and restored."""
    precision = fp_precision.choose(config.mixed_precision)
    keras.utils.set_random_seed(config.seed)
    with strategy.scope():
        gan = distribution.fit_under(build_gan(config, precision), strategy, log=_print)
    initial_epoch = checkpoint.restore(gan)
    # The checkpoint holds the optimizers' learning rates too; the config's are used.
    gan.d_optimizer.learning_rate, gan.g_optimizer.learning_rate = config.d_lr, config.g_lr
    return gan, precision, initial_epoch


def _announce(config, strategy, precision, run, gan, initial_epoch):
    """Prints what is about to be trained, where, how, and from which epoch."""
    epochs, steps_per_epoch = schedule(config)
    _print(distribution.describe(strategy))
    _print(f"precision: {precision.policy} ({precision.reason})")
    if not run.chief:
        _print(f"Not the chief: this worker writes to {run.out} (deleted at the end); the chief writes {run.workdir}.")
    _print(
        f"{config.name}: {config.dataset}, network {config.network}, loss {config.loss}, form {config.form}, "
        f"{config.steps} steps ({epochs} epochs of {steps_per_epoch}), batch {config.batch_size}; workdir {run.workdir}"
    )
    if initial_epoch:
        _print(f"Resuming from epoch {initial_epoch}/{epochs} ({int(gan.g_optimizer.iterations.numpy())} steps done).")
    if run.rates_changed:
        _print(fp_workdir.describe_learning_rate_change(run.workdir, run.rates_changed))


def _fit(config, gan, run, hooks, initial_epoch, verbose):
    """`gan.fit` over the config's epochs; a divergence stops it (`divergence.TrainingDivergedError`)."""
    epochs, steps_per_epoch = schedule(config)
    try:
        gan.fit(
            run.dataset,
            epochs=epochs,
            steps_per_epoch=steps_per_epoch,
            initial_epoch=initial_epoch,
            callbacks=[divergence.DivergenceMonitor(run.output_checkpoint, run.out)] + hooks.all,
            verbose=verbose,
            shuffle=False,
        )
    except divergence.TrainingDivergedError:
        hooks.writer.close()
        raise


def build_gan(config, precision=None):
    """The compiled `FusedPropGAN` of a valid config (weights as the global seed makes them).

    Args:
      config: a valid config.
      precision: a `precision.Precision`; None chooses from `config.mixed_precision`. Under
        `mixed_float16` both optimizers are wrapped in one-scale `LossScaleOptimizer`s.

    Raises:
      ConfigError: a network builder refused the config's arguments.
    """
    precision = precision or fp_precision.choose(config.mixed_precision)
    g_fn, d_fn = fp_networks.get(config.network)
    g_data, d_data = datasets.network_inputs(config)
    conditional = {} if config.num_classes is None else {"num_classes": config.num_classes}
    dtype = precision.layer_dtype
    try:
        generator = g_fn(
            latent_dim=config.latent_dim, dtype=dtype, **g_data, **conditional, **config.generator.to_dict()
        )
        discriminator = d_fn(dtype=dtype, **d_data, **conditional, **config.discriminator.to_dict())
        gan = FusedPropGAN(
            generator,
            discriminator,
            loss=config.loss,
            form=config.form,
            n_dis=config.n_dis,
            iter_size=config.iter_size,
            seed=config.seed,
            num_classes=config.num_classes,
            ema_decay=config.ema_decay,
            ema_start=config.ema_start,
            augment=config.augment or None,
            r1_gamma=config.r1_gamma,
            gp_weight=config.gp_weight,
            reg_every=config.reg_every,
        )
    except ValueError as err:
        raise ConfigError(f"cannot build network {config.network!r}: {' '.join(str(err).split())}") from None

    def adam(learning_rate):
        optimizer = keras.optimizers.Adam(learning_rate, beta_1=config.beta1, beta_2=config.beta2)
        return keras.optimizers.LossScaleOptimizer(optimizer) if precision.loss_scaling else optimizer

    gan.compile(
        d_optimizer=adam(config.d_lr),
        g_optimizer=adam(config.g_lr),
        jit_compile=config.jit_compile,
        steps_per_execution=config.steps_per_execution,
    )
    return gan


def _print(*args):
    print(*args, flush=True)


def _data_seed(config, checkpoint):
    """The pipeline's seed: a resumed run reshuffles from a seed folded with its epoch."""
    epoch = checkpoint["epoch"] if checkpoint else 0
    return int(np.random.SeedSequence([config.seed, epoch]).generate_state(1)[0]) if epoch else config.seed


@dataclasses.dataclass
class _Callbacks:
    """A run's callbacks (`all`, in `fit`'s order), the ones its summary reads, and their writer."""

    writer: object
    throughput: callbacks.Throughput
    evaluation: callbacks.Evaluation
    grid: callbacks.SampleGrid
    all: list

    @classmethod
    def create(cls, config, spec, workdir, evaluator, checkpoint, initial_epoch):
        step = initial_epoch * schedule(config)[1]
        writer = tf.summary.create_file_writer(os.path.join(workdir, "logs"))
        with writer.as_default():
            summaries.summary_text("config", f"```\n{json.dumps(json_values(config), indent=2)}\n```", step=step)
        throughput = callbacks.Throughput()
        evaluation = (
            callbacks.Evaluation(evaluator, every=config.eval_every, throughput=throughput) if evaluator else None
        )
        latents, labels = datasets.grid_inputs(config)
        grid = callbacks.SampleGrid(
            latents, os.path.join(workdir, "samples"), render=spec.render(config), writer=writer, labels=labels
        )
        everything = [throughput] + ([evaluation] if evaluation else []) + [grid, callbacks.Scalars(writer), checkpoint]
        return cls(writer, throughput, evaluation, grid, everything)


def _finish(config, gan, workdir, evaluator, run, initial_epoch, start, precision, strategy_facts):
    """Exports G, writes and returns the summary, and prints the final metrics."""
    metrics = {}
    if evaluator is not None:
        metrics = run.evaluation.last if run.evaluation.last is not None else evaluator(gan.sampling_generator)
        metrics = {
            key: float(value) if isinstance(value, (float, np.floating)) else int(value)
            for key, value in metrics.items()
        }
    generator_path = os.path.join(workdir, "generator")
    files.atomic_write(generator_path, gan.export_generator)
    run.writer.close()
    epochs, _ = schedule(config)
    samples = run.grid.last_path or run.grid.path(epochs - 1)
    summary = {
        "name": config.name,
        "steps": int(gan.g_optimizer.iterations.numpy()),
        "d_steps": int(gan.d_optimizer.iterations.numpy()),
        "epochs": epochs,
        "learning_rate_changes": fp_workdir.learning_rate_changes(workdir),
        "steps_per_second": run.throughput.steps_per_second,
        "train_seconds": run.throughput.seconds,
        "wall_seconds": time.perf_counter() - start,
        "resumed_from_epoch": initial_epoch,
        "precision": {"policy": precision.policy, "reason": precision.reason},
        "metrics": metrics,
        "final_metric": {"name": evaluator.primary, "value": metrics.get(evaluator.primary)} if evaluator else None,
        "history": run.evaluation.history if run.evaluation else [],
        "workdir": workdir,
        "samples": samples if os.path.exists(samples) else None,
        "generator": generator_path,
        "config": json_values(config),
        **strategy_facts,
    }
    summary_path = os.path.join(workdir, "summary.json")
    files.write_json(summary_path, summary)
    if evaluator is not None:
        _print(evaluator.describe(metrics))
    rate = f", {run.throughput.steps_per_second:.1f} steps/s" if run.throughput.steps_per_second else ""
    _print(f"Done: {summary['steps']} steps{rate} in {summary['wall_seconds']:.0f} s; summary {summary_path}")
    return summary
