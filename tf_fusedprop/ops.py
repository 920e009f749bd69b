"""Custom-gradient primitives behind FusedProp and InvFusedProp.

Both forms multiply gradients per sample by a factor that depends on D's output, so the factor
is known only *after* the op that applies it was created. `DeferredFactor` is that factor: a
`[batch]` tensor set once between the forward and the backward pass and read by the backward
pass (in the same trace under `tf.function`).

* `scale_gradient(x, factor)` is FusedProp's identity between G and D: its backward multiplies
  the gradient of sample i by `factor[i]`.
* `ParameterGradientScaling` is InvFusedProp's: a `DeferredFactor` that is also a scope. The
  layers of `tf_fusedprop.layers` called inside it form their parameter gradients from the
  upstream gradient multiplied per sample by the factor (`scaled_dense`, `scaled_conv2d`),
  while the gradient passed on to their input stays unscaled.

Factor arithmetic runs in at least float32, also when the gradients are float16/bfloat16
(mixed precision): a factor such as exp(12) does not fit float16, but its product with the
small gradient it multiplies does.
"""

import threading

import tensorflow as tf

from tf_fusedprop import weight_gradient_formulations as formulations

__all__ = [
    "DeferredFactor",
    "ParameterGradientScaling",
    "active_parameter_gradient_scaling",
    "conv2d",
    "conv2d_transpose",
    "per_sample",
    "scale_gradient",
    "scale_per_sample",
    "scaled_conv2d",
    "scaled_dense",
    "scaled_embedding",
]


def per_sample(factor, like):
    """Reshapes a `[batch]` factor so that it broadcasts over the other axes of `like`."""
    factor = tf.cast(factor, like.dtype)
    ones = tf.ones([tf.rank(like) - 1], dtype=tf.int32)
    return tf.reshape(factor, tf.concat([[-1], ones], axis=0))


def scale_per_sample(gradient, factor):
    """`gradient * factor[i]` for each sample i, computed in at least float32.

    The result has `gradient`'s dtype. A factor that does not fit a narrow dtype (float16's
    largest value is 65504) no longer turns the product into inf.
    """
    wide = tf.cast(gradient, gradient.dtype if gradient.dtype.size >= 4 else tf.float32)
    return tf.cast(wide * per_sample(factor, wide), gradient.dtype)


class DeferredFactor:
    """A per-sample factor that is captured by a backward pass before its value exists.

    Create it, build the forward pass with ops that capture it, `set` the `[batch]` value once
    it can be computed, then run the backward pass. One instance belongs to one step of one
    replica (under `tf.function`, to one trace).
    """

    def __init__(self):
        self._value = None

    def set(self, value):
        """Sets the `[batch]` factor; it is a constant of the backward pass (no gradient)."""
        self._value = tf.stop_gradient(tf.convert_to_tensor(value))

    def get(self):
        """The factor; raises RuntimeError if it was never set."""
        if self._value is None:
            raise RuntimeError(
                "A backward pass needed the per-sample factor before it was set. Call "
                "`factor.set(value)` between the forward and the backward pass."
            )
        return self._value


def _factor_value(factor):
    return factor.get() if isinstance(factor, DeferredFactor) else tf.stop_gradient(factor)


def scale_gradient(x, factor):
    """Identity in the forward pass; multiplies the incoming gradient by `factor` per sample.

    Args:
      x: a tensor whose first axis is the batch.
      factor: a `[batch]` tensor (one factor per sample, broadcast over the other axes of `x`)
        or a `DeferredFactor` set before the backward pass runs, which lets the factor depend
        on values computed *after* `x` (FusedProp's lambda depends on D's output). No gradient
        flows into the factor.

    Returns:
      A tensor equal to `x`.
    """

    @tf.custom_gradient
    def _identity(value):
        def grad(upstream):
            return scale_per_sample(upstream, _factor_value(factor))

        return tf.identity(value), grad

    return _identity(x)


# Layers cannot receive the scope as a call argument through Sequential/Functional models, so
# the active scope is found per thread: tf.distribute runs each replica in its own thread,
# which keeps replicas apart; a plain module global would not.
_active = threading.local()


def active_parameter_gradient_scaling():
    """The innermost `ParameterGradientScaling` entered in this thread, or None."""
    return getattr(_active, "scope", None)


class ParameterGradientScaling(DeferredFactor):
    """Scope in which capable layers scale their parameter gradients per sample by this factor.

        with ops.ParameterGradientScaling() as scaling:
            logits = discriminator(x)        # layers of tf_fusedprop.layers capture `scaling`
        scaling.set(per_sample_factor)       # after the forward pass ...
        grads = tape.gradient(loss, params)  # ... and before the backward pass

    Entering saves the scope active before and exiting restores it (scopes nest), per thread.
    Layers called outside any scope are plain Keras layers.
    """

    def __enter__(self):
        self._previous = active_parameter_gradient_scaling()
        _active.scope = self
        return self

    def __exit__(self, *exc_info):
        _active.scope = self._previous
        return False


def _as_tensors(inputs, kernel, bias):
    # Variables read inside a tf.custom_gradient would need `variables=` in its grad_fn;
    # reading them outside lets ordinary autodiff carry the gradient on to them (and on
    # through a spectral norm's sigma).
    params = (kernel,) if bias is None else (kernel, bias)
    return (inputs,) + tuple(tf.convert_to_tensor(p) for p in params)


def scaled_dense(inputs, kernel, bias, factor):
    """`inputs @ kernel + bias` whose kernel/bias gradients use the per-sample scaled upstream.

    The gradient with respect to `inputs` is the ordinary one. `inputs` may have any rank >= 2
    (batch first); `bias` may be None; `factor` is a `DeferredFactor` (or `[batch]` tensor).
    """

    @tf.custom_gradient
    def _dense(x, w, *b):
        x2 = tf.reshape(x, [-1, tf.shape(w)[0]])
        y2 = tf.matmul(x2, w)
        if b:
            y2 = y2 + b[0]
        y = tf.reshape(y2, tf.concat([tf.shape(x)[:-1], tf.shape(w)[1:]], axis=0))

        def grad(upstream):
            scaled = scale_per_sample(upstream, _factor_value(factor))
            upstream2 = tf.reshape(upstream, tf.shape(y2))
            scaled2 = tf.reshape(scaled, tf.shape(y2))
            dx = tf.reshape(tf.matmul(upstream2, w, transpose_b=True), tf.shape(x))
            dw = tf.matmul(x2, scaled2, transpose_a=True)
            if b:
                return dx, dw, tf.reduce_sum(scaled2, axis=0)
            return dx, dw

        return y, grad

    return _dense(*_as_tensors(inputs, kernel, bias))


def scaled_conv2d(inputs, kernel, bias, factor, strides, padding, dilations):
    """NHWC 2-D convolution (+ bias) whose kernel/bias gradients use the per-sample scaled upstream.

    `strides` and `dilations` are `(h, w)` pairs, `padding` is "same" or "valid"; `factor` is
    a `DeferredFactor` (or `[batch]` tensor). The gradient with respect to `inputs` is the
    ordinary one. The kernel gradient is TensorFlow's own (`conv2d` chooses others).
    """
    return conv2d(inputs, kernel, bias, strides, padding, dilations, factor=factor)


def _own_gradient_conv2d(x, w, b, factor, strides, padding, weight_gradient):
    strides4 = [1, strides[0], strides[1], 1]

    @tf.custom_gradient
    def _conv(x, w, *b):
        y = tf.nn.conv2d(x, w, strides=strides4, padding=padding)
        if b:
            y = tf.nn.bias_add(y, b[0])

        def grad(upstream):
            scaled = upstream if factor is None else scale_per_sample(upstream, _factor_value(factor))
            dx = tf.raw_ops.Conv2DBackpropInput(
                input_sizes=tf.shape(x), filter=w, out_backprop=upstream, strides=strides4, padding=padding
            )
            dw = formulations.weight_gradient(x, scaled, w.shape, strides, padding, weight_gradient)
            return (dx, dw, tf.raw_ops.BiasAddGrad(out_backprop=scaled)) if b else (dx, dw)

        return y, grad

    return _conv(*_as_tensors(x, w, b))


def _dilated_conv2d(x, w, b, factor, strides, padding, dilations):
    # TensorFlow's CPU kernels of Conv2DBackpropInput refuse dilation rates above 1 unless oneDNN
    # handles them (float32/bfloat16 only): a dilated convolution runs as `tf.nn.convolution`
    # (what Keras runs) and its two gradients are that op's autodiff.
    def convolve(x, w):
        return tf.nn.convolution(x, w, strides=strides, padding=padding, dilations=dilations)

    @tf.custom_gradient
    def _conv(x, w, *b):
        y = convolve(x, w)
        if b:
            y = tf.nn.bias_add(y, b[0])

        def grad(upstream):
            scaled = upstream if factor is None else scale_per_sample(upstream, _factor_value(factor))
            with tf.GradientTape(persistent=True) as tape:
                tape.watch([x, w])
                y = convolve(x, w)  # pruned in graph mode: the gradients need x and w only
            dx, dw = tape.gradient(y, x, output_gradients=upstream), tape.gradient(y, w, output_gradients=scaled)
            return (dx, dw, tf.reduce_sum(scaled, axis=[0, 1, 2])) if b else (dx, dw)

        return y, grad

    return _conv(*_as_tensors(x, w, b))


def conv2d(inputs, kernel, bias, strides, padding, dilations=(1, 1), factor=None, weight_gradient="native"):
    """NHWC 2-D convolution (+ bias) with its own backward pass.

    Args:
      inputs, kernel, bias: `[N, H, W, C]`, `[kh, kw, C, O]`, `[O]` or None.
      strides, dilations: `(h, w)` pairs.
      padding: "same" or "valid".
      factor: None, or a `DeferredFactor` (or `[batch]` tensor): the kernel and bias gradients
        are then formed from the upstream gradient multiplied per sample by it (InvFusedProp);
        the input gradient stays the ordinary one.
      weight_gradient: the kernel gradient's formulation, one of
        `weight_gradient_formulations.WEIGHT_GRADIENTS` (layers pick it:
        `conv_weight_gradients.formulation`). Dilated convolutions always use TensorFlow's own.

    Returns:
      `conv2d(inputs, kernel) + bias`.
    """
    padding = padding.upper()
    formulations.check(weight_gradient)
    if tuple(dilations) != (1, 1):
        return _dilated_conv2d(inputs, kernel, bias, factor, tuple(strides), padding, tuple(dilations))
    return _own_gradient_conv2d(inputs, kernel, bias, factor, tuple(strides), padding, weight_gradient)


def conv2d_transpose(inputs, kernel, bias, strides, padding, weight_gradient="native"):
    """NHWC transposed convolution (+ bias), the gradient of `conv2d`, with its own backward pass.

    Args:
      inputs: `[N, H, W, C]` with static H, W.
      kernel: `[kh, kw, O, C]` (Keras's and TensorFlow's layout for transposed convolutions).
      bias: `[O]` or None.
      strides: `(h, w)`.
      padding: "same" (output `H * s`) or "valid" (output `H * s + max(kh - s, 0)`), as Keras.
      weight_gradient: as in `conv2d`; the kernel gradient here is a convolution's weight
        gradient with the output gradient as its input.

    Returns:
      `[N, Ho, Wo, O]`.
    """
    padding, strides = padding.upper(), tuple(strides)
    formulations.check(weight_gradient)
    strides4 = [1, strides[0], strides[1], 1]
    kh, kw, filters, _ = kernel.shape
    out_hw = [
        formulations.transposed_output_size(inputs.shape[a], kernel.shape[a - 1], strides[a - 1], padding)
        for a in (1, 2)
    ]

    @tf.custom_gradient
    def _conv_transpose(x, w, *b):
        y = tf.nn.conv2d_transpose(x, w, tf.stack([tf.shape(x)[0], *out_hw, filters]), strides4, padding)
        if b:
            y = tf.nn.bias_add(y, b[0])

        def grad(upstream):
            dx = tf.nn.conv2d(upstream, w, strides4, padding)
            dw = formulations.weight_gradient(upstream, x, w.shape, strides, padding, weight_gradient)
            return (dx, dw, tf.raw_ops.BiasAddGrad(out_backprop=upstream)) if b else (dx, dw)

        return y, grad

    return _conv_transpose(*_as_tensors(inputs, kernel, bias))


def scaled_embedding(ids, table, factor):
    """`table[ids]` whose table gradient adds each looked-up row's per-sample scaled upstream.

    `ids` is an int tensor with the batch first (`[batch]` or `[batch, k]`); `factor` is a
    `DeferredFactor` (or `[batch]` tensor). The table gradient is dense (class tables are small).
    """
    ids = tf.cast(ids, tf.int32)

    @tf.custom_gradient
    def _lookup(t):
        def grad(upstream):
            scaled = scale_per_sample(upstream, _factor_value(factor))
            rows = tf.reshape(scaled, [-1, tf.shape(t)[-1]])
            return tf.math.unsorted_segment_sum(rows, tf.reshape(ids, [-1]), tf.shape(t)[0])

        return tf.gather(t, ids), grad

    return _lookup(tf.convert_to_tensor(table))
