"""Milliseconds per weight gradient of every convolution of a reference pair, per formulation.

    python benchmarks/weight_gradients.py [--network=sngan_cnn] [--batch_size=64] [--reps=9]

For D's convolutions (at D's batch in a fused step, 2 x `--batch_size`) and G's transposed
convolutions (at `--batch_size`; their weight gradient is a convolution's, with the output
gradient as its input), times each formulation of `tf_fusedprop.conv_weight_gradients` (the
native `Conv2DBackpropFilter`, a forward convolution, per-tap matmuls), in float32 and
bfloat16, each in its own `tf.function`, in interleaved rounds (median over `--reps`), and
prints what `conv_weight_gradients.choose` picks on this machine for bfloat16 (what the
layers use under the default "auto" policy). The header gives the CPU and its flags.
"""

import statistics
import time

import machine  # noqa: F401  (first: sets oneDNN and TF's log level, puts the project first on sys.path)
import own_flags
import tensorflow as tf
from absl import app, flags

from tf_fusedprop import conv_weight_gradients as cwg
from tf_fusedprop import layers as fp_layers
from tf_fusedprop import networks
from tf_fusedprop import weight_gradient_formulations as formulations

FLAGS = flags.FLAGS


def define_flags(values=FLAGS):
    """The command line's flags, on `values` (defined when run, not when imported: other
    benchmarks define the same names; `run` defines them on its own `FlagValues`)."""
    flags.DEFINE_string(
        "network", "sngan_cnn", "Reference network pair (tf_fusedprop.networks.names()).", flag_values=values
    )
    flags.DEFINE_integer("batch_size", 64, "Real and generated samples per step (each).", flag_values=values)
    flags.DEFINE_integer("reps", 9, "Timed rounds; the median is reported.", flag_values=values)


DTYPES = (tf.float32, tf.bfloat16)


def weight_gradient_shapes(network, batch_size):
    """`[(label, x shape, kernel shape, strides, padding)]`: the weight gradients of D's
    convolutions (batch 2 x `batch_size`) and G's transposed convolutions (`batch_size`)."""
    make_g, make_d = networks.get(network)
    shapes = []
    for layer in make_d().layers:
        if isinstance(layer, fp_layers.Conv2D):
            x = (2 * batch_size,) + tuple(layer.input.shape[1:])
            label = f"D {x[1]}x{x[2]}x{x[3]} -> {layer.filters}, k{layer.kernel_size[0]} s{layer.strides[0]}"
            shapes.append((label, x, tuple(layer.kernel.shape), tuple(layer.strides), layer.padding.upper()))
    for layer in make_g().layers:
        if isinstance(layer, fp_layers.Conv2DTranspose):
            h, w, c = layer.input.shape[1:]
            upstream = (batch_size,) + tuple(layer.output.shape[1:])
            label = f"G {h}x{w}x{c} -> {layer.filters}, k{layer.kernel_size[0]} s{layer.strides[0]} (transposed)"
            shapes.append((label, upstream, tuple(layer.kernel.shape), tuple(layer.strides), layer.padding.upper()))
    return shapes


def measure(x_shape, kernel_shape, strides, padding, reps):
    """`{(formulation, dtype name): median ms}` for one weight gradient."""
    out_hw = [formulations.conv_output_size(x_shape[a], kernel_shape[a - 1], strides[a - 1], padding) for a in (1, 2)]
    x32 = tf.random.stateless_normal(x_shape, seed=[1, 2])
    dy32 = tf.random.stateless_normal([x_shape[0]] + out_hw + [kernel_shape[-1]], seed=[3, 4])
    calls = {}
    for dtype in DTYPES:
        x, dy = tf.cast(x32, dtype), tf.cast(dy32, dtype)
        for name in formulations.WEIGHT_GRADIENTS:
            fn = tf.function(
                lambda a, b, name=name: formulations.weight_gradient(a, b, kernel_shape, strides, padding, name)
            )
            fn(x, dy), fn(x, dy)
            calls[name, dtype.name] = (fn, x, dy)
    return median_milliseconds(calls, reps)


def median_milliseconds(calls, reps):
    """`{key: median ms}` of `calls` (`{key: (function, *arguments)}`), each called once per
    round in `reps` interleaved rounds, so that the machine's swings hit them alike."""
    times = {key: [] for key in calls}
    for _ in range(reps):
        for key, (fn, *arguments) in calls.items():
            start = time.perf_counter()
            fn(*arguments).numpy()
            times[key].append(time.perf_counter() - start)
    return {key: 1e3 * statistics.median(t) for key, t in times.items()}


def _main(values):
    tf.get_logger().setLevel("ERROR")  # a tf.function per formulation and shape: retracing is the point
    print(machine.header())
    print(f"network={values.network}, batch={values.batch_size} (D: {2 * values.batch_size}), reps={values.reps}")
    print("weight gradient, ms per call (median); 'auto' is what conv_weight_gradients.choose picks in bfloat16")
    short = {"float32": "f32", "bfloat16": "bf16"}
    columns = [f"{short[dtype.name]} {name}" for dtype in DTYPES for name in formulations.WEIGHT_GRADIENTS]
    print(f"{'convolution':44s} " + " ".join(f"{c:>17s}" for c in columns) + f" {'auto (bf16)':>13s}")
    totals = {}
    for label, x_shape, kernel_shape, strides, padding in weight_gradient_shapes(values.network, values.batch_size):
        ms = measure(x_shape, kernel_shape, strides, padding, values.reps)
        choice = cwg.choose(x_shape, kernel_shape, strides, padding, tf.bfloat16)
        cells = [ms[name, dtype.name] for dtype in DTYPES for name in formulations.WEIGHT_GRADIENTS]
        for dtype in DTYPES:
            picked = ms[choice, "bfloat16"] if dtype == tf.bfloat16 else ms["native", "float32"]
            totals[dtype.name] = [
                t + v for t, v in zip(totals.get(dtype.name, [0.0, 0.0]), (ms["native", dtype.name], picked))
            ]
        print(f"{label:44s} " + " ".join(f"{c:17.2f}" for c in cells) + f" {choice:>13s}")
    (f32_native, _), (bf16_native, bf16_auto) = totals["float32"], totals["bfloat16"]
    print(
        f"all: float32 native {f32_native:.1f} ms; bfloat16 native {bf16_native:.1f} ms, as chosen {bf16_auto:.1f} ms "
        f"({bf16_native / bf16_auto:.2f}x)"
    )


run, main = own_flags.entry_points(define_flags, _main)

if __name__ == "__main__":
    define_flags()
    app.run(main)
