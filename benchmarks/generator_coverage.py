"""What a finished digits run's generator covers: its coverage of the data and the digits it draws.

    python benchmarks/generator_coverage.py WORKDIR [WORKDIR ...] [--num=1000] [--batches=40]

For each run of a labelled digit set (the harness's `digits`, `mnist` and `mnist1k` tasks: the
datasets of `real_samples.LABELLED_DIGITS`), loads the generator train.py exported at the end
(`WORKDIR/generator`, a SavedModel, in a process that never built the GAN), draws `num` samples
from fixed latents and prints one line: the update it was exported at, G's coverage of the data
(`tf_fusedprop.steps.coverage`, what `fake_coverage` reads while training) over `batches` random
pairs of a real and a generated batch of the run's batch size (mean +- standard deviation), and
the digits G draws by the run's digits classifier (the one its FID used, from its `cache_dir`):
how many make more than 2% of the samples, and each one's share. The first line of each dataset
is the data against itself: what coverage reads when G draws as the data does.

Why (issue 62): G's spread across a batch reads how widely G draws, not how many modes it draws;
this shows whether the coverage reads what the classifier sees, on runs a user already has.
"""

import argparse
import json
import os
import sys

import machine  # noqa: F401  (first: sets oneDNN and TF's log level, puts the project first on sys.path)

# isort: split
import numpy as np
import tensorflow as tf

from tf_fusedprop import steps
from tf_fusedprop.experiment import evaluators, features, real_samples

#: A digit drawn by more than this share of the samples counts as drawn.
DRAWN = 0.02
#: The purpose of the fixed latents (`evaluators.latents`): none of a run's own.
LATENTS = 7


def mean_coverage(fake, real, batch_size, batches, seed=0):
    """`(mean, std)` of `steps.coverage` over `batches` pairs of a random real batch and a random
    generated batch of `batch_size` rows each (without replacement within a batch)."""
    rng = np.random.default_rng(seed)
    readings = [
        float(
            steps.coverage(
                fake[rng.choice(len(fake), batch_size, replace=False)],
                real[rng.choice(len(real), batch_size, replace=False)],
            )
        )
        for _ in range(batches)
    ]
    return float(np.mean(readings)), float(np.std(readings))


def digit_shares(classes, digits=10):
    """The share of the samples of each digit, from their predicted classes."""
    return np.bincount(np.asarray(classes), minlength=digits) / len(classes)


def line(name, coverage, shares):
    """One printed line: the run, its coverage and the digits it draws."""
    drawn = int(np.sum(shares > DRAWN))
    parts = " ".join(f"{digit}:{share:.2f}" for digit, share in enumerate(shares))
    return f"{name}: coverage {coverage[0]:.3f} +- {coverage[1]:.3f}; {drawn} digits over {DRAWN:.0%} ({parts})"


def _run(workdir):
    """`(config, generator directory)` of a finished run of a labelled digit set; exits in one line otherwise."""
    config_path, exported = os.path.join(workdir, "config.json"), os.path.join(workdir, "generator")
    if not os.path.exists(config_path):
        sys.exit(f"generator_coverage: {workdir} holds no run (no config.json).")
    with open(config_path) as f:
        config = json.load(f)
    if config["dataset"] not in real_samples.LABELLED_DIGITS:
        sys.exit(
            f"generator_coverage: the run in {workdir} trains on {config['dataset']!r}, not a labelled digit set "
            f"({', '.join(sorted(real_samples.LABELLED_DIGITS))})."
        )
    if not os.path.exists(os.path.join(exported, "saved_model.pb")):
        sys.exit(f"generator_coverage: the run in {workdir} exported no generator yet (train.py writes it at the end).")
    return config, exported


def main(argv=None):
    """Prints one line per dataset's data and per run; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdirs", nargs="+", help="run directories of train.py (or of the quality harness)")
    parser.add_argument("--num", type=int, default=1000, help="samples drawn from each generator")
    parser.add_argument("--batches", type=int, default=40, help="batch pairs the coverage is averaged over")
    args = parser.parse_args(argv)
    runs = [(workdir, *_run(workdir)) for workdir in args.workdirs]  # every bad directory before any work
    data, classifiers = {}, {}
    for workdir, config, exported in runs:
        key = (config["dataset"], config["image_size"], config["batch_size"])
        if key not in data:
            images, labels = real_samples.labelled_digits(config["dataset"])
            data[key] = real = images(config["image_size"])
            half = np.random.default_rng(0).permutation(len(real))
            itself = mean_coverage(real[half[: len(real) // 2]], real[half[len(real) // 2 :]], key[2], args.batches)
            print(line(f"{key[0]} against itself, batches of {key[2]}", itself, digit_shares(labels())), flush=True)
        real = data[key]
        where = (config["dataset"], config["image_size"], config["cache_dir"])
        if where not in classifiers:
            classifiers[where] = features.DigitsClassifier.load_or_train(
                config["cache_dir"], image_size=config["image_size"], seed=0, source=config["dataset"]
            )
        classifier = classifiers[where]
        generator = tf.saved_model.load(exported)
        with open(os.path.join(exported, "fusedprop_export.json")) as f:
            info = json.load(f)
        latents = evaluators.latents(config["seed"], LATENTS, args.num, info["latent_dim"])
        fake = np.concatenate(
            [np.asarray(generator.serve(latents[i : i + 500]), np.float32) for i in range(0, args.num, 500)]
        )
        coverage = mean_coverage(fake, real, config["batch_size"], args.batches)
        shares = digit_shares(np.argmax(classifier.logits(fake), axis=1))
        print(
            line(f"{os.path.basename(os.path.normpath(workdir))} at update {info.get('step')}", coverage, shares),
            flush=True,
        )


if __name__ == "__main__":
    main()
