"""What a finished run's generator covers: its coverage of the data, and the digits or modes it draws.

    python benchmarks/generator_coverage.py WORKDIR [WORKDIR ...] [--num=1000] [--batches=40]
        [--neighbours=5[,16,...]]

For each run of a labelled digit set (the harness's `digits`, `mnist` and `mnist1k` tasks: the
datasets of `real_samples.LABELLED_DIGITS`) or of a 2-D mixture (`ring8`, `grid25`), loads the
generator train.py exported at the end (`WORKDIR/generator`, a SavedModel, in a process that
never built the GAN), draws `num` samples from fixed latents and prints one line: the update it
was exported at, G's coverage of the data (`tf_fusedprop.steps.coverage`, what `fake_coverage`
reads while training, with its k = 5 nearest neighbours, or each k of `neighbours`) over
`batches` random pairs of a real and a generated batch of the run's batch size (mean +-
standard deviation), and what G draws: for digits, by the run's digits classifier (the one its
FID used, from its `cache_dir`), how many make more than 2% of the samples and each one's share;
for a mixture, the modes covered and the high-quality share (`metrics.mode_coverage`, as the
harness scores them). The first line of each dataset is the data against itself: what coverage
reads when G draws as the data does.

Why (issue 62): G's spread across a batch reads how widely G draws, not how many modes it draws;
this shows whether the coverage reads what the classifier (or the mixture's modes) sees, on runs
a user already has, and at which neighbourhood size.
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
from tf_fusedprop.experiment import evaluators, features, metrics, real_samples

#: The 2-D mixtures it reads (`real_samples.mixture_spec`).
MIXTURES = ("ring8", "grid25")
#: A digit drawn by more than this share of the samples counts as drawn.
DRAWN = 0.02
#: The purpose of the fixed latents (`evaluators.latents`): none of a run's own.
LATENTS = 7


def mean_coverage(fake, real, batch_size, batches, seed=0, k=steps.COVERAGE_NEIGHBOURS):
    """`(mean, std)` of `steps.coverage` (with `k`) over `batches` pairs of a random real batch
    and a random generated batch of `batch_size` rows each (without replacement within a batch)."""
    rng = np.random.default_rng(seed)
    readings = [
        float(
            steps.coverage(
                fake[rng.choice(len(fake), batch_size, replace=False)],
                real[rng.choice(len(real), batch_size, replace=False)],
                k=k,
            )
        )
        for _ in range(batches)
    ]
    return float(np.mean(readings)), float(np.std(readings))


def digit_shares(classes, digits=10):
    """The share of the samples of each digit, from their predicted classes."""
    return np.bincount(np.asarray(classes), minlength=digits) / len(classes)


def digits_drawn(shares):
    """What a set of digit samples draws, from each digit's share: the count over `DRAWN`, each share."""
    parts = " ".join(f"{digit}:{share:.2f}" for digit, share in enumerate(shares))
    return f"{int(np.sum(shares > DRAWN))} digits over {DRAWN:.0%} ({parts})"


def line(name, coverages, drawn):
    """One printed line: the run, its coverage at each k (`{k: (mean, std)}`; k = 5 alone unnamed)
    and what it draws."""
    if list(coverages) == [steps.COVERAGE_NEIGHBOURS]:
        readings = "{:.3f} +- {:.3f}".format(*coverages[steps.COVERAGE_NEIGHBOURS])
    else:
        readings = ", ".join(f"{mean:.3f} +- {std:.3f} (k={k})" for k, (mean, std) in coverages.items())
    return f"{name}: coverage {readings}; {drawn}"


def _digit_data(config):
    """`(real samples, what they draw, what a sample set draws)` for a labelled digit set."""
    images, labels = real_samples.labelled_digits(config["dataset"])
    classifier = features.DigitsClassifier.load_or_train(
        config["cache_dir"], image_size=config["image_size"], seed=0, source=config["dataset"]
    )

    def drawn(fake):
        return digits_drawn(digit_shares(np.argmax(classifier.logits(fake), axis=1)))

    return images(config["image_size"]), digits_drawn(digit_shares(labels())), drawn


def _mixture_data(config, samples=20_000):
    """The same for a 2-D mixture: `samples` draws of its training pipeline (seed 0), its modes as
    the harness scores them."""
    centers, std = real_samples.mixture_spec(config["dataset"])
    real = next(iter(real_samples.gaussian_mixture(centers, std, samples, seed=0))).numpy()

    def drawn(fake):
        scored = metrics.mode_coverage(fake, centers, std)
        return f"{scored['modes_covered']} of {len(centers)} modes, {scored['high_quality_fraction']:.0%} high-quality"

    return real, drawn(real), drawn


def _data(config):
    """`_digit_data` or `_mixture_data`, as the run's dataset is."""
    return (_digit_data if config["dataset"] in real_samples.LABELLED_DIGITS else _mixture_data)(config)


def _run(workdir):
    """`(config, generator directory)` of a finished run of a labelled digit set or a 2-D mixture;
    exits in one line otherwise."""
    config_path, exported = os.path.join(workdir, "config.json"), os.path.join(workdir, "generator")
    if not os.path.exists(config_path):
        sys.exit(f"generator_coverage: {workdir} holds no run (no config.json).")
    with open(config_path) as f:
        config = json.load(f)
    if config["dataset"] not in set(real_samples.LABELLED_DIGITS) | set(MIXTURES):
        sys.exit(
            f"generator_coverage: the run in {workdir} trains on {config['dataset']!r}, not a labelled digit set "
            f"({', '.join(sorted(real_samples.LABELLED_DIGITS))}) or a 2-D mixture ({', '.join(MIXTURES)})."
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
    parser.add_argument(
        "--neighbours",
        default=str(steps.COVERAGE_NEIGHBOURS),
        help="the k of the coverage's k-th nearest real neighbour, or several, comma-separated",
    )
    args = parser.parse_args(argv)
    try:
        neighbours = [int(k) for k in args.neighbours.split(",")]
    except ValueError:
        neighbours = []
    if not neighbours or min(neighbours) < 1:
        sys.exit(
            f"generator_coverage: --neighbours takes positive integers, comma-separated. Received: {args.neighbours!r}"
        )
    runs = [(workdir, *_run(workdir)) for workdir in args.workdirs]  # every bad directory before any work
    data, said = {}, set()  # by dataset and classifier; the data against itself, once a dataset and batch

    def coverages(fake, real, batch_size):
        return {k: mean_coverage(fake, real, batch_size, args.batches, k=k) for k in neighbours}

    for workdir, config, exported in runs:
        dataset = (config["dataset"], config.get("image_size"), config["batch_size"])
        key = dataset + (config.get("cache_dir"),)
        if key not in data:
            data[key] = _data(config)
        real, drawn_by_data, drawn = data[key]
        if dataset not in said:
            said.add(dataset)
            half = np.random.default_rng(0).permutation(len(real))
            itself = coverages(real[half[: len(real) // 2]], real[half[len(real) // 2 :]], dataset[2])
            print(line(f"{dataset[0]} against itself, batches of {dataset[2]}", itself, drawn_by_data), flush=True)
        generator = tf.saved_model.load(exported)
        with open(os.path.join(exported, "fusedprop_export.json")) as f:
            info = json.load(f)
        latents = evaluators.latents(config["seed"], LATENTS, args.num, info["latent_dim"])
        fake = np.concatenate(
            [np.asarray(generator.serve(latents[i : i + 500]), np.float32) for i in range(0, args.num, 500)]
        )
        name = f"{os.path.basename(os.path.normpath(workdir))} at update {info.get('step')}"
        print(line(name, coverages(fake, real, config["batch_size"]), drawn(fake)), flush=True)


if __name__ == "__main__":
    main()
