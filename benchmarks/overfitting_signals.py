"""Which signal says D is memorising its data: candidates logged beside FID, with held-out digits.

    python benchmarks/overfitting_signals.py --out=benchmarks/results/overfitting_signals \\
        [--name=none] [--augment=] [--updates=4000] [--seed=0] [--form=fused] [--dataset=mnist1k] \\
        [--adaptive_target=0.6 --held_out=64 --ramp_images=100000]   # p="auto" (held_out 0: ADA's r_t)

`configs/mnist.py`'s network and optimizers (SNGAN's CNN at 32 px, nonsaturating loss, EMA
0.995) on MNIST-1k (1,000 digits: the first 100 of each class of MNIST-5k) with the other 4,000
digits of MNIST-5k held out, trained by `train_lib.train` as `train.py` trains (pure `--form`, no
periodic mix, `--augment` on D's inputs, FID against all 5,000 digits every 250 updates). After
every evaluation D (training=False) scores 1,000 training digits, 1,000 held-out digits and 1,000
samples of the training G, and one line goes to `OUT/NAME.jsonl` and the terminal:

* `r_t`: E[sign D(train)], StyleGAN2-ADA's training-set heuristic (what `p="auto"` follows);
* `r_v`: (E D(train) - E D(held)) / (E D(train) - E D(fake)), ADA's validation heuristic;
* `auc_train_held`: P(D(train) > D(held)), 0.5 when D tells seen digits from unseen ones no
  better than chance: memorisation itself;
* `auc_real_fake`: P(D(train) > D(fake)), how well D tells G's samples apart;
* the means of D's logits on each set, the epoch's `d_loss`, and `fid`, `kid`.

The question (issue 61): which of them turns when FID turns up (D memorising), early enough for a
controller, and which stays put where augmentation holds memorisation back.

    python benchmarks/overfitting_signals.py --out=DIR --report_only

draws every run's lines of `DIR/*.jsonl` into `DIR/signals.png` (FID, and the signals, against G
updates) and writes their table to `DIR/signals.md`.
"""

import argparse
import glob
import json
import os

import machine  # noqa: F401  (first: sets oneDNN and TF's log level, puts the project first on sys.path)

# isort: split
import keras
import numpy as np

from configs import mnist
from tf_fusedprop.experiment import real_samples, train_lib

#: Images of each set D scores at every evaluation.
SCORED = 1000


def _auc(higher, lower):
    """P(a draw of `higher` > a draw of `lower`), ties counted half (the Mann-Whitney statistic)."""
    difference = np.asarray(higher)[:, None] - np.asarray(lower)[None, :]
    return float(np.mean(difference > 0) + 0.5 * np.mean(difference == 0))


def signals(train_logits, held_logits, fake_logits):
    """The candidate signals (module docstring) from D's logits on the three sets."""
    mean_train, mean_held, mean_fake = (float(np.mean(x)) for x in (train_logits, held_logits, fake_logits))
    return {
        "r_t": float(np.mean(np.sign(train_logits))),
        "r_v": (mean_train - mean_held) / (mean_train - mean_fake) if mean_train != mean_fake else float("nan"),
        "auc_train_held": _auc(train_logits, held_logits),
        "auc_real_fake": _auc(train_logits, fake_logits),
        "logit_train": mean_train,
        "logit_held": mean_held,
        "logit_fake": mean_fake,
    }


class SignalLog(keras.callbacks.Callback):
    """After each evaluation (an epoch whose logs hold `fid`), D's candidate signals to `path`."""

    def __init__(self, train_images, held_images, latent_dim, path, seed=0):
        super().__init__()
        self.train_images, self.held_images, self.path = train_images, held_images, path
        self.latents = np.random.default_rng(seed).standard_normal((len(train_images), latent_dim)).astype("float32")

    def _logits(self, images):
        return np.concatenate(
            [
                np.asarray(self.model.discriminator(images[i : i + 250], training=False), np.float32).reshape(-1)
                for i in range(0, len(images), 250)
            ]
        )

    def on_epoch_end(self, epoch, logs=None):
        if not logs or "fid" not in logs:
            return
        # G as D meets it in training (BatchNorm on the batch), its moving statistics put back.
        generator = self.model.generator
        kept = [v.numpy() for v in generator.non_trainable_variables]
        fakes = np.concatenate(
            [
                np.asarray(generator(self.latents[i : i + 64], training=True), np.float32)
                for i in range(0, len(self.latents), 64)
            ]
        )
        for variable, value in zip(generator.non_trainable_variables, kept):
            variable.assign(value)
        line = {
            "step": int(self.model.g_optimizer.iterations.numpy()),
            **signals(self._logits(self.train_images), self._logits(self.held_images), self._logits(fakes)),
            **{
                key: float(logs[key])
                for key in ("d_loss", "fid", "kid", "real_sign", "real_above_held_out", "augment_p")
                if key in logs
            },
        }
        with open(self.path, "a") as f:
            f.write(json.dumps(line) + "\n")
        print("signals " + " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in line.items()))


#: The columns of `signals.md`, in order.
COLUMNS = ("step", "fid", "auc_train_held", "r_v", "r_t", "auc_real_fake", "d_loss", "real_above_held_out", "augment_p")


def read_runs(out):
    """`{run name: [line, ...]}` of the `*.jsonl` files in `out`, by name."""
    runs = {}
    for path in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
        with open(path) as f:
            runs[os.path.basename(path)[: -len(".jsonl")]] = [json.loads(line) for line in f if line.strip()]
    return runs


def table(runs):
    """The markdown table of `runs` (`read_runs`): one row per evaluation, `COLUMNS`."""
    rows = []
    for name, lines in runs.items():
        rows.append(f"\n**{name}**\n")
        present = [c for c in COLUMNS if any(c in line for line in lines)]
        rows.append("| " + " | ".join(present) + " |")
        rows.append("|" + "---|" * len(present))
        for line in lines:
            cells = [line.get(c) for c in present]
            rows.append(
                "| "
                + " | ".join("" if v is None else f"{v:.3g}" if isinstance(v, float) else str(v) for v in cells)
                + " |"
            )
    return "\n".join(rows) + "\n"


def by_setting(runs):
    """`{setting: {seed: lines}}` of `runs` (`read_runs`): a run named `NAME_seedN` is seed N of NAME."""
    settings = {}
    for name, lines in runs.items():
        setting, _, seed = name.rpartition("_seed")
        if not setting or not seed.isdigit():
            setting, seed = name, "0"
        settings.setdefault(setting, {})[int(seed)] = lines
    return settings


def _mean_std(values):
    values = [v for v in values if v is not None]
    if not values:
        return ""
    if len(values) == 1:
        return f"{values[0]:.3g}"
    return f"{np.mean(values):.3g} ± {np.std(values, ddof=1):.2g}"


def seed_summary(runs, key="fid"):
    """The markdown table of each setting's `key` over its seeds: per evaluation the mean ± std of
    the seeds that reached it, then each seed's best (at its G update)."""
    settings = by_setting(runs)
    steps = sorted({line["step"] for seeds in settings.values() for lines in seeds.values() for line in lines})
    head = ["setting", "seeds"] + [f"{s:,}" for s in steps] + ["best per seed (update)"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for setting, seeds in settings.items():
        at = {seed: {line["step"]: line.get(key) for line in lines} for seed, lines in seeds.items()}
        cells = [setting, ", ".join(str(seed) for seed in sorted(seeds))]
        cells += [_mean_std([at[seed].get(step) for seed in sorted(seeds)]) for step in steps]
        best = []
        for seed in sorted(seeds):
            reached = {step: value for step, value in at[seed].items() if value is not None}
            if reached:
                step = min(reached, key=reached.get)
                best.append(f"s{seed} {reached[step]:.3g} ({step:,})")
        cells.append("; ".join(best))
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def plot(runs, path):
    """FID (log scale) and the held-out AUC, `r_t` and `p` against G updates: a line per run, a
    colour per setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for index, (setting, seeds) in enumerate(by_setting(runs).items()):
        color = f"C{index}"  # one colour per setting (its seeds alike) in every panel
        for number, (_, lines) in enumerate(sorted(seeds.items())):
            steps, label = [line["step"] for line in lines], setting if number == 0 else None
            axes[0].plot(steps, [line["fid"] for line in lines], marker="o", markersize=3, color=color, label=label)
            axes[1].plot(steps, [line["auc_train_held"] for line in lines], marker="o", markersize=3, color=color)
            axes[2].plot(steps, [line["r_t"] for line in lines], marker="o", markersize=3, color=color, label=label)
            if any("augment_p" in line for line in lines):
                p = [line.get("augment_p", 0.0) for line in lines]
                axes[1].plot(steps, p, linestyle=":", color=color, label=f"{setting}: p" if label else None)
    axes[0].set(yscale="log", title="FID (MNIST-5k classifier)", xlabel="G updates")
    axes[1].set(title="P(D(train) > D(held out)), and p dotted", xlabel="G updates", ylim=(0, 1))
    axes[2].set(title="r_t = E[sign D(train)]", xlabel="G updates", ylim=(-1.05, 1.05))
    axes[1].axhline(0.5, color="gray", linewidth=0.5)
    for axis in axes:
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    axes[1].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def report(out):
    """Writes `out/signals.md` and `out/signals.png` from the runs' lines."""
    runs = read_runs(out)
    with open(os.path.join(out, "signals.md"), "w") as f:
        f.write(f"# Overfitting signals (`benchmarks/overfitting_signals.py`), {len(runs)} runs\n\n")
        f.write("FID per setting over its seeds (mean ± std of the seeds that reached each update):\n\n")
        f.write(seed_summary(runs) + "\nEvery evaluation of every run:\n" + table(runs))
    plot(runs, os.path.join(out, "signals.png"))


def main(argv=None):
    """Trains one run and logs its signals (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--name", default="none")
    parser.add_argument("--augment", default="")
    parser.add_argument("--updates", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--form", default="fused")
    parser.add_argument("--dataset", default="mnist1k", choices=("mnist1k",))
    parser.add_argument("--adaptive_target", type=float, default=None, help="adaptive_augment.target (None: off)")
    parser.add_argument("--held_out", type=int, default=0, help="adaptive_augment.held_out (0: ADA's r_t)")
    parser.add_argument("--ramp_images", type=int, default=500_000, help="adaptive_augment.ramp_images")
    parser.add_argument("--report_only", action="store_true", help="only write signals.md and signals.png")
    args = parser.parse_args(argv)
    if args.report_only:
        report(args.out)
        return
    config = mnist.get_config(args.form)
    config.dataset = args.dataset
    config.augment = args.augment
    config.alternate_every = 0
    config.steps = args.updates
    config.seed = args.seed
    config.adaptive_augment.update(target=args.adaptive_target, held_out=args.held_out, ramp_images=args.ramp_images)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{args.name}_seed{args.seed}.jsonl")
    workdir = os.path.join(args.out, "runs", f"{args.name}_seed{args.seed}")
    if not os.path.exists(workdir) and os.path.exists(path):
        os.remove(path)  # a new run; a resumed one appends its later evaluations
    everything = real_samples.mnist5k_array(config.image_size)
    seen = real_samples.mnist1k_indices()
    held = np.setdiff1d(np.arange(len(everything)), seen)
    rng = np.random.default_rng(0)
    log = SignalLog(
        everything[seen][:SCORED], everything[rng.permutation(held)[:SCORED]], config.latent_dim, path, args.seed
    )
    train_lib.train(
        config,
        workdir=workdir,
        verbose=2,
        overridden=(),
        extra_callbacks=[log],
    )
    report(args.out)


if __name__ == "__main__":
    main()
