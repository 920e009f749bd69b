"""Seconds per training step of every form, measured side by side in one process.

    python benchmarks/speed.py [--network=sngan_cnn] [--batch_size=64] [--rounds=5]
                               [--steps_per_round=3] [--mixed_precision] [--jit_compile]
                               [--profile_dir=DIR]

SNGAN CNN for CIFAR-10 shapes (FusedProp paper, Table 2), random data. Every form is traced and
warmed up, then the forms are timed in interleaved rounds (so that machine noise hits them all
alike); the table gives the median seconds per step and the speed-up of each form against

* `alternating`: our efficient conventional step (the G step forms D's input gradients only);
* `alternating_paper`: the paper-style conventional step whose G step also forms D's parameter
  gradients and discards them (what the paper's 1.5x is measured against).

A last line prints the same numbers as JSON. `--profile_dir` writes a TF profiler trace of a
few fused steps (open it with TensorBoard's profile plugin).
"""

import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow enables oneDNN by default only on CPUs with AVX512-VNNI/BF16/AMX; on others (e.g.
# AVX2-only EPYC) turning it on measured 1.4-2.5x faster here. Set TF_ENABLE_ONEDNN_OPTS=0 to compare.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import app, flags  # noqa: E402

import tf_fusedprop as fp  # noqa: E402
from tf_fusedprop import networks  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("network", "sngan_cnn", "Reference network pair (tf_fusedprop.networks.names()).")
flags.DEFINE_integer("batch_size", 64, "Real and generated samples per step (each).")
flags.DEFINE_integer("rounds", 5, "Interleaved timing rounds; the median over rounds is reported.")
flags.DEFINE_integer("steps_per_round", 3, "Steps per form per round.")
flags.DEFINE_integer("warmup_steps", 2, "Untimed steps per form after tracing.")
flags.DEFINE_list("forms", "alternating,alternating_paper,fused,inverse,adaptive", "Forms to time.")
flags.DEFINE_bool("mixed_precision", False, "Use the mixed_bfloat16 policy.")
flags.DEFINE_bool("jit_compile", False, "Compile the step with XLA.")
flags.DEFINE_string("profile_dir", None, "Write a TF profiler trace of fused steps here.")


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
        self._unused_d_grads = [tf.Variable(tf.zeros_like(v), trainable=False) for v in self.discriminator.trainable_variables]

    def train_step(self, real):
        n = tf.shape(real)[0]
        d = fp.steps.discriminator_step(self.generator, self.discriminator, real, self.sample_latents(n), self.gan_loss)
        self.d_optimizer.apply_gradients(zip(d.d_grads, self.discriminator.trainable_variables))
        g = fp.steps.generator_step(self.generator, self.discriminator, self.sample_latents(n), self.gan_loss,
                                    discriminator_gradients=True)
        for buffer, grad in zip(self._unused_d_grads, g.d_grads):
            buffer.assign(grad)
        self.g_optimizer.apply_gradients(zip(g.g_grads, self.generator.trainable_variables))
        return {"d_loss": d.d_loss, "g_loss": g.g_loss}


def build_step(form, real):
    make_g, make_d = networks.get(FLAGS.network)
    dtype = "mixed_bfloat16" if FLAGS.mixed_precision else None
    keras.utils.set_random_seed(0)
    if form == "alternating_paper":
        gan = PaperStyleAlternatingGAN(make_g(dtype=dtype), make_d(dtype=dtype), loss="nonsaturating", seed=0)
    else:
        gan = fp.FusedPropGAN(make_g(dtype=dtype), make_d(dtype=dtype), loss="nonsaturating", form=form, seed=0)
    gan.compile(
        d_optimizer=keras.optimizers.Adam(2e-4, beta_1=0.5, beta_2=0.999),
        g_optimizer=keras.optimizers.Adam(2e-4, beta_1=0.5, beta_2=0.999),
    )
    step = tf.function(gan.train_step, jit_compile=FLAGS.jit_compile)

    def run(n):
        for _ in range(n):
            logs = step(real)
        float(logs["d_loss"])  # wait for the device

    return run


def main(argv):
    del argv
    make_g, _ = networks.get(FLAGS.network)
    shape = make_g().output_shape[1:]
    real = tf.constant(np.random.default_rng(0).uniform(-1, 1, (FLAGS.batch_size,) + shape).astype("float32"))
    print(f"network={FLAGS.network} batch={FLAGS.batch_size} mixed_precision={FLAGS.mixed_precision} "
          f"jit_compile={FLAGS.jit_compile} onednn={os.environ['TF_ENABLE_ONEDNN_OPTS']} tf={tf.__version__} "
          f"keras={keras.__version__} cpus={os.cpu_count()}")
    runs = {}
    for form in FLAGS.forms:
        start = time.perf_counter()
        runs[form] = build_step(form, real)
        runs[form](1 + FLAGS.warmup_steps)
        print(f"  traced and warmed up {form:<18} in {time.perf_counter() - start:6.1f} s", flush=True)

    times = {form: [] for form in runs}
    for r in range(FLAGS.rounds):
        for form, run in runs.items():
            start = time.perf_counter()
            run(FLAGS.steps_per_round)
            times[form].append((time.perf_counter() - start) / FLAGS.steps_per_round)
        print(f"  round {r + 1}/{FLAGS.rounds}: " + ", ".join(f"{f} {t[-1]:.3f}" for f, t in times.items()), flush=True)

    median = {form: statistics.median(t) for form, t in times.items()}
    best = {form: min(t) for form, t in times.items()}
    baselines = [b for b in ("alternating", "alternating_paper") if b in median]
    print()
    print("median over rounds (best round in brackets; on a busy machine trust the best)")
    print(f"{'form':<18} {'s/step':>15} " + " ".join(f"{'vs ' + b:>24}" for b in baselines))
    for form, seconds in median.items():
        print(f"{form:<18} {seconds:6.3f} ({best[form]:6.3f}) " + " ".join(
            f"{median[b] / seconds:13.2f}x ({best[b] / best[form]:.2f}x)" for b in baselines))
    print(json.dumps({
        "network": FLAGS.network, "batch_size": FLAGS.batch_size, "mixed_precision": FLAGS.mixed_precision,
        "jit_compile": FLAGS.jit_compile, "onednn": os.environ["TF_ENABLE_ONEDNN_OPTS"],
        "seconds_per_step": median, "best_seconds_per_step": best,
        "speedup": {b: {f: median[b] / s for f, s in median.items()} for b in baselines},
        "best_speedup": {b: {f: best[b] / s for f, s in best.items()} for b in baselines},
    }))

    if FLAGS.profile_dir:
        tf.profiler.experimental.start(FLAGS.profile_dir)
        runs["fused" if "fused" in runs else next(iter(runs))](3)
        tf.profiler.experimental.stop()
        print(f"profiler trace written to {FLAGS.profile_dir}")


if __name__ == "__main__":
    app.run(main)
