"""A trained run's samples and metrics, from its workdir, without training.

    python train.py --mode=sample --workdir=DIR [--num=1000]   # DIR/samples-1000.npz and .png
    python train.py --mode=evaluate --workdir=DIR [--num=N]    # prints and writes DIR/evaluation.json

Both rebuild the run's GAN from its `config.json` and restore its last checkpoint (`backup/`),
so they work on a finished run and on one that is still training or was interrupted, and use
the sampling generator: the EMA generator when the run has one. Samples come from fixed
latents (the run's seed, a purpose of their own), so the same command gives the same samples.
"""

import os

import numpy as np
from ml_collections import config_dict

from tf_fusedprop.experiment import callbacks, datasets, downloads, evaluators, files, pictures, train_lib
from tf_fusedprop.experiment.config import ConfigError

__all__ = ["SAMPLES", "Restored", "evaluate", "restore", "sample"]

#: The purpose of `sample`'s fixed latents (`evaluators.latents`), distinct from the grid's and the evaluation's.
SAMPLES = 3


class Restored:
    """A run restored from its workdir: `config`, `gan` (its last checkpoint), `checkpoint`
    (the checkpoint's metadata: epoch, steps, weights file) and `data` (its dataset,
    `datasets.OpenedDataset`)."""

    def __init__(self, config, gan, checkpoint, data):
        self.config, self.gan, self.checkpoint, self.data = config, gan, checkpoint, data

    @property
    def weights(self):
        """ "ema" if samples come from the EMA generator, else "trained"."""
        return "trained" if self.gan.ema_generator is None else "ema"


def restore(workdir):
    """The run in `workdir`, rebuilt from `config.json` and restored from its last checkpoint.

    Raises:
      ConfigError: `workdir` holds no run of `train.py`, or no checkpoint yet.
    """
    config_path = os.path.join(workdir, "config.json")
    if not os.path.exists(config_path):
        raise ConfigError(f"{workdir} holds no run (no config.json): pass the --workdir of a run of train.py.")
    config = config_dict.ConfigDict(files.read_json(config_path))
    checkpoint = callbacks.BackupAndRestore(os.path.join(workdir, "backup"))
    if checkpoint.metadata() is None:
        raise ConfigError(f"the run in {workdir} has no checkpoint yet (none is written before its first epoch ends).")
    data = datasets.open_dataset(config)
    gan = train_lib.build_gan(config, network_inputs=data.network_inputs)
    checkpoint.restore(gan)
    return Restored(config, gan, checkpoint.metadata(), data)


def class_label(workdir, config, name):
    """The label of class `name` of the conditional run in `workdir`: a name of its
    `classes.json`, or a label number.

    Raises:
      ConfigError: the run is not conditional, or knows no such class.
    """
    if config.num_classes is None:
        raise ConfigError(f"--class needs a conditional run; the run in {workdir} is not (its num_classes is None).")
    path = os.path.join(workdir, "classes.json")
    names = files.read_json(path) if os.path.exists(path) else [str(i) for i in range(config.num_classes)]
    if name in names:
        return names.index(name)
    raise ConfigError(f"the run in {workdir} has no class {name!r}; its classes: {', '.join(names)}.")


def sample(workdir, num=1000, class_name=None):
    """Writes `num` samples of the run in `workdir` to `samples-<num>.npz` (`samples`, `latents`,
    and `labels` for a conditional GAN) and a grid of (at most 100 of) them to `samples-<num>.png`;
    with `class_name` (a conditional run), all of that class, to `samples-<num>-<class>.npz/.png`.

    Returns:
      `(npz path, png path, restored run)`.

    Raises:
      ConfigError: as `restore` and `class_label`.
    """
    run = restore(workdir)
    config = run.config
    latents = evaluators.latents(config.seed, SAMPLES, num, config.latent_dim)
    labels = None if config.num_classes is None else evaluators.class_labels(num, config.num_classes)
    suffix = ""
    if class_name is not None:
        labels = np.full([num], class_label(workdir, config, class_name), np.int32)
        suffix = "-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in class_name)
    samples = evaluators.generate(run.gan.sampling_generator, latents, labels)
    npz = os.path.join(workdir, f"samples-{num}{suffix}.npz")
    arrays = {"samples": samples, "latents": latents, **({} if labels is None else {"labels": labels})}

    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)

    files.atomic_write(npz, write)
    png = os.path.join(workdir, f"samples-{num}{suffix}.png")
    shown = samples if samples.ndim == 2 else samples[:100]  # a scatter plot shows them all
    pictures.write_png(png, run.data.render(shown))
    return npz, png, run


def evaluate(workdir, num=None):
    """The run's metrics now (its dataset's evaluator, `datasets`) on `num` generated samples,
    also written to `evaluation.json` with the checkpoint and sample count they come from.

    Args:
      workdir: the run's directory.
      num: generated samples to score; None: the run's `eval_samples`, or, for a run trained
        without evaluation (`eval_samples=0`), its dataset's default (`DatasetSpec.eval_samples`).

    Returns:
      `(metrics, line describing them, restored run)`.

    Raises:
      ConfigError: as `restore`, `num` < 2, or the run's dataset has no evaluator here
        (CIFAR-10 without `inception_path`).
    """
    run = restore(workdir)
    config = run.config.copy_and_resolve_references()
    config.eval_samples = num or config.eval_samples or datasets.get(config.dataset).eval_samples
    if config.eval_samples < 2:
        raise ConfigError(f"--num must be at least 2 samples to evaluate; received --num={num}.")
    cache_dir = config.cache_dir or downloads.user_cache_dir()
    evaluator, note = datasets.open_dataset(config, reuse=run.data).evaluation()(cache_dir)
    if evaluator is None:
        raise ConfigError(f"nothing to evaluate the run in {workdir} with: {note}")
    metrics = {key: float(value) for key, value in evaluator(run.gan.sampling_generator).items()}
    facts = {"epoch": run.checkpoint["epoch"], "steps": run.checkpoint["steps"], "weights": run.weights}
    files.write_json(
        os.path.join(workdir, "evaluation.json"), {**facts, "samples": config.eval_samples, "metrics": metrics}
    )
    return metrics, evaluator.describe(metrics), run
