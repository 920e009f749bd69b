"""Milliseconds per convolution pass of a reference discriminator, float32 against bfloat16.

    python benchmarks/conv_passes.py [--network=sngan_cnn] [--batch_size=128] [--reps=15]

For every Conv2D of the network's D (its input shape, filters, kernel and strides read from the
built model), at D's batch in a fused step (64 real + 64 fake), times the three passes a
training step runs, each in its own `tf.function` with oneDNN: the forward convolution (+ bias,
LeakyReLU), the input gradient (`dX`) and the weight gradient (`dW`, + bias gradient), in
float32 and in bfloat16, and the weight gradient computed in float32 from bfloat16 tensors (the
casts included; its float32 column repeats dW's float32 time, for comparison). Medians over
`--reps` calls after two warm-up calls. It shows where bfloat16 pays on this CPU and where it
does not: the header gives the CPU and its flags.
"""

import statistics
import time

import machine  # noqa: F401  (first: sets oneDNN and TF's log level, puts the project first on sys.path)
import own_flags
import tensorflow as tf
from absl import app, flags

from tf_fusedprop import layers as fp_layers
from tf_fusedprop import networks

FLAGS = flags.FLAGS


def define_flags(values=FLAGS):
    """The command line's flags, on `values` (defined when run, not when imported: other
    benchmarks define the same names; `run` defines them on its own `FlagValues`)."""
    flags.DEFINE_string(
        "network", "sngan_cnn", "Reference network pair (tf_fusedprop.networks.names()).", flag_values=values
    )
    flags.DEFINE_integer(
        "batch_size", 128, "Samples through D per pass (a fused step: real + fake).", flag_values=values
    )
    flags.DEFINE_integer("reps", 15, "Timed calls per pass; the median is reported.", flag_values=values)


PASSES = ("fwd", "dX", "dW", "dW f32 from bf16")


def conv_shapes(network):
    """`[(input_shape (h, w, c), filters, kernel (kh, kw), strides (sh, sw), padding)]` of D's convs."""
    _, make_d = networks.get(network)
    return [
        (tuple(layer.input.shape[1:]), layer.filters, layer.kernel_size, layer.strides, layer.padding.upper())
        for layer in make_d().layers
        if isinstance(layer, fp_layers.Conv2D)
    ]


def _median_ms(fn, args, reps):
    fn(*args)
    fn(*args)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn(*args).numpy()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def pass_functions(strides, padding):
    """`{pass name: tf.function(x, w, b, dy) -> scalar}` for one convolution's settings."""

    def conv(x, w, b):
        return tf.nn.bias_add(tf.nn.conv2d(x, w, strides, padding), b)

    def weight_gradient(x, w, b, dy):
        with tf.GradientTape() as tape:
            tape.watch([w, b])
            y = conv(x, w, b)
        dw, db = tape.gradient(y, [w, b], output_gradients=dy)
        return tf.reduce_sum(tf.cast(dw, tf.float32)) + tf.reduce_sum(tf.cast(db, tf.float32))

    def input_gradient(x, w, b, dy):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = conv(x, w, b)
        return tf.reduce_sum(tf.cast(tape.gradient(y, x, output_gradients=dy), tf.float32))

    def weight_gradient_in_float32(x, w, b, dy):
        return weight_gradient(*(tf.cast(t, tf.float32) for t in (x, w, b, dy)))

    return {
        "fwd": tf.function(
            lambda x, w, b, dy: tf.reduce_sum(tf.cast(tf.nn.leaky_relu(conv(x, w, b), 0.1), tf.float32))
        ),
        "dX": tf.function(input_gradient),
        "dW": tf.function(weight_gradient),
        "dW f32 from bf16": tf.function(weight_gradient_in_float32),
    }


def measure(shape, filters, kernel, strides, padding, batch_size, reps):
    """`{(pass, dtype): ms}` for one convolution; "dW f32 from bf16" under dtype bfloat16 only."""
    rng = tf.random.Generator.from_seed(0)
    x = rng.normal((batch_size,) + shape)
    w = rng.normal(tuple(kernel) + (shape[-1], filters)) * 0.05
    b = tf.zeros((filters,))
    dy = rng.normal(tf.shape(tf.nn.conv2d(x[:1], w, strides, padding)).numpy().tolist())
    dy = tf.tile(dy, [batch_size, 1, 1, 1])
    functions, results = pass_functions(strides, padding), {}
    for dtype in (tf.float32, tf.bfloat16):
        args = [tf.cast(t, dtype) for t in (x, w, b, dy)]
        for name, fn in functions.items():
            if name == "dW f32 from bf16" and dtype == tf.float32:
                continue
            results[(name, dtype.name)] = _median_ms(fn, args, reps)
    return results


def _main(values):
    print(machine.header())
    print(
        f"network={values.network} D convolutions, batch={values.batch_size}, reps={values.reps}; ms per call (median)"
    )
    print(f"{'convolution':32s} {'pass':17s} {'float32':>8s} {'bfloat16':>9s} {'f32/bf16':>9s}")
    totals = {}
    for shape, filters, kernel, strides, padding in conv_shapes(values.network):
        results = measure(shape, filters, kernel, strides, padding, values.batch_size, values.reps)
        label = f"{shape[0]}x{shape[1]}x{shape[2]} -> {filters}, k{kernel[0]} s{strides[0]}"
        for name in PASSES:
            f32, bf16 = results.get((name, "float32"), results[("dW", "float32")]), results[(name, "bfloat16")]
            totals[name] = [t + v for t, v in zip(totals.get(name, [0.0, 0.0]), (f32, bf16))]
            print(f"{label:32s} {name:17s} {f32:8.2f} {bf16:9.2f} {f32 / bf16:8.2f}x")
    for name in PASSES:
        f32, bf16 = totals[name]
        print(f"{'all convolutions':32s} {name:17s} {f32:8.1f} {bf16:9.1f} {f32 / bf16:8.2f}x")


run, main = own_flags.entry_points(define_flags, _main)

if __name__ == "__main__":
    define_flags()
    app.run(main)
