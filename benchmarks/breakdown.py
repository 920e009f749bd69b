"""Where a step's time goes: the passes a fused and an alternating step are made of, timed alone.

    python benchmarks/breakdown.py [--network=sngan_cnn] [--batch_size=64] [--repeats=5]

Prints the median seconds of each pass (graph mode), then the sums that model a fused step
(G fwd+bwd, D fwd+bwd to parameters and input on 2n samples, two Adam updates) and an efficient
alternating step, and their ratio; and what the diagnostics every D update logs of G's samples
(`fake_spread`, `fake_coverage`) cost against the fused step.
"""

import statistics
import time

import keras
import machine  # noqa: F401  (first: sets oneDNN and TF's log level, puts the project first on sys.path)
import tensorflow as tf
from absl import app, flags

from tf_fusedprop import networks, steps

FLAGS = flags.FLAGS
flags.DEFINE_string("network", "sngan_cnn", "Reference network pair.")
flags.DEFINE_integer("batch_size", 64, "n: real and generated samples per step (each).")
flags.DEFINE_integer("repeats", 5, "Timed calls per pass; the median is reported.")


def timed(fn):
    fn()
    fn()
    times = []
    for _ in range(FLAGS.repeats):
        start = time.perf_counter()
        tf.nest.map_structure(lambda t: t.numpy(), fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv):
    del argv
    print(machine.header())
    n = FLAGS.batch_size
    make_g, make_d = networks.get(FLAGS.network)
    keras.utils.set_random_seed(0)
    generator, discriminator = make_g(), make_d()
    z = tf.random.normal([n, generator.input_shape[-1]])
    x1 = tf.random.normal([n] + list(generator.output_shape[1:]))
    x2 = tf.concat([x1, x1], 0)
    d_vars, g_vars = discriminator.trainable_variables, generator.trainable_variables

    def d_backward(x, wrt_params, wrt_input):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(discriminator(x, training=True))
        return tape.gradient(y, (d_vars if wrt_params else []) + ([x] if wrt_input else []))

    def g_backward():
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(generator(z, training=True))
        return tape.gradient(y, g_vars)

    optimizer = keras.optimizers.Adam(2e-4)
    optimizer.build(d_vars)
    zeros = [tf.zeros_like(v) for v in d_vars]

    def adam():
        optimizer.apply_gradients(zip(zeros, d_vars))
        return tf.constant(0.0)

    passes = {
        "G fwd (n)": lambda: generator(z, training=True),
        "G fwd+bwd (n)": g_backward,
        "D fwd (n)": lambda: discriminator(x1, training=True),
        "D fwd (2n)": lambda: discriminator(x2, training=True),
        "D fwd+bwd input (n)": lambda: d_backward(x1, False, True),
        "D fwd+bwd params (2n)": lambda: d_backward(x2, True, False),
        "D fwd+bwd params+input (2n)": lambda: d_backward(x2, True, True),
        "Adam update of D": adam,
        "spread ratio (n)": lambda: steps.spread_ratio(x1, x1),
        "coverage (n)": lambda: steps.coverage(x1, x1),
    }
    seconds = {name: timed(tf.function(fn)) for name, fn in passes.items()}
    for name, s in seconds.items():
        print(f"{name:<30} {s:7.3f} s")
    fused = seconds["G fwd+bwd (n)"] + seconds["D fwd+bwd params+input (2n)"] + 2 * seconds["Adam update of D"]
    alternating = (
        seconds["G fwd (n)"]
        + seconds["D fwd+bwd params (2n)"]
        + seconds["G fwd+bwd (n)"]
        + seconds["D fwd+bwd input (n)"]
        + 2 * seconds["Adam update of D"]
    )
    print(
        f"model of a fused step: {fused:.3f} s; of an efficient alternating step: {alternating:.3f} s; "
        f"ratio {alternating / fused:.2f}x"
    )
    print(
        f"share of the fused step in D's backward to parameters+input: "
        f"{(seconds['D fwd+bwd params+input (2n)'] - seconds['D fwd (2n)']) / fused:.0%}"
    )
    diagnostics = seconds["spread ratio (n)"] + seconds["coverage (n)"]
    print(f"G's spread and coverage, logged by every D update: {diagnostics / fused:.2%} of the fused step")


if __name__ == "__main__":
    app.run(main)
