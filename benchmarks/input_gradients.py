"""Milliseconds per input gradient of every convolution of a reference pair: TF's kernel against
the same sum written as one forward convolution.

    python benchmarks/input_gradients.py [--network=sngan_cnn] [--batch_size=64] [--reps=9]

The weight gradient became faster in bfloat16 as a forward convolution (oneDNN's brgemm forward
kernel, `benchmarks/weight_gradients.py`); this asks the same of the input gradient
`Conv2DBackpropInput`, which is also the forward pass of G's transposed convolutions. Written
as forward work, a stride-`s` input gradient is `s * s` interleaved stride-1 convolutions of the
output gradient, one per output phase, each with the `ceil(k / s)`-tap sub-kernel that reaches
it; stacking the sub-kernels along the output channels makes them one convolution followed by
`depth_to_space` ("sub-pixel" form, `sub_pixel_input_gradient`), with no multiply by an inserted
zero. The shapes are `weight_gradients.py`'s (D's convolutions at 2 x `--batch_size`, G's
transposed ones at `--batch_size`), both dtypes, each call in its own `tf.function`, interleaved
rounds, median over `--reps`. The header gives the CPU and its flags.
"""

import machine  # noqa: F401  (first: sets oneDNN and TF's log level, puts the project first on sys.path)
import own_flags
import tensorflow as tf
from absl import app, flags
from weight_gradients import DTYPES, define_flags, median_milliseconds, weight_gradient_shapes

from tf_fusedprop import weight_gradient_formulations as formulations

FLAGS = flags.FLAGS
FORMULATIONS = ("native", "sub_pixel")


def native_input_gradient(dy, kernel, x_shape, stride, padding):
    """TensorFlow's `Conv2DBackpropInput` (what `tf_fusedprop.ops.conv2d`'s gradient runs)."""
    return tf.raw_ops.Conv2DBackpropInput(
        input_sizes=x_shape, filter=kernel, out_backprop=dy, strides=[1, stride, stride, 1], padding=padding
    )


def sub_pixel_input_gradient(dy, kernel, x_shape, stride, padding):
    """The gradient of `sum(conv2d(x, kernel) * dy)` with respect to `x` as one stride-1 forward
    convolution of the padded `dy` and `depth_to_space` (square strides, NHWC, HWIO).

    With `t = h + pad_top = s*u + r`, `dx[h] = sum_m dy[u - m] * w[r + s*m]`: every phase `r`
    reads the same window `dy[u - M + 1 .. u]` (`M = ceil(k / s)`), so the `s * s` phases'
    sub-kernels (`w[r + s*m]`, reversed in `m`, zero where `r + s*m >= k`) stack into one
    `[M, M, O, s * s * C]` kernel.
    """
    kh, kw, c, o = kernel.shape
    h, w = x_shape[1], x_shape[2]
    top = formulations.explicit_padding(h, kh, stride, padding)[0]
    left = formulations.explicit_padding(w, kw, stride, padding)[0]
    mh, mw = -(-kh // stride), -(-kw // stride)
    u, v = -(-(h + top) // stride), -(-(w + left) // stride)
    dy = tf.pad(dy, [[0, 0], [mh - 1, max(0, u - dy.shape[1])], [mw - 1, max(0, v - dy.shape[2])], [0, 0]])
    taps = tf.pad(kernel, [[0, mh * stride - kh], [0, mw * stride - kw], [0, 0], [0, 0]])
    taps = tf.reshape(taps, [mh, stride, mw, stride, c, o])[::-1, :, ::-1]  # [m', r, n', q, c, o]
    taps = tf.reshape(tf.transpose(taps, [0, 2, 5, 1, 3, 4]), [mh, mw, o, stride * stride * c])
    phases = tf.nn.conv2d(dy, taps, 1, "VALID")[:, :u, :v]
    full = tf.nn.depth_to_space(phases, stride) if stride > 1 else phases
    return full[:, top : top + h, left : left + w]


_FUNCTIONS = {"native": native_input_gradient, "sub_pixel": sub_pixel_input_gradient}


def measure(x_shape, kernel_shape, stride, padding, reps):
    """`{(formulation, dtype name): median ms}` for one input gradient."""
    out_hw = [formulations.conv_output_size(x_shape[a], kernel_shape[a - 1], stride, padding) for a in (1, 2)]
    dy32 = tf.random.stateless_normal([x_shape[0]] + out_hw + [kernel_shape[-1]], seed=[1, 2])
    w32 = tf.random.stateless_normal(kernel_shape, seed=[3, 4])
    calls = {}
    for dtype in DTYPES:
        dy, w = tf.cast(dy32, dtype), tf.cast(w32, dtype)
        for name, function in _FUNCTIONS.items():
            fn = tf.function(lambda a, b, function=function: function(a, b, x_shape, stride, padding))
            fn(dy, w), fn(dy, w)
            calls[name, dtype.name] = (fn, dy, w)
    return median_milliseconds(calls, reps)


def _main(values):
    tf.get_logger().setLevel("ERROR")  # a tf.function per formulation and shape: retracing is the point
    print(machine.header())
    print(f"network={values.network}, batch={values.batch_size} (D: {2 * values.batch_size}), reps={values.reps}")
    print("input gradient (G's transposed convolutions: their forward pass), ms per call (median)")
    short = {"float32": "f32", "bfloat16": "bf16"}
    columns = [f"{short[dtype.name]} {name}" for dtype in DTYPES for name in FORMULATIONS]
    print(f"{'convolution':44s} " + " ".join(f"{c:>14s}" for c in columns))
    totals = {column: 0.0 for column in columns}
    for label, x_shape, kernel_shape, strides, padding in weight_gradient_shapes(values.network, values.batch_size):
        if strides[0] != strides[1]:
            continue
        ms = measure(x_shape, kernel_shape, strides[0], padding, values.reps)
        cells = [ms[name, dtype.name] for dtype in DTYPES for name in FORMULATIONS]
        for column, value in zip(columns, cells):
            totals[column] += value
        print(f"{label:44s} " + " ".join(f"{c:14.2f}" for c in cells))
    print("all: " + ", ".join(f"{column} {total:.1f} ms" for column, total in totals.items()))


# weight_gradients.py's flags: the same network, batch and rounds.
run, main = own_flags.entry_points(define_flags, _main)


if __name__ == "__main__":
    define_flags()  # weight_gradients.py's: the same network, batch and rounds
    app.run(main)
