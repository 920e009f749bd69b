"""Seconds per training step of every form and lever, measured side by side in one process.

    python benchmarks/speed.py [--network=sngan_cnn] [--batch_size=64] [--rounds=5]
                               [--steps_per_round=3] [--forms=...] [--variants=float32,...]
                               [--profile_dir=DIR]
    python benchmarks/speed.py --config=configs/mnist.py --forms=alternating,fused [--config.key=value]

With `--config` (a `train.py` config file, with `train.py`'s `--config.<key>=<value>` overrides)
each form is the GAN that `train.py` trains with that config (`train_lib.build_gan`: its
networks, widths, precision, features and fused Adam), stepping on one real batch of its data,
`config.steps_per_execution` steps per call; `--network`, `--batch_size` and `--variants` do
not apply. This is the seconds per update that time-to-quality runs are read with
(`benchmarks/quality.py --seconds_per_update`), measured side by side on a quiet machine.

Every (variant, form) pair is built, traced and warmed up, then all are timed in interleaved
rounds (so that machine noise hits them alike); the table gives the median seconds per step
(best round in brackets) and, per variant, the speed-up of each form against

* `alternating`: our efficient conventional step (the G step forms D's input gradients only);
* `alternating_paper`: the paper-style conventional step whose G step also forms D's
  parameter gradients and discards them (what the paper's 1.5x is measured against);

and, per form, the speed-up of each variant against the first variant (a lever's effect).

A variant is a `+`-joined set of levers:

| lever | meaning |
|---|---|
| `float32`, `mixed_bfloat16`, `mixed_float16`, `auto` | the networks' dtype policy (`auto`: `tf_fusedprop.precision.choose`) |
| `xla` | `jit_compile=True` for the step |
| `calls=K` | K training steps per `tf.function` call (as `steps_per_execution=K` in `fit`) |
| `dw=P` | the convolutions' weight-gradient policy `P` (`tf_fusedprop.conv_weight_gradients`: `auto`, the default, or `native`, `forward_conv`, `taps`) |
| `fused_adam` | both players' Adam as `tf_fusedprop.optimizers.Adam` (one fused op per variable; what `train.py` uses) instead of `keras.optimizers.Adam` |
| `keras_leaky_relu` | D built with `keras.layers.LeakyReLU` instead of `tf_fusedprop.layers.LeakyReLU` (whose gradient keeps Grappler's Conv/MatMul+BiasAdd+LeakyRelu fusion) |
| `keras_conv_transpose` | G built with `keras.layers.Conv2DTranspose` instead of `tf_fusedprop.layers.Conv2DTranspose` (TF's own weight-gradient kernel; what a G written with Keras's layers runs) |
| `r1`, `r1_lazy`, `gp`, `augment`, `ema`, `probe` | what a feature costs: R1 (gamma 1) every step or every 16th (`R1(1.0, every=16)`), WGAN-GP (weight 10), DiffAugment (color,translation,cutout), an EMA generator (0.999), the stray probe on every update (`StrayProbe(every=1)`; simultaneous forms only: every k-th update costs 1/k of the difference, which a median over rounds would not show) |

e.g. `--variants=float32,keras_leaky_relu,mixed_bfloat16,mixed_bfloat16+xla`. The header
gives the CPU, its flags, TensorFlow and oneDNN; a last line prints everything as JSON.
`--profile_dir` writes a TF profiler trace of a few steps of the first (variant, form).
"""

import contextlib
import json
import statistics
import time
from unittest import mock

import keras
import machine  # noqa: F401  (first: sets oneDNN and TF's log level, puts the project first on sys.path)
import numpy as np
import own_flags
import tensorflow as tf
from absl import app, flags
from ml_collections import config_flags

import tf_fusedprop as fp
from tf_fusedprop import conv_weight_gradients, networks, precision
from tf_fusedprop import layers as fp_layers

#: The flags that this module's functions read: the command line's (`define_flags` when run), or
#: those `parsed` from an argv of their own while in its block (`run`: the benchmark from Python).
FLAGS = flags.FLAGS


def define_flags(values=flags.FLAGS, argv=None):
    """The command line's flags, on `values` (defined when run, not when imported: other
    benchmarks define the same names); `argv`: the arguments whose `--config.<key>` overrides
    are parsed (None: `sys.argv`)."""
    flags.DEFINE_string(
        "network", "sngan_cnn", "Reference network pair (tf_fusedprop.networks.names()).", flag_values=values
    )
    flags.DEFINE_integer("batch_size", 64, "Real and generated samples per step (each).", flag_values=values)
    flags.DEFINE_integer(
        "rounds", 5, "Interleaved timing rounds; the median over rounds is reported.", flag_values=values
    )
    flags.DEFINE_integer("steps_per_round", 3, "Steps per (variant, form) per round.", flag_values=values)
    flags.DEFINE_integer("warmup_steps", 2, "Untimed steps per (variant, form) after tracing.", flag_values=values)
    flags.DEFINE_list(
        "forms", "alternating,alternating_paper,fused,inverse,adaptive", "Forms to time.", flag_values=values
    )
    flags.DEFINE_list(
        "variants",
        "float32",
        "Variants to time, each a '+'-joined set of levers (see the docstring).",
        flag_values=values,
    )
    flags.DEFINE_bool("mixed_precision", False, "Shorthand for --variants=mixed_bfloat16.", flag_values=values)
    flags.DEFINE_bool("jit_compile", False, "Shorthand: add +xla to every variant.", flag_values=values)
    flags.DEFINE_string(
        "profile_dir", None, "Write a TF profiler trace of the first (variant, form) here.", flag_values=values
    )
    config_flags.DEFINE_config_file(
        "config",
        None,
        "A train.py config (configs/<name>.py[:variant]): time the GANs train.py builds from it.",
        flag_values=values,
        sys_argv=argv,
    )


@contextlib.contextmanager
def parsed(argv):
    """Flags of their own parsed from `argv` (program name first), read by this module's functions
    (`FLAGS`) while in the block; yields them.

    Raises:
      absl.flags.Error: `argv` does not parse.
    """
    global FLAGS
    values = own_flags.parse(lambda values: define_flags(values, argv), argv)
    previous, FLAGS = FLAGS, values
    try:
        yield values
    finally:
        FLAGS = previous


def run(argv):
    """The benchmark from Python: `argv` (program name first) parsed as the command line's;
    prints what the command line prints."""
    with parsed(argv):
        main([])


PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16", "auto")


class PaperStyleAlternatingGAN(fp.FusedPropGAN):
    """The conventional baseline as the paper's PyTorch code runs it: the G step back-propagates
    into D's parameters as well and writes their gradients to buffers (PyTorch's `.grad`) that
    are never used. Writing them matters: gradients nobody reads are pruned from a TF graph.

    Built from the public steps (`discriminator_step`, `generator_step`); n_dis 1, no
    accumulation.
    """

    def __init__(self, generator, discriminator, form="alternating", **kwargs):
        if form != "alternating":
            raise ValueError(f"PaperStyleAlternatingGAN is form='alternating'. Received: form={form!r}")
        super().__init__(generator, discriminator, form=form, **kwargs)
        self._unused_d_grads = [
            tf.Variable(tf.zeros_like(v), trainable=False) for v in self.discriminator.trainable_variables
        ]

    def train_step(self, real):
        d = fp.steps.discriminator_step(self.generator, self.discriminator, self.sampler.batch(real), self.gan_loss)
        self.d_optimizer.apply_gradients(zip(d.d_grads, self.discriminator.trainable_variables))
        g = fp.steps.generator_step(
            self.generator, self.discriminator, self.sampler.batch(real), self.gan_loss, discriminator_gradients=True
        )
        for buffer, grad in zip(self._unused_d_grads, g.d_grads):
            buffer.assign(grad)
        self.g_optimizer.apply_gradients(zip(g.g_grads, self.generator.trainable_variables))
        return {"d_loss": d.d_loss, "g_loss": g.g_loss}


#: The FusedPropGAN arguments of the feature levers (functions: each GAN gets its own objects).
FEATURES = {
    "r1": lambda: {"regularizers": [fp.R1(1.0)]},
    "r1_lazy": lambda: {"regularizers": [fp.R1(1.0, every=16)]},
    "gp": lambda: {"regularizers": [fp.GradientPenalty(10.0)]},
    "augment": lambda: {"augment": fp.DiffAugment("color,translation,cutout")},
    "ema": lambda: {"ema": fp.EMA(0.999)},
    "probe": lambda: {"probe": fp.StrayProbe(every=1)},
}


def feature_arguments(levers):
    """The FusedPropGAN arguments of the feature `levers` (names of FEATURES): fresh objects,
    the regularizers of all of them together."""
    arguments = {"regularizers": []}
    for lever in levers:
        for key, value in FEATURES[lever]().items():
            arguments[key] = arguments[key] + value if key == "regularizers" else value
    return arguments


def parse_variant(variant):
    """`{"precision", "xla", "calls", "keras_leaky_relu", "keras_conv_transpose", "features", "dw", "fused_adam"}`
    of a `+`-joined variant string."""
    levers = {
        "precision": "float32",
        "xla": False,
        "calls": 1,
        "keras_leaky_relu": False,
        "keras_conv_transpose": False,
        "features": [],
        "dw": "auto",
        "fused_adam": False,
    }
    for lever in filter(None, variant.split("+")):
        if lever in PRECISIONS:
            levers["precision"] = lever
        elif lever in ("xla", "keras_leaky_relu", "keras_conv_transpose", "fused_adam"):
            levers[lever] = True
        elif lever in FEATURES:
            levers["features"].append(lever)
        elif lever.startswith("calls="):
            levers["calls"] = int(lever.split("=", 1)[1])
        elif lever.startswith("dw=") and lever[3:] in conv_weight_gradients.POLICIES:
            levers["dw"] = lever[3:]
        else:
            raise app.UsageError(f"unknown lever {lever!r} in variant {variant!r}; see --helpfull")
    if FLAGS.jit_compile:
        levers["xla"] = True
    return levers


def build_networks(levers, policy):
    """`(generator, discriminator)` of `--network` under `levers` (`parse_variant`'s) and a
    `tf_fusedprop.precision` policy, seeded; the `keras_*` levers build them with Keras's layers
    where the package's would be."""
    make_g, make_d = networks.get(FLAGS.network)
    keras.utils.set_random_seed(0)
    keras_layers = {"LeakyReLU": levers["keras_leaky_relu"], "Conv2DTranspose": levers["keras_conv_transpose"]}
    with contextlib.ExitStack() as stack:
        for name in (name for name, use in keras_layers.items() if use):
            stack.enter_context(mock.patch.object(fp_layers, name, getattr(keras.layers, name)))
        return make_g(dtype=policy.layer_dtype), make_d(dtype=policy.layer_dtype)


def timed_step(form, variant, real):
    """`(run(n), steps per round)`: `run` trains `n` steps of `form` under `variant` and waits for them."""
    levers = parse_variant(variant)
    policy = precision.choose(levers["precision"])
    generator, discriminator = build_networks(levers, policy)
    if form == "alternating_paper":
        gan = PaperStyleAlternatingGAN(generator, discriminator, loss="nonsaturating", seed=0)
    else:
        features = feature_arguments(levers["features"])
        gan = fp.FusedPropGAN(generator, discriminator, loss="nonsaturating", form=form, seed=0, **features)

    def adam():
        adam_class = fp.optimizers.Adam if levers["fused_adam"] else keras.optimizers.Adam
        optimizer = adam_class(2e-4, beta_1=0.5, beta_2=0.999)
        return keras.optimizers.LossScaleOptimizer(optimizer) if policy.loss_scaling else optimizer

    gan.compile(d_optimizer=adam(), g_optimizer=adam())
    return _stepper(gan, real, levers["calls"], levers["xla"])


def _stepper(gan, real, calls, jit_compile):
    """`(run(n), steps per round)`: `run` trains `n` steps of `gan` on `real` in calls of
    `calls` steps (a traced function, XLA with `jit_compile`) and waits for them."""

    @tf.function(jit_compile=jit_compile)
    def steps(real):
        logs = gan.train_step(real)
        for _ in tf.range(calls - 1):
            logs = gan.train_step(real)
        return logs

    def run(n):
        for _ in range(max(1, n // calls)):
            logs = steps(real)
        float(logs["d_loss"])  # wait for the device

    return run, max(1, FLAGS.steps_per_round // calls) * calls


def completed_config(config):
    """`(config, data)`: `--config` validated and completed as train.py completes it (widths
    left None chosen from the image size, `datasets.completed`), and its `OpenedDataset`."""
    from tf_fusedprop.experiment import datasets
    from tf_fusedprop.experiment.config import ConfigError, validate

    try:
        data = validate(config)
    except ConfigError as err:
        raise app.UsageError(f"--config: {err}") from None
    return datasets.completed(config, data), data


def config_gan(form, config, data):
    """`(gan, config)`: the GAN that train.py builds from `config` (`completed_config`'s, with its
    `data`) with `form` alone, and that config. A warm start or periodic mix of the config is left
    out: its seconds per update are its forms' (what `benchmarks/quality.py --seconds_per_update`
    models it from)."""
    from tf_fusedprop.experiment import train_lib
    from tf_fusedprop.experiment.config import ConfigError, validate

    config = config.copy_and_resolve_references()
    config.form, config.warmup, config.alternate_every = form, 0, 0
    try:
        data = validate(config, data)
    except ConfigError as err:
        raise app.UsageError(f"--config with form {form!r}: {err}") from None
    keras.utils.set_random_seed(config.seed)
    return train_lib.build_gan(config, network_inputs=data.network_inputs), config


def build_config_step(form, config, data):
    """`timed_step` for `--config`: `(run(n), steps per round)` of `config_gan(form, ...)` on one
    real batch of its data (a whole number of calls of `config.steps_per_execution` steps)."""
    gan, config = config_gan(form, config, data)
    real = next(iter(data.pipeline(config.seed)))
    return _stepper(gan, real, config.steps_per_execution, config.jit_compile)


def _builders():
    """`(variants, build(form, variant) -> (run, steps per round), description)` of the flags."""
    config = FLAGS.config
    if config is not None:
        if "alternating_paper" in FLAGS.forms:
            raise app.UsageError("--config times the forms train.py trains; alternating_paper is not one of them")
        label = f"config:{config.name}"
        config, data = completed_config(config)
        description = (
            f"config={config.name} (dataset {config.dataset}, network {config.network}, G {config.generator.to_dict()}, "
            f"D {config.discriminator.to_dict()}, batch {config.batch_size}, precision {config.mixed_precision}, "
            f"{config.steps_per_execution} steps per call"
            + (
                ", each form alone: the config's schedule of forms is modelled from them)"
                if config.warmup or config.alternate_every
                else ")"
            )
        )
        return [label], lambda form, variant: build_config_step(form, config, data), description
    variants = ["mixed_bfloat16"] if FLAGS.mixed_precision and FLAGS.variants == ["float32"] else FLAGS.variants
    make_g, _ = networks.get(FLAGS.network)
    shape = make_g().output_shape[1:]
    real = tf.constant(np.random.default_rng(0).uniform(-1, 1, (FLAGS.batch_size,) + shape).astype("float32"))

    def build(form, variant):
        # The policy is read when the step is traced: during the warm-up.
        conv_weight_gradients.set_policy(parse_variant(variant)["dw"])
        return timed_step(form, variant, real)

    return variants, build, f"network={FLAGS.network} batch={FLAGS.batch_size}"


def main(argv):
    del argv
    variants, build, description = _builders()
    print(machine.header())
    print(
        f"{description} rounds={FLAGS.rounds} steps/round={FLAGS.steps_per_round} "
        f"precision auto={precision.choose('auto').policy}"
    )
    runs, steps_per_round = {}, {}
    for variant in variants:
        for form in FLAGS.forms:
            start = time.perf_counter()
            runs[variant, form], steps_per_round[variant, form] = build(form, variant)
            runs[variant, form](1 + FLAGS.warmup_steps)
            conv_weight_gradients.set_policy(None)
            print(
                f"  traced and warmed up {variant:<28} {form:<18} in {time.perf_counter() - start:6.1f} s", flush=True
            )

    times = {key: [] for key in runs}
    for r in range(FLAGS.rounds):
        for key, run in runs.items():
            start = time.perf_counter()
            run(steps_per_round[key])
            times[key].append((time.perf_counter() - start) / steps_per_round[key])
        print(
            f"  round {r + 1}/{FLAGS.rounds}: " + ", ".join(f"{v}/{f} {t[-1]:.4f}" for (v, f), t in times.items()),
            flush=True,
        )

    median = {key: statistics.median(t) for key, t in times.items()}
    best = {key: min(t) for key, t in times.items()}
    baselines = [b for b in ("alternating", "alternating_paper") if b in FLAGS.forms]
    print()
    print("median s/step over rounds (best round in brackets; on a busy machine trust the best)")
    columns = [f"vs {b}" for b in baselines] + ([f"vs {variants[0]}"] if len(variants) > 1 else [])
    print(f"{'variant':<28} {'form':<18} {'s/step':>17} " + " ".join(f"{c:>26}" for c in columns))
    for (variant, form), seconds in median.items():
        cells = [(median[variant, b] / seconds, best[variant, b] / best[variant, form]) for b in baselines]
        if len(variants) > 1:
            cells.append((median[variants[0], form] / seconds, best[variants[0], form] / best[variant, form]))
        print(
            f"{variant:<28} {form:<18} {seconds:8.4f} ({best[variant, form]:.4f}) "
            + " ".join(f"{m:15.2f}x ({b:.2f}x)" for m, b in cells)
        )
    print(
        json.dumps(
            {
                "header": machine.header(),
                "network": FLAGS.network if FLAGS.config is None else FLAGS.config.network,
                "batch_size": FLAGS.batch_size if FLAGS.config is None else FLAGS.config.batch_size,
                "config": None if FLAGS.config is None else FLAGS.config.to_dict(),
                "seconds_per_step": {f"{v}/{f}": s for (v, f), s in median.items()},
                "best_seconds_per_step": {f"{v}/{f}": s for (v, f), s in best.items()},
                "speedup": {
                    f"{v}/{b}": {f: median[v, b] / median[v, f] for (vv, f) in median if vv == v}
                    for v in variants
                    for b in baselines
                },
            }
        )
    )

    if FLAGS.profile_dir:
        tf.profiler.experimental.start(FLAGS.profile_dir)
        next(iter(runs.values()))(3)
        tf.profiler.experimental.stop()
        print(f"profiler trace written to {FLAGS.profile_dir}")


if __name__ == "__main__":
    define_flags()
    app.run(main)
