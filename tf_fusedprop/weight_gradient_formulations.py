"""The formulations of a 2-D convolution's weight gradient: pure maths, no choice between them.

TensorFlow computes `dW` of `y = conv2d(x, w)` with one op, `Conv2DBackpropFilter`. The same sum
can be written with ops that are faster on some CPUs in bfloat16 (which, and where:
`tf_fusedprop.conv_weight_gradients`, the per-machine choice one floor up):

* `"native"`: `Conv2DBackpropFilter` (what TensorFlow's own gradient runs), except for a 1x1
  kernel with a stride > 1, whose one tap is one matmul (`"taps"`): there TensorFlow 2.21's
  oneDNN kernel on AVX2-only CPUs returns wrong gradients, from run to run (up to 0.7 of the
  gradient's size at 3 or 5 channels; oneDNN is on under `train.py`).
* `"forward_conv"`: `dW[i, j, c, o] = sum_{n, p, q} x[n, s*p + i, s*q + j, c] * dy[n, p, q, o]`
  is a forward convolution of the padded input with its batch and channel axes swapped
  (`[C, H, W, N]`) by `dy` taken as the filter (`[Ho, Wo, N, O]`), dilated by the stride.
* `"taps"`: one `[C, M] x [M, O]` matmul per kernel tap over the strided slice of x that the tap
  multiplies (`M = N * Ho * Wo`).

All give the same gradient up to the dtype's rounding. `ops.conv2d` and `ops.conv2d_transpose`
form their kernel gradients here; no function here times, caches or reads a file.
"""

import tensorflow as tf

__all__ = [
    "WEIGHT_GRADIENTS",
    "check",
    "conv_output_size",
    "explicit_padding",
    "transposed_output_size",
    "weight_gradient",
]

#: The formulations of the weight gradient (see the module docstring).
WEIGHT_GRADIENTS = ("native", "forward_conv", "taps")


def explicit_padding(size, kernel, stride, padding):
    """`(before, after)` padding of one spatial axis, as TensorFlow pads a convolution."""
    if padding == "VALID":
        return 0, 0
    total = max((conv_output_size(size, kernel, stride, padding) - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def conv_output_size(size, kernel, stride, padding):
    """Output length of one spatial axis of an undilated convolution."""
    return -(-size // stride) if padding == "SAME" else (size - kernel) // stride + 1


def transposed_output_size(size, kernel, stride, padding):
    """Output length of one spatial axis of a transposed convolution (no output padding), as Keras."""
    return size * stride + (max(kernel - stride, 0) if padding == "VALID" else 0)


def _padded(x, kernel_hw, strides, padding):
    pads = [list(explicit_padding(x.shape[a], kernel_hw[a - 1], strides[a - 1], padding)) for a in (1, 2)]
    if pads == [[0, 0], [0, 0]]:
        return x
    return tf.pad(x, [[0, 0], pads[0], pads[1], [0, 0]])


def _native(x, dy, kernel_shape, strides, padding):
    if tuple(kernel_shape[:2]) == (1, 1) and tuple(strides) != (1, 1):
        return _taps(x, dy, kernel_shape, strides, padding)
    return tf.raw_ops.Conv2DBackpropFilter(
        input=x,
        filter_sizes=list(kernel_shape),
        out_backprop=dy,
        strides=[1, strides[0], strides[1], 1],
        padding=padding,
    )


def _forward_conv(x, dy, kernel_shape, strides, padding):
    kh, kw, _, _ = kernel_shape
    dw = tf.nn.conv2d(
        tf.transpose(_padded(x, (kh, kw), strides, padding), [3, 1, 2, 0]),  # [C, H, W, N]
        tf.transpose(dy, [1, 2, 0, 3]),  # [Ho, Wo, N, O]: the output gradient as the filter
        strides=1,
        padding="VALID",
        dilations=[1, strides[0], strides[1], 1],
    )  # [C, >= kh, >= kw, O]: the rows and columns a stride skips at the end are no taps
    return tf.transpose(dw[:, :kh, :kw, :], [1, 2, 0, 3])


def _taps(x, dy, kernel_shape, strides, padding):
    kh, kw, c, o = kernel_shape
    x = _padded(x, (kh, kw), strides, padding)
    ho, wo = dy.shape[1], dy.shape[2]
    dy2 = tf.reshape(dy, [-1, o])
    dw = [
        tf.matmul(
            tf.reshape(
                x[:, i : i + (ho - 1) * strides[0] + 1 : strides[0], j : j + (wo - 1) * strides[1] + 1 : strides[1], :],
                [-1, c],
            ),
            dy2,
            transpose_a=True,
        )
        for i in range(kh)
        for j in range(kw)
    ]
    return tf.reshape(tf.stack(dw), [kh, kw, c, o])


_FORMULATIONS = {"native": _native, "forward_conv": _forward_conv, "taps": _taps}


def weight_gradient(x, dy, kernel_shape, strides, padding, formulation="native"):
    """The gradient of `sum(conv2d(x, w) * dy)` with respect to `w` (NHWC, HWIO, no dilation).

    Args:
      x: the convolution's input `[N, H, W, C]` (static H, W).
      dy: the gradient of its output `[N, Ho, Wo, O]` (static Ho, Wo).
      kernel_shape: `(kh, kw, C, O)`.
      strides: `(h, w)`.
      padding: "SAME" or "VALID".
      formulation: one of `WEIGHT_GRADIENTS` (`conv_weight_gradients` picks one per layer).

    Returns:
      `[kh, kw, C, O]` in `dy`'s dtype.
    """
    shape = tuple(int(d) for d in kernel_shape)
    return _FORMULATIONS[check(formulation)](x, dy, shape, tuple(int(s) for s in strides), padding.upper())


def check(formulation):
    """Returns `formulation` if it is one of `WEIGHT_GRADIENTS`; raises a one-line ValueError otherwise."""
    if formulation not in _FORMULATIONS:
        raise ValueError(f"Unknown weight-gradient formulation {formulation!r}. Valid: {', '.join(WEIGHT_GRADIENTS)}.")
    return formulation
