"""The training job behind `train.py`, as a testable function: `train(config, workdir)`.

`train` validates the config (raising `ConfigError`, one line, before anything is built),
picks the workdir, builds the data pipeline, the evaluator, the networks and a
`FusedPropGAN`, restores the last checkpoint if there is one, fits with the callbacks of
`tf_fusedprop.experiment.callbacks`, exports G and writes `summary.json`. The workdir holds:

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

Metrics per dataset: digits, FID (and classifier score) under `features.DigitsClassifier`;
CIFAR-10, FID and IS under TF-GAN's Inception when `config.inception_path` is set; 2-D
mixtures, modes covered and the fraction of high-quality samples (`metrics.mode_coverage`).
"""

import datetime
import functools
import glob
import hashlib
import inspect
import json
import math
import os
import time

import keras
import numpy as np
import tensorflow as tf

from tf_fusedprop import losses as fp_losses
from tf_fusedprop import networks as fp_networks
from tf_fusedprop import steps as fp_steps
from tf_fusedprop.experiment import callbacks as fp_callbacks
from tf_fusedprop.experiment import data as fp_data
from tf_fusedprop.experiment import features
from tf_fusedprop.experiment import files
from tf_fusedprop.experiment import images
from tf_fusedprop.experiment import metrics as fp_metrics
from tf_fusedprop.experiment import summaries
from tf_fusedprop.gan import FusedPropGAN

__all__ = ["ConfigError", "MIXED_PRECISION", "default_workdir", "train", "validate"]

#: Accepted values of `config.mixed_precision`.
MIXED_PRECISION = ("off", "mixed_bfloat16")

_COMMON_FIELDS = (
    "name", "dataset", "network", "generator", "discriminator", "latent_dim", "loss", "form",
    "n_dis", "iter_size", "batch_size", "steps", "steps_per_epoch", "d_lr", "g_lr", "beta1",
    "beta2", "seed", "eval_samples", "eval_every", "grid_samples", "cache_dir",
    "mixed_precision", "jit_compile", "steps_per_execution",
)
_DATASET_FIELDS = {
    "digits": ("image_size",),
    "cifar10": ("data_dir", "inception_path", "eval_real_samples"),
    "ring8": (),
    "grid25": (),
}
_POSITIVE_INTS = (
    "latent_dim", "n_dis", "iter_size", "batch_size", "steps", "steps_per_epoch", "eval_every",
    "grid_samples", "steps_per_execution",
)
_IMAGE_NETWORKS = ("digits", "sngan_cnn", "sngan_resnet")


class ConfigError(ValueError):
    """An invalid config or workdir; the message is one line saying what was received and
    what to do."""


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _sample_shape(config):
    if config.dataset == "digits":
        return (config.image_size, config.image_size, 1)
    if config.dataset == "cifar10":
        return (32, 32, 3)
    return (2,)


def _shape_kwargs(network, shape):
    """Builder arguments that the data determine: (generator kwargs, discriminator kwargs)."""
    if network == "mlp":
        return {"output_dim": shape[0]}, {"input_dim": shape[0]}
    if network == "digits":
        size = {"image_size": shape[0], "channels": shape[-1]}
        return size, dict(size)
    return {"channels": shape[-1], "bottom": shape[0] // 8}, {"input_shape": tuple(shape)}


def _schedule(config):
    """`(epochs, steps_per_epoch)`; an epoch longer than the run is shortened to the run."""
    steps_per_epoch = min(config.steps_per_epoch, config.steps)
    return config.steps // steps_per_epoch, steps_per_epoch


def _check(condition, message):
    if not condition:
        raise ConfigError(message)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_builder_kwargs(role, builder, given, reserved):
    parameters = set(inspect.signature(builder).parameters)
    for key in sorted(given):
        _check(
            key not in reserved,
            f"config.{role}.{key} is set from the data and config, not by hand; remove it "
            f"(received {role}.{key}={given[key]!r}).",
        )
        _check(
            key in parameters,
            f"config.{role}.{key} is not an argument of {builder.__name__}; valid: "
            f"{', '.join(sorted(parameters - reserved))} (received {role}.{key}={given[key]!r}).",
        )


def validate(config):
    """Checks every field of a training config; see `configs/base.py` for their meaning.

    Raises:
      ConfigError: the first problem found, in one line naming the field, the value received
        and what is accepted.
    """
    missing = [key for key in _COMMON_FIELDS if key not in config]
    _check(not missing, f"the config lacks {', '.join(missing)}; build it on configs/base.py's get_base_config().")
    _check(
        config.dataset in _DATASET_FIELDS,
        f"unknown dataset: received config.dataset={config.dataset!r}; expected one of {', '.join(fp_data.names())}.",
    )
    allowed = set(_COMMON_FIELDS) | set(_DATASET_FIELDS[config.dataset])
    unknown = sorted(set(config.keys()) - allowed)
    _check(not unknown, f"unknown config keys {unknown} for dataset {config.dataset!r}; remove them.")
    missing = [key for key in _DATASET_FIELDS[config.dataset] if key not in config]
    _check(not missing, f"dataset {config.dataset!r} needs config fields {missing}.")
    _check(
        config.network in fp_networks.names(),
        f"unknown network: received config.network={config.network!r}; expected one of {', '.join(fp_networks.names())}.",
    )
    image_data = config.dataset in ("digits", "cifar10")
    _check(
        image_data == (config.network in _IMAGE_NETWORKS),
        f"network {config.network!r} does not fit dataset {config.dataset!r}: use "
        f"{'an image network (' + ', '.join(_IMAGE_NETWORKS) + ')' if image_data else 'network mlp'} "
        f"(received network={config.network!r}, dataset={config.dataset!r}).",
    )
    for key in _POSITIVE_INTS + (("image_size",) if config.dataset == "digits" else ()):
        value = config[key]
        _check(_is_int(value) and value >= 1, f"config.{key} must be a positive integer; received {key}={value!r}.")
    for key in ("eval_samples",) + (("eval_real_samples",) if config.dataset == "cifar10" else ()):
        value = config[key]
        _check(
            _is_int(value) and (value == 0 or value >= 2),
            f"config.{key} must be 0 (off) or an integer >= 2; received {key}={value!r}.",
        )
    _check(_is_int(config.seed) and config.seed >= 0, f"config.seed must be an integer >= 0; received seed={config.seed!r}.")
    for key in ("d_lr", "g_lr"):
        value = config[key]
        _check(
            isinstance(value, (int, float)) and math.isfinite(value) and value > 0,
            f"config.{key} must be a positive number; received {key}={value!r}.",
        )
    for key in ("beta1", "beta2"):
        value = config[key]
        _check(
            isinstance(value, (int, float)) and 0 <= value < 1,
            f"config.{key} must be in [0, 1); received {key}={value!r}.",
        )
    _check(
        config.loss in fp_losses.names(),
        f"unknown loss: received config.loss={config.loss!r}; expected one of {', '.join(fp_losses.names())}.",
    )
    _check(
        config.form in fp_steps.FORMS,
        f"unknown form: received config.form={config.form!r}; expected one of {', '.join(fp_steps.FORMS)}.",
    )
    try:
        fp_steps.check_form(config.loss, config.form)
    except ValueError as err:
        raise ConfigError(
            f"invalid (loss, form) pair: {err} (received loss={config.loss!r}, form={config.form!r})"
        ) from None
    _check(
        config.n_dis == 1 or config.form == "alternating",
        f"config.n_dis applies to form 'alternating' only; received n_dis={config.n_dis}, form={config.form!r}.",
    )
    _check(
        config.batch_size % config.iter_size == 0,
        f"config.batch_size must be divisible by config.iter_size; received batch_size={config.batch_size}, "
        f"iter_size={config.iter_size}.",
    )
    _check(
        config.steps <= config.steps_per_epoch or config.steps % config.steps_per_epoch == 0,
        f"config.steps must be a multiple of config.steps_per_epoch; received steps={config.steps}, "
        f"steps_per_epoch={config.steps_per_epoch} (e.g. --config.steps="
        f"{max(1, round(config.steps / config.steps_per_epoch)) * config.steps_per_epoch}).",
    )
    _, steps_per_epoch = _schedule(config)
    _check(
        steps_per_epoch % config.steps_per_execution == 0,
        f"the epoch length ({steps_per_epoch} steps) must be a multiple of config.steps_per_execution; "
        f"received steps_per_execution={config.steps_per_execution}.",
    )
    _check(
        config.mixed_precision in MIXED_PRECISION,
        f"config.mixed_precision must be one of {', '.join(MIXED_PRECISION)}; "
        f"received mixed_precision={config.mixed_precision!r}.",
    )
    _check(isinstance(config.jit_compile, bool), f"config.jit_compile must be True or False; received {config.jit_compile!r}.")
    if config.dataset == "digits":
        _check(
            config.image_size % 4 == 0,
            f"config.image_size must be a multiple of 4 (the digits networks upsample twice); "
            f"received image_size={config.image_size}.",
        )
    g_fn, d_fn = fp_networks.get(config.network)
    g_shape, d_shape = _shape_kwargs(config.network, _sample_shape(config))
    _check_builder_kwargs("generator", g_fn, config.generator.to_dict(), set(g_shape) | {"latent_dim", "dtype"})
    _check_builder_kwargs("discriminator", d_fn, config.discriminator.to_dict(), set(d_shape) | {"dtype"})


# --------------------------------------------------------------------------------------------
# Workdir
# --------------------------------------------------------------------------------------------


def _config_dict(config):
    return json.loads(json.dumps(config.to_dict()))


def _flatten(value, prefix=""):
    if isinstance(value, dict):
        items = {}
        for key, item in value.items():
            items.update(_flatten(item, f"{prefix}{key}."))
        return items
    return {prefix[:-1]: value}


def _first_difference(old, new):
    old, new = _flatten(old), _flatten(new)
    for key in sorted(set(old) | set(new)):
        if old.get(key, "<absent>") != new.get(key, "<absent>"):
            return key, old.get(key, "<absent>"), new.get(key, "<absent>")
    return None


def default_workdir(config, runs_root="runs"):
    """The workdir used when none is given: the most recent unfinished run of the same
    config under `runs_root` (`<name>-*` with a matching `config.json` and no
    `summary.json`), else a new `runs_root/<name>-<YYYYmmdd-HHMMSS>`."""
    wanted = _config_dict(config)
    for candidate in sorted(glob.glob(os.path.join(runs_root, f"{glob.escape(config.name)}-*")), reverse=True):
        config_path = os.path.join(candidate, "config.json")
        if os.path.exists(os.path.join(candidate, "summary.json")) or not os.path.exists(config_path):
            continue
        try:
            if files.read_json(config_path) == wanted:
                return candidate
        except (OSError, ValueError):
            continue
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = os.path.join(runs_root, f"{config.name}-{stamp}")
    suffix = 1
    while os.path.exists(path):
        suffix += 1
        path = os.path.join(runs_root, f"{config.name}-{stamp}-{suffix}")
    return path


def _check_existing_run(workdir, config):
    """Refuses a workdir that holds a different run; returns its summary if it is complete."""
    config_path = os.path.join(workdir, "config.json")
    if not os.path.exists(config_path):
        return None
    difference = _first_difference(files.read_json(config_path), _config_dict(config))
    if difference:
        key, old, new = difference
        raise ConfigError(
            f"workdir {workdir} holds a run with a different config (config.{key}: {old!r} there, {new!r} now); "
            "rerun with the same config to resume it, or pass a new --workdir."
        )
    summary_path = os.path.join(workdir, "summary.json")
    return files.read_json(summary_path) if os.path.exists(summary_path) else None


def _make_workdir(workdir):
    try:
        os.makedirs(workdir, exist_ok=True)
        probe = os.path.join(workdir, f".write-test-{os.getpid()}")
        with open(probe, "w") as f:
            f.write("ok")
        os.remove(probe)
    except OSError as err:
        raise ConfigError(
            f"cannot write to workdir {workdir!r} ({type(err).__name__}: {err.strerror or err}); "
            "pass a writable directory with --workdir=DIR."
        ) from None


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


def _generate(generator, latents, batch_size=500):
    """G's samples of `latents` (inference mode), as one float32 numpy array."""
    return np.concatenate(
        [
            np.asarray(generator(latents[i : i + batch_size], training=False), dtype=np.float32)
            for i in range(0, len(latents), batch_size)
        ]
    )


def _latents(seed, purpose, n, latent_dim):
    """Fixed latents for one purpose (grid, evaluation) of a run, independent of training."""
    return np.random.default_rng([seed, purpose]).standard_normal((n, latent_dim)).astype(np.float32)


class _ImageEvaluator:
    """FID (and IS, or the classifier score) of generated images under a feature extractor."""

    primary = "fid"

    def __init__(self, extractor, reference, latents, label):
        self.extractor, self.reference, self.latents, self.label = extractor, reference, latents, label

    def __call__(self, generator):
        images = _generate(generator, self.latents)
        mu, sigma = fp_metrics.activation_statistics(self.extractor.features(images))
        logits = self.extractor.logits(images)
        return {
            "fid": fp_metrics.frechet_distance(mu, sigma, *self.reference),
            "inception_score": fp_metrics.inception_score(logits, splits=min(10, len(logits)))[0],
        }

    def describe(self, metrics):
        return (
            f"FID ({self.label}, {len(self.latents)} samples): {metrics['fid']:.2f}, "
            f"inception score: {metrics['inception_score']:.2f}"
        )


class _MixtureEvaluator:
    """Modes covered and high-quality fraction of samples of a 2-D Gaussian mixture."""

    primary = "modes_covered"

    def __init__(self, centers, std, latents):
        self.centers, self.std, self.latents = centers, std, latents

    def __call__(self, generator):
        coverage = fp_metrics.mode_coverage(_generate(generator, self.latents), self.centers, self.std)
        return {"modes_covered": coverage["modes_covered"], "high_quality": coverage["high_quality_fraction"]}

    def describe(self, metrics):
        return (
            f"modes covered: {metrics['modes_covered']}/{len(self.centers)}, "
            f"high-quality samples: {100 * metrics['high_quality']:.0f}%"
        )


def _load_inception(config):
    """TF-GAN's Inception if `config.inception_path` is set (fails fast), else None."""
    if config.dataset != "cifar10" or not config.inception_path or not config.eval_samples:
        return None
    try:
        return features.InceptionFeatures(config.inception_path)
    except features.InceptionModuleUnavailableError as err:
        raise features.InceptionModuleUnavailableError(f"{err} (config.inception_path)") from None


def _cifar10_images(config, n):
    batch_size = min(500, n)
    batches = fp_data.cifar10(batch_size, split="train", data_dir=config.data_dir, seed=config.seed, repeat=False)
    return np.concatenate([b.numpy() for b in batches.take(math.ceil(n / batch_size))])[:n]


def _make_evaluator(config, cache_dir, inception, log):
    """The evaluator of the config's dataset, or None when there is nothing to evaluate."""
    if not config.eval_samples:
        return None
    latents = _latents(config.seed, 2, config.eval_samples, config.latent_dim)
    if config.dataset == "digits":
        classifier = features.DigitsClassifier.load_or_train(cache_dir, image_size=config.image_size, seed=0)
        log(f"Digits classifier: {100 * classifier.test_accuracy:.1f}% held-out accuracy "
            f"({'trained now' if classifier.trained else 'cached'} in {cache_dir}).")
        cache = os.path.join(cache_dir, f"digits_{config.image_size}px_classifier_v{classifier.VERSION}_stats.npz")
        reference = features.reference_statistics(
            classifier, None if os.path.exists(cache) else fp_data.digits_array(config.image_size), cache
        )
        return _ImageEvaluator(classifier, reference, latents, "digits classifier")
    if config.dataset == "cifar10":
        if inception is None:
            log("FID/IS off: no Inception module; pass --config.inception_path=DIR (TF-GAN's Inception, "
                "see tf_fusedprop.experiment.features.InceptionFeatures) to score CIFAR-10.")
            return None
        key = hashlib.sha1(os.path.abspath(inception.path).encode()).hexdigest()[:8]
        cache = os.path.join(cache_dir, f"cifar10_train{config.eval_real_samples}_inception{key}_stats.npz")
        images = None if os.path.exists(cache) else _cifar10_images(config, config.eval_real_samples)
        reference = features.reference_statistics(inception, images, cache, batch_size=100)
        return _ImageEvaluator(inception, reference, latents, "Inception")
    centers, std = fp_data.mixture_spec(config.dataset)
    return _MixtureEvaluator(centers, std, latents)


def _render(config):
    """The sample-grid renderer: an image grid, or a scatter plot for 2-D data."""
    if config.dataset in ("ring8", "grid25"):
        centers, _ = fp_data.mixture_spec(config.dataset)
        extent = float(np.abs(centers).max()) * 1.25 + 0.5
        return functools.partial(images.scatter_plot, extent=extent, centers=centers)
    return images.image_grid


# --------------------------------------------------------------------------------------------
# Model and data
# --------------------------------------------------------------------------------------------


def _build_gan(config):
    dtype = None if config.mixed_precision == "off" else config.mixed_precision
    g_fn, d_fn = fp_networks.get(config.network)
    g_shape, d_shape = _shape_kwargs(config.network, _sample_shape(config))
    try:
        generator = g_fn(latent_dim=config.latent_dim, dtype=dtype, **g_shape, **config.generator.to_dict())
        discriminator = d_fn(dtype=dtype, **d_shape, **config.discriminator.to_dict())
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


def _dataset(config, initial_epoch):
    """The training pipeline; a resumed run reshuffles from a seed folded with its epoch."""
    seed = config.seed
    if initial_epoch:
        seed = int(np.random.SeedSequence([config.seed, initial_epoch]).generate_state(1)[0])
    kwargs = {"seed": seed}
    if config.dataset == "digits":
        kwargs["image_size"] = config.image_size
    elif config.dataset == "cifar10":
        kwargs["data_dir"] = config.data_dir
    return fp_data.get(config.dataset, config.batch_size, **kwargs)


# --------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------


def _print(*args):
    print(*args, flush=True)


def train(config, workdir=None, runs_root="runs", verbose=1):
    """Trains a GAN as `config` says, in `workdir`; resumes the run found there.

    Args:
      config: an `ml_collections.ConfigDict` as built by `configs/*.py` (see `validate`).
      workdir: the run directory; None for `default_workdir(config, runs_root)`.
      runs_root: the parent of default workdirs.
      verbose: `fit`'s verbosity (1: progress bar).

    Returns:
      The summary (also written to `workdir/summary.json`): `steps` (G updates in total),
      `d_steps`, `epochs`, `steps_per_second` and `train_seconds` (this process's epochs,
      tracing included; None and 0 when nothing was left to train), `wall_seconds` (this
      process), `resumed_from_epoch`, `metrics` (the last
      evaluation), `final_metric` (`{"name", "value"}`), paths `workdir`, `samples`,
      `generator`, and `config`.

    Raises:
      ConfigError: invalid config, unwritable workdir, or a workdir holding another run.
      tf_fusedprop.experiment.data.DatasetUnavailableError: CIFAR-10 is not prepared locally.
      tf_fusedprop.experiment.features.InceptionModuleUnavailableError: bad `config.inception_path`.
    """
    start = time.perf_counter()
    validate(config)
    workdir = os.fspath(workdir) if workdir is not None else default_workdir(config, runs_root)
    if os.path.isdir(workdir):
        summary = _check_existing_run(workdir, config)
        if summary is not None:
            _print(f"Run already complete: {os.path.join(workdir, 'summary.json')}")
            return summary
    checkpoint = fp_callbacks.BackupAndRestore(os.path.join(workdir, "backup"))
    metadata = checkpoint.metadata() if os.path.isdir(workdir) else None
    initial_epoch = metadata["epoch"] if metadata else 0
    inception = _load_inception(config)
    dataset = _dataset(config, initial_epoch)
    _make_workdir(workdir)
    config_path = os.path.join(workdir, "config.json")
    if not os.path.exists(config_path):
        files.write_json(config_path, _config_dict(config))
    cache_dir = config.cache_dir or os.path.join(workdir, "cache")
    evaluator = _make_evaluator(config, cache_dir, inception, _print)

    keras.utils.set_random_seed(config.seed)
    gan = _build_gan(config)
    initial_epoch = checkpoint.restore(gan)
    epochs, steps_per_epoch = _schedule(config)
    writer = tf.summary.create_file_writer(os.path.join(workdir, "logs"))
    with writer.as_default():
        summaries.summary_text("config", f"```\n{json.dumps(_config_dict(config), indent=2)}\n```", step=initial_epoch * steps_per_epoch)
    throughput = fp_callbacks.Throughput()
    evaluation = fp_callbacks.Evaluation(evaluator, every=config.eval_every) if evaluator else None
    grid = fp_callbacks.SampleGrid(
        _latents(config.seed, 1, config.grid_samples, config.latent_dim),
        os.path.join(workdir, "samples"),
        render=_render(config),
        writer=writer,
    )
    callbacks = [throughput] + ([evaluation] if evaluation else []) + [grid, fp_callbacks.Scalars(writer), checkpoint]

    _print(
        f"{config.name}: {config.dataset}, network {config.network}, loss {config.loss}, form {config.form}, "
        f"{config.steps} steps ({epochs} epochs of {steps_per_epoch}), batch {config.batch_size}; workdir {workdir}"
    )
    if initial_epoch:
        _print(f"Resuming from epoch {initial_epoch}/{epochs} ({int(gan.g_optimizer.iterations.numpy())} steps done).")
    gan.fit(
        dataset, epochs=epochs, steps_per_epoch=steps_per_epoch, initial_epoch=initial_epoch,
        callbacks=callbacks, verbose=verbose, shuffle=False,
    )

    metrics = {}
    if evaluator is not None:
        metrics = evaluation.last if evaluation.last is not None else evaluator(gan.generator)
        metrics = {key: float(value) if isinstance(value, (float, np.floating)) else int(value) for key, value in metrics.items()}
    generator_path = os.path.join(workdir, "generator")
    files.atomic_write(generator_path, gan.export_generator)
    writer.close()
    samples = grid.last_path or grid.path(epochs - 1)
    summary = {
        "name": config.name,
        "steps": int(gan.g_optimizer.iterations.numpy()),
        "d_steps": int(gan.d_optimizer.iterations.numpy()),
        "epochs": epochs,
        "steps_per_second": throughput.steps_per_second,
        "train_seconds": throughput.seconds,
        "wall_seconds": time.perf_counter() - start,
        "resumed_from_epoch": initial_epoch,
        "metrics": metrics,
        "final_metric": {"name": evaluator.primary, "value": metrics.get(evaluator.primary)} if evaluator else None,
        "workdir": workdir,
        "samples": samples if os.path.exists(samples) else None,
        "generator": generator_path,
        "config": _config_dict(config),
    }
    summary_path = os.path.join(workdir, "summary.json")
    files.write_json(summary_path, summary)
    if evaluator is not None:
        _print(evaluator.describe(metrics))
    rate = f", {throughput.steps_per_second:.1f} steps/s" if throughput.steps_per_second else ""
    _print(f"Done: {summary['steps']} steps{rate} in {summary['wall_seconds']:.0f} s; summary {summary_path}")
    return summary
