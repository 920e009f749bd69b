"""The training job behind `train.py`, as a testable function: `train(config, workdir)`.

`train` validates the config (`config.validate` raises `ConfigError`, one line, before
anything is built), picks the workdir (`workdir`), prepares what the config's dataset needs
(`datasets.get(config.dataset)`: pipeline, evaluator, renderer), builds a `FusedPropGAN`,
restores the last checkpoint if there is one, fits with the callbacks of `callbacks`,
exports G and writes `summary.json`. The workdir holds:

| path | what |
|---|---|
| `config.json` | the run's config; a rerun must match it |
| `samples/epoch_XXXX.png` | a sample grid (2-D data: a scatter plot) after every epoch |
| `logs/` | TensorBoard events: losses, logits, steps/s, metrics, sample grids, config |
| `backup/` | the last epoch's checkpoint (weights, optimizers, latent sampler) |
| `cache/` | digits classifier and reference statistics (unless `config.cache_dir` is set) |
| `generator/` | G as a SavedModel: `tf.saved_model.load(path).serve(z)` |
| `summary.json` | steps, steps/s, final metrics, config, paths |

Resume: rerunning with the same workdir and config continues after the last completed
epoch with the same step count, weights, optimizer state and latent stream (the data order
is reshuffled from a seed folded with the epoch). Earlier epochs' files are kept. Without an
explicit workdir, the most recent unfinished `runs/<name>-*` with the same config is resumed,
otherwise a new `runs/<name>-<timestamp>` is started.

Several devices or machines: `train(..., strategy=...)` builds the GAN in the strategy's
scope; `config.batch_size` is the global batch; under several workers only the chief writes
the workdir and evaluates (`distribution`).

Metrics per dataset (see `datasets`): digits, FID (and classifier score) under
`features.DigitsClassifier`; CIFAR-10, FID and IS under TF-GAN's Inception when
`config.inception_path` is set; 2-D mixtures, modes covered and the fraction of
high-quality samples (`metrics.mode_coverage`).
"""

import dataclasses
import functools
import json
import os
import time

import keras
import numpy as np
import tensorflow as tf

from tf_fusedprop import networks as fp_networks
from tf_fusedprop.experiment import callbacks
from tf_fusedprop.experiment import datasets
from tf_fusedprop.experiment import distribution
from tf_fusedprop.experiment import evaluators
from tf_fusedprop.experiment import files
from tf_fusedprop.experiment import summaries
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
      `d_steps`, `epochs`, `steps_per_second` and `train_seconds` (this process's epochs,
      tracing included; None and 0 when nothing was left to train), `wall_seconds` (this
      process), `resumed_from_epoch`, `metrics` (the last evaluation), `final_metric`
      (`{"name", "value"}`), paths `workdir`, `samples`, `generator`, `config`, and
      `strategy`, `replicas`, `workers` (`distribution.facts`).

    Raises:
      ConfigError: invalid config, unwritable workdir, a workdir holding another run, a batch
        or model that does not fit the strategy (`distribution.check_run`).
      tf_fusedprop.experiment.data.DatasetUnavailableError: CIFAR-10 is not prepared locally.
      tf_fusedprop.experiment.features.InceptionModuleUnavailableError: bad `config.inception_path`.
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
    # Prepare: what bad input breaks (data, Inception module, workdir) fails before anything is written.
    checkpoint = callbacks.BackupAndRestore(os.path.join(workdir, "backup"))
    make_evaluator = spec.evaluator(config) if config.eval_samples and out == workdir else None
    dataset = distribution.shard_by_data(spec.pipeline(config, _data_seed(config, checkpoint.metadata())))
    fp_workdir.make_workdir(out, config)
    evaluator = make_evaluator(config.cache_dir or os.path.join(workdir, "cache"), _print) if make_evaluator else None

    # Build: the GAN, restored from the last checkpoint, and the callbacks.
    _print(distribution.describe(strategy))
    if out != workdir:
        _print(f"Not the chief: this worker writes to {out} (deleted at the end); the chief writes {workdir}.")
    keras.utils.set_random_seed(config.seed)
    with strategy.scope():
        gan = distribution.fit_under(build_gan(config), strategy, log=_print)
    initial_epoch = checkpoint.restore(gan)
    epochs, steps_per_epoch = schedule(config)
    if out != workdir:  # Other workers run the chief's callbacks (the same variable reads), writing to `out`.
        checkpoint = callbacks.BackupAndRestore(os.path.join(out, "backup"))
    run = _Callbacks.create(config, spec, out, evaluator, checkpoint, initial_epoch * steps_per_epoch)

    # Fit.
    _print(
        f"{config.name}: {config.dataset}, network {config.network}, loss {config.loss}, form {config.form}, "
        f"{config.steps} steps ({epochs} epochs of {steps_per_epoch}), batch {config.batch_size}; workdir {workdir}"
    )
    if initial_epoch:
        _print(f"Resuming from epoch {initial_epoch}/{epochs} ({int(gan.g_optimizer.iterations.numpy())} steps done).")
    gan.fit(
        dataset, epochs=epochs, steps_per_epoch=steps_per_epoch, initial_epoch=initial_epoch,
        callbacks=run.all, verbose=verbose, shuffle=False,
    )

    # Finish: the last metrics, G exported, summary.json.
    return _finish(config, gan, out, evaluator, run, initial_epoch, start, distribution.facts(strategy))


def build_gan(config):
    """The compiled `FusedPropGAN` of a valid config (weights as the global seed makes them).

    Raises:
      ConfigError: a network builder refused the config's arguments.
    """
    dtype = None if config.mixed_precision == "off" else config.mixed_precision
    g_fn, d_fn = fp_networks.get(config.network)
    g_data, d_data = datasets.network_inputs(config)
    try:
        generator = g_fn(latent_dim=config.latent_dim, dtype=dtype, **g_data, **config.generator.to_dict())
        discriminator = d_fn(dtype=dtype, **d_data, **config.discriminator.to_dict())
        gan = FusedPropGAN(
            generator, discriminator, loss=config.loss, form=config.form, n_dis=config.n_dis,
            iter_size=config.iter_size, seed=config.seed,
        )
    except ValueError as err:
        raise ConfigError(f"cannot build network {config.network!r}: {' '.join(str(err).split())}") from None
    adam = functools.partial(keras.optimizers.Adam, beta_1=config.beta1, beta_2=config.beta2)
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
    def create(cls, config, spec, workdir, evaluator, checkpoint, step):
        writer = tf.summary.create_file_writer(os.path.join(workdir, "logs"))
        with writer.as_default():
            summaries.summary_text("config", f"```\n{json.dumps(json_values(config), indent=2)}\n```", step=step)
        throughput = callbacks.Throughput()
        evaluation = callbacks.Evaluation(evaluator, every=config.eval_every) if evaluator else None
        grid = callbacks.SampleGrid(
            evaluators.latents(config.seed, evaluators.GRID, config.grid_samples, config.latent_dim),
            os.path.join(workdir, "samples"),
            render=spec.render(config),
            writer=writer,
        )
        everything = [throughput] + ([evaluation] if evaluation else []) + [grid, callbacks.Scalars(writer), checkpoint]
        return cls(writer, throughput, evaluation, grid, everything)


def _finish(config, gan, workdir, evaluator, run, initial_epoch, start, strategy_facts):
    """Exports G, writes and returns the summary, and prints the final metrics."""
    metrics = {}
    if evaluator is not None:
        metrics = run.evaluation.last if run.evaluation.last is not None else evaluator(gan.generator)
        metrics = {key: float(value) if isinstance(value, (float, np.floating)) else int(value) for key, value in metrics.items()}
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
        "steps_per_second": run.throughput.steps_per_second,
        "train_seconds": run.throughput.seconds,
        "wall_seconds": time.perf_counter() - start,
        "resumed_from_epoch": initial_epoch,
        "metrics": metrics,
        "final_metric": {"name": evaluator.primary, "value": metrics.get(evaluator.primary)} if evaluator else None,
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
