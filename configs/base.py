"""Fields shared by every experiment config; `tf_fusedprop.experiment.config.validate` checks them."""

from ml_collections import config_dict

#: Every form's name (`tf_fusedprop.forms.FORMS`, which owns them; written out so that reading a
#: config loads no TensorFlow; tests/forms_test.py checks them), for the config variants.
ALL_FORMS = ("fused", "inverse", "adaptive", "simultaneous", "alternating")


def get_base_config():
    """The common fields with neutral defaults; experiment configs override what they need.

    | field | meaning |
    |---|---|
    | name | run name; the default workdir is `runs/<name>-<timestamp>` |
    | dataset | `tf_fusedprop.experiment.datasets` name: digits, mnist5k, mnist1k, cifar10, images, ring8, grid25 |
    | network | `tf_fusedprop.networks` name: digits, sngan_cnn, sngan_resnet, mlp |
    | generator, discriminator | extra keyword arguments of the network builders (widths...) |
    | latent_dim | size of z |
    | loss, form | a loss of `tf_fusedprop.losses` and a training form (`tf_fusedprop.forms.FORMS`) |
    | warmup | G updates of `alternating` (with `n_dis`) before `form` (`tf_fusedprop.schedules.Warmup`); 0: none |
    | warmup_g_lr_scale | after the warm start, G's learning rate is g_lr x this (1: unchanged) |
    | alternate_every | after the warm start, one `alternating` update every k G updates (`tf_fusedprop.schedules.Periodic`; a call of the train function runs whole periods); 0: none |
    | auto.threshold, .every, .window, .hold, .peak, .peak_windows, .signal, .drop | `tf_fusedprop.schedules.Auto`: threshold 0 (off), or the mean stray (over `window` probes, `every` G updates apart) below which the next `hold` G updates alternate, until `peak_windows` windows in a row (1) have reached `peak` (None: always); `signal` "stray" (the probe), "logit_gap" (D's mean real logit minus fake, no probe: alternates where the mean is above `threshold`) "spread" (G's spread across a batch against the data's, no probe: alternates where the mean is below `threshold`) or "coverage" (G's coverage of the real batch, the same way); `drop` (None: off) also alternates where a window's mean falls by more than that share from the best window since the last stretch |
    | n_dis | D updates per G update; with a simultaneous form the first n_dis - 1 are D-only steps |
    | iter_size | micro-batches per update (gradient accumulation) |
    | batch_size | real samples per update (split into iter_size micro-batches) |
    | steps | total G updates |
    | steps_per_epoch | G updates between sample grids, evaluations and checkpoints |
    | checkpoint_minutes | minutes between checkpoints within an epoch (besides every epoch's end and a stop by Ctrl-C or SIGTERM); 0: none; a rerun may change it |
    | d_lr, g_lr, beta1, beta2 | Adam of D and G |
    | seed | seed of weights, latents and data order |
    | eval_samples | generated samples per evaluation (0: no evaluation) |
    | eval_every | epochs between evaluations (the last epoch is always evaluated) |
    | grid_samples | samples in each grid image (points of the scatter plot for 2-D data) |
    | cache_dir | where classifier, reference statistics (and a downloaded Inception module) go; None: the user's cache, shared by all runs: `$TF_FUSEDPROP_CACHE`, else `~/.cache/tf_fusedprop` (the module: `.../tfhub_modules`) |
    | mixed_precision | "auto" (from the hardware: `tf_fusedprop.precision`), "float32" (or "off"), "mixed_bfloat16", "mixed_float16" |
    | jit_compile | compile the train step with XLA |
    | steps_per_execution | train steps per call of the compiled train function |
    | num_classes | None, or the dataset's classes for a class-conditional GAN |
    | ema.decay, ema.start, ema.rampup | `tf_fusedprop.EMA(decay, start, rampup)`: decay None (off) or e.g. 0.999; G updates before it starts; None, or the fraction of the updates so far that bounds its half-life (e.g. 0.05) |
    | augment | `tf_fusedprop.DiffAugment` policies, e.g. "translation,cutout,color"; "" for none |
    | adaptive_augment.target, .interval, .ramp_images, .held_out | `DiffAugment(augment, p="auto", target, interval, ramp_images, held_out)`: target None (every operation on every sample) or the signal to hold, the probability adapting from 0; G updates between adjustments; real samples over which it can go from 0 to 1; held_out 0 to follow ADA's E[sign(D(real))] (target 0.6), or the number of real images D never trains on, to follow P(D(real) > D(held-out)), D's memory of its data (datasets that have such images: mnist1k) |
    | r1.gamma, r1.every | `tf_fusedprop.R1(gamma, every)`: gamma 0 (off) or its weight; D updates between penalties (lazy) |
    | gp.weight, gp.every | `tf_fusedprop.GradientPenalty(weight, every=every)`: WGAN-GP, weight 0 (off) or e.g. 10 |
    | probe.every | `tf_fusedprop.StrayProbe(every)`: 0 (off), or G updates between measurements of how far a simultaneous update strays from an alternating one (`stray`, `stray_cosine` in the epoch line and TensorBoard); training is unchanged |
    | lookahead.every, lookahead.alpha, lookahead.forms | `tf_fusedprop.Lookahead(every, alpha)`: Lookahead-minmax, every 0 (off) or G updates per jump; the slow weights' step; the forms it applies to (comma-separated names, or the rules `all_forms` and `simultaneous_forms`) |

    The sub-dicts `ema`, `adaptive_augment`, `r1`, `gp`, `lookahead`, `probe` and `auto` are the keyword arguments of the objects they configure
    (`tf_fusedprop.experiment.config.gan_arguments`), which check them.
    """
    config = config_dict.ConfigDict()
    config.name = "base"
    config.dataset = "digits"
    config.network = "digits"
    config.generator = config_dict.ConfigDict()
    config.discriminator = config_dict.ConfigDict()
    config.latent_dim = 128
    config.loss = "nonsaturating"
    config.form = "fused"
    config.n_dis = 1
    config.warmup = 0
    config.alternate_every = 0
    config.warmup_g_lr_scale = 1.0
    config.iter_size = 1
    config.batch_size = 64
    config.steps = 1000
    config.steps_per_epoch = 100
    config.checkpoint_minutes = 10
    config.d_lr = 2e-4
    config.g_lr = 2e-4
    config.beta1 = 0.5
    config.beta2 = 0.999
    config.seed = 0
    config.eval_samples = 1000
    config.eval_every = 1
    config.grid_samples = 100
    config.cache_dir = config_dict.placeholder(str)
    config.mixed_precision = "auto"
    config.jit_compile = False
    config.steps_per_execution = 1
    config.num_classes = config_dict.placeholder(int)
    config.ema = config_dict.ConfigDict(
        {"decay": config_dict.placeholder(float), "start": 0, "rampup": config_dict.placeholder(float)}
    )
    config.augment = ""
    config.adaptive_augment = config_dict.ConfigDict(
        {"target": config_dict.placeholder(float), "interval": 4, "ramp_images": 500_000, "held_out": 0}
    )
    config.r1 = config_dict.ConfigDict({"gamma": 0.0, "every": 1})
    config.gp = config_dict.ConfigDict({"weight": 0.0, "every": 1})
    config.lookahead = config_dict.ConfigDict({"every": 0, "alpha": 0.5, "forms": "all_forms"})
    config.probe = config_dict.ConfigDict({"every": 0})
    config.auto = config_dict.ConfigDict(
        {
            "threshold": 0.0,
            "every": 10,
            "window": 10,
            "hold": 100,
            "peak": config_dict.placeholder(float),
            "peak_windows": 1,
            "signal": "stray",
            "drop": config_dict.placeholder(float),
        }
    )
    return config


def form_variant(variant, allowed, default):
    """The training form named by a config string (`--config=file.py:<form>`).

    Raises:
      ValueError: `variant` is not one of `allowed`.
    """
    if not variant:
        return default
    if variant not in allowed:
        raise ValueError(
            f"unknown config variant {variant!r}; expected one of {', '.join(allowed)} "
            f"(e.g. --config=configs/<file>.py:{allowed[-1]})"
        )
    return variant


def get_cifar10_config(variant, *, name, network, loss, forms, widths, d_lr=2e-4, g_lr=2e-4):
    """A CIFAR-10 experiment of the FusedProp paper's Table 2 (and its code): batch 64, z of
    size 128, 100k G updates, spectrally normalized D, Adam (beta1 0.5, beta2 0.999), n_dis 1,
    evaluation every 5k updates.

    Extra fields: `data_dir` (TFDS data directory: a prepared `cifar10`, else TFDS downloads it
    there; None: TFDS's default), and `inception_path` (TF-GAN's Inception module: "auto", the
    default, fetches https://tfhub.dev/tensorflow/tfgan/eval/inception/1 once into `cache_dir` or
    `~/.cache/tf_fusedprop/tfhub_modules` and, offline, says in one line that FID/IS are off and
    trains on; or its URL or a local copy's directory, which must load; None: no FID/IS) with
    `eval_real_samples` (train images behind the reference statistics).

    Args:
      variant: the config string (`--config=file.py:<form>`): one of `forms`, or "" for the
        first (the AltGD baseline).
      name, network, loss: the run name, a `tf_fusedprop.networks` name and a loss name.
      forms: the training forms this experiment compares, the default first.
      widths: `(generator width, discriminator width)`.
      d_lr, g_lr: Adam learning rates of D and G.
    """
    config = get_base_config()
    config.name = name
    config.dataset = "cifar10"
    config.network = network
    config.generator.width, config.discriminator.width = widths
    config.discriminator.spectral_norm = True
    config.latent_dim = 128
    config.loss = loss
    config.form = form_variant(variant, forms, forms[0])
    config.batch_size = 64
    config.steps = 100_000
    config.steps_per_epoch = 5_000
    config.d_lr = d_lr
    config.g_lr = g_lr
    config.beta1 = 0.5
    config.beta2 = 0.999
    config.eval_samples = 10_000
    config.eval_real_samples = 50_000
    config.grid_samples = 64
    config.data_dir = config_dict.placeholder(str)
    config.inception_path = "auto"
    return config


def get_sngan_images_config(variant, *, name, dataset):
    """SNGAN's CNN at the FusedProp paper's widths on digits or a user's images, every form:
    `configs/mnist.py`, `digits32.py` and `images.py` build on it.

    G 512, D 64 (D spectrally normalized), nonsaturating loss, batch 64, z of 128, Adam 2e-4
    (beta1 0, beta2 0.999) for both players, precision from the hardware, 10 steps per call.
    `variant`: the training form (default fused).
    """
    config = get_base_config()
    config.name = name
    config.dataset = dataset
    config.network = "sngan_cnn"
    config.generator.width = 512
    config.discriminator.width = 64
    config.discriminator.spectral_norm = True
    config.latent_dim = 128
    config.loss = "nonsaturating"
    config.form = form_variant(variant, ALL_FORMS, "fused")
    config.batch_size = 64
    config.beta1 = 0.0
    config.steps_per_execution = 10
    return config


def get_mixture_base_config(dataset):
    """A 2-D Gaussian mixture of Metz et al. 2017 ("Unrolled GANs") with small MLPs.

    G: 3 ReLU layers of 128 units and a linear output (the modes lie outside [-1, 1]); D: 3
    LeakyReLU layers of 128 units, no spectral norm; batch 256, Adam D 2e-3 / G 1e-3 (beta1
    0.5). Evaluation: modes covered and the fraction of high-quality samples (within 3 std of
    a mode) of 2,500 samples.

    Stabilizers, chosen by `benchmarks/quality.py` on ring8 (5 seeds each; docs/quality.md): an
    EMA generator (decay 0.99, a ~100-update horizon) for every form: high-quality samples 88%
    -> 93% (alternating), 83% -> 92% (fused), and the threshold sooner; and Lookahead-minmax
    (every 10 G updates, alpha 0.8) for the simultaneous forms only: without it fused ends
    with 7.4 +- 0.9 of 8 modes (7.6 with the EMA), with it 8.0 +- 0.0 on every seed, while
    alternating, which keeps 8/8 anyway, only gets slower with it. 50 steps per execution (the
    per-step overhead of these small MLPs is Python's and Keras's; measured 1.2x faster).
    """
    config = get_base_config()
    config.name = dataset
    config.dataset = dataset
    config.network = "mlp"
    config.generator = config_dict.ConfigDict(
        {"units": 128, "hidden_layers": 3, "output_activation": config_dict.placeholder(str)}
    )
    config.discriminator = config_dict.ConfigDict({"units": 128, "hidden_layers": 3, "spectral_norm": False})
    config.latent_dim = 16
    config.batch_size = 256
    config.d_lr = 2e-3
    config.g_lr = 1e-3
    config.eval_samples = 2_500
    config.grid_samples = 2_000
    config.steps_per_execution = 50
    config.ema.decay = 0.99
    config.lookahead.every, config.lookahead.alpha = 10, 0.8
    config.lookahead.forms = "simultaneous_forms"
    # Not "auto": bfloat16 keeps 8 bits of mantissa, a step of 1/64 at radius 2 against modes
    # 0.02 wide, and MLPs this small gain no speed from it.
    config.mixed_precision = "float32"
    return config
