"""A current oneDNN's convolution weight gradient, as a TensorFlow op, beside the package's own.

    bash benchmarks/onednn/run.sh        # builds the op, then runs this with it

Loads `weight_gradient_op.so` (built by `run.sh` against this TensorFlow's headers and the
`onednn` wheel's library), checks it against `Conv2DBackpropFilter` on every weight gradient of
`benchmarks/weight_gradients.py` (float32 to 1e-5 of the largest entry; bfloat16 to 1e-2, its
output rounding), then times it in the same interleaved rounds as the package's formulations
(`tf_fusedprop.conv_weight_gradients`), each in its own `tf.function`, and prints per layer the
milliseconds and the op's time over the fastest formulation's, float32 and bfloat16.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import machine  # noqa: E402, F401  (first: oneDNN on, TF's log quiet, this checkout importable)

# isort: split
import tensorflow as tf  # noqa: E402
import weight_gradients  # noqa: E402

from tf_fusedprop import weight_gradient_formulations as formulations  # noqa: E402

ONEDNN = "onednn op"
DTYPES = ("float32", "bfloat16")
SHORT = {"float32": "f32", "bfloat16": "bf16"}
TOLERANCE = {"float32": 1e-5, "bfloat16": 1e-2}


def layer_calls(op, label, x_shape, kernel_shape, strides, padding):
    """`{(formulation or ONEDNN, dtype): (tf.function, x, dy)}` of one weight gradient, traced
    and warmed up, after checking the op against `Conv2DBackpropFilter` (SystemExit if off)."""
    out_hw = [formulations.conv_output_size(x_shape[a], kernel_shape[a - 1], strides[a - 1], padding) for a in (1, 2)]
    x32 = tf.random.stateless_normal(x_shape, seed=[1, 2])
    dy32 = tf.random.stateless_normal([x_shape[0]] + out_hw + [kernel_shape[-1]], seed=[3, 4])
    pads = [
        p
        for a in (1, 2)
        for p in formulations.explicit_padding(x_shape[a], kernel_shape[a - 1], strides[a - 1], padding)
    ]
    calls = {}
    for dtype in DTYPES:
        x, dy = tf.cast(x32, dtype), tf.cast(dy32, dtype)
        reference = tf.raw_ops.Conv2DBackpropFilter(
            input=tf.cast(x, tf.float32),
            filter_sizes=list(kernel_shape),
            out_backprop=tf.cast(dy, tf.float32),
            strides=[1, *strides, 1],
            padding=padding,
        )
        ours = op.onednn_conv2d_backprop_filter(
            x, dy, filter_shape=list(kernel_shape), strides=list(strides), pads=pads
        )
        error = float(tf.reduce_max(tf.abs(tf.cast(ours, tf.float32) - reference)) / tf.reduce_max(tf.abs(reference)))
        if error > TOLERANCE[dtype]:
            raise SystemExit(f"{label} {dtype}: the op is off by {error:.1e} of the largest entry")
        for name in formulations.WEIGHT_GRADIENTS:
            fn = tf.function(
                lambda a, b, name=name: formulations.weight_gradient(a, b, kernel_shape, strides, padding, name)
            )
            fn(x, dy), fn(x, dy)
            calls[name, dtype] = (fn, x, dy)
        fn = tf.function(
            lambda a, b: op.onednn_conv2d_backprop_filter(
                a, b, filter_shape=list(kernel_shape), strides=list(strides), pads=pads
            )
        )
        fn(x, dy), fn(x, dy)
        calls[ONEDNN, dtype] = (fn, x, dy)
    return calls


def tf_passes(reps):
    """Prints TensorFlow's own three passes (plain conv ops, NHWC) of D's convolutions at batch
    128, the shapes `passes.cc` runs oneDNN alone on, medians of interleaved rounds."""
    calls = {}
    for label, x_shape, kernel_shape, strides, padding in weight_gradients.weight_gradient_shapes("sngan_cnn", 64):
        if not label.startswith("D "):
            continue
        out_hw = [
            formulations.conv_output_size(x_shape[a], kernel_shape[a - 1], strides[a - 1], padding) for a in (1, 2)
        ]
        for dtype in DTYPES:
            x = tf.cast(tf.random.stateless_normal(x_shape, seed=[1, 2]), dtype)
            w = tf.cast(tf.random.stateless_normal(kernel_shape, seed=[5, 6]), dtype)
            dy = tf.cast(tf.random.stateless_normal([x_shape[0]] + out_hw + [kernel_shape[-1]], seed=[3, 4]), dtype)
            passes = {
                "fwd": lambda x, w, dy, s=strides, p=padding: tf.nn.conv2d(x, w, s, p),
                "dX": lambda x, w, dy, s=strides, p=padding: tf.raw_ops.Conv2DBackpropInput(
                    input_sizes=tf.shape(x), filter=w, out_backprop=dy, strides=[1, *s, 1], padding=p
                ),
                "dW": lambda x, w, dy, s=strides, p=padding: tf.raw_ops.Conv2DBackpropFilter(
                    input=x, filter_sizes=tf.shape(w), out_backprop=dy, strides=[1, *s, 1], padding=p
                ),
            }
            for name, fn in passes.items():
                fn = tf.function(fn)
                fn(x, w, dy), fn(x, w, dy)
                calls[label, SHORT[dtype], name] = (fn, x, w, dy)
    ms = weight_gradients.median_milliseconds(calls, reps)
    print("TensorFlow's own passes of D's convolutions (batch 128), ms per call (median of interleaved rounds)")
    for label in dict.fromkeys(key[0] for key in ms):
        cells = "; ".join(
            f"{d} " + " ".join(f"{ms[label, d, p]:6.2f}" for p in ("fwd", "dX", "dW")) for d in ("f32", "bf16")
        )
        print(f"{label:40s} fwd/dX/dW {cells}")
    for d in ("f32", "bf16"):
        print(
            f"all {d}: "
            + " ".join(f"{p} {sum(v for k, v in ms.items() if k[1:] == (d, p)):.1f}" for p in ("fwd", "dX", "dW"))
        )


def main():
    """Checks and times the op (`sys.argv[1]`: rounds, default 9), then TF's own passes."""
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    op = tf.load_op_library(os.path.join(os.path.dirname(os.path.abspath(__file__)), "weight_gradient_op.so"))
    tf.get_logger().setLevel("ERROR")
    print(machine.header())
    names = list(formulations.WEIGHT_GRADIENTS) + [ONEDNN]
    dtypes = DTYPES
    print("weight gradient, ms per call (median of interleaved rounds); last columns: the op / the fastest formulation")
    print(
        f"{'convolution':40s} " + " ".join(f"{SHORT[d] + ' ' + n:>17s}" for d in dtypes for n in names) + "   f32  bf16"
    )
    totals = {}
    for label, x_shape, kernel_shape, strides, padding in weight_gradients.weight_gradient_shapes("sngan_cnn", 64):
        calls = layer_calls(op, label, x_shape, kernel_shape, strides, padding)
        ms = weight_gradients.median_milliseconds(calls, reps)
        best = {d: min(ms[n, d] for n in formulations.WEIGHT_GRADIENTS) for d in dtypes}
        for d in dtypes:
            for n in names:
                totals[n, d] = totals.get((n, d), 0.0) + ms[n, d]
            totals["fastest", d] = totals.get(("fastest", d), 0.0) + best[d]
            totals["per layer with the op", d] = totals.get(("per layer with the op", d), 0.0) + min(
                best[d], ms[ONEDNN, d]
            )
        cells = " ".join(f"{ms[n, d]:17.2f}" for d in dtypes for n in names)
        print(f"{label:40s} {cells}  " + " ".join(f"{ms[ONEDNN, d] / best[d]:5.2f}" for d in dtypes))
    for d in dtypes:
        parts = ", ".join(f"{n} {totals[n, d]:.1f}" for n in names + ["fastest", "per layer with the op"])
        print(f"all, {d}: {parts}; the op / the fastest {totals[ONEDNN, d] / totals['fastest', d]:.2f}")
    tf_passes(reps)


if __name__ == "__main__":
    main()
