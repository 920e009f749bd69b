"""Custom-gradient primitives behind FusedProp and InvFusedProp.

* `scale_gradient` is FusedProp's gradient-scaling identity, placed between G and D.
* `parameter_gradient_scaling` opens a scope in which the InvFusedProp-capable layers of
  `tf_fusedprop.layers` pre-scale, per sample, the upstream gradient before forming their
  parameter gradients, while the gradient passed on to their input stays unscaled.

The per-sample factors are known only after D's forward pass, so both primitives accept the
factor as a zero-argument callable that is evaluated when the backward pass runs (in the same
trace under `tf.function`).
"""

import contextlib
import threading

import tensorflow as tf

__all__ = [
    "ParameterGradientScale",
    "active_parameter_gradient_scale",
    "parameter_gradient_scaling",
    "per_sample",
    "scale_gradient",
    "scaled_dense",
    "scaled_conv2d",
]


def _resolve(scale):
    return scale() if callable(scale) else scale


def per_sample(scale, like):
    """Reshapes a `[batch]` factor so that it broadcasts over the other axes of `like`."""
    scale = tf.cast(scale, like.dtype)
    ones = tf.ones([tf.rank(like) - 1], dtype=tf.int32)
    return tf.reshape(scale, tf.concat([[-1], ones], axis=0))


def scale_gradient(x, scale):
    """Identity in the forward pass; multiplies the incoming gradient by `scale` per sample.

    Args:
      x: a tensor whose first axis is the batch.
      scale: a `[batch]` tensor (one factor per sample, broadcast over the other axes of `x`),
        or a zero-argument callable returning one. A callable is evaluated during the backward
        pass, which lets the factor depend on values computed *after* `x` (FusedProp's lambda
        depends on D's output). No gradient flows into `scale`.

    Returns:
      A tensor equal to `x`.
    """

    @tf.custom_gradient
    def _identity(value):
        def grad(upstream):
            return upstream * per_sample(tf.stop_gradient(_resolve(scale)), upstream)

        return tf.identity(value), grad

    return _identity(x)


class ParameterGradientScale:
    """Holder of the per-sample factor used by the layers inside `parameter_gradient_scaling`.

    `scale` is a `[batch]` tensor, or a zero-argument callable returning one; it must be set
    (with `set`) before the backward pass runs. One holder belongs to one step of one replica.
    """

    def __init__(self):
        self._scale = None

    def set(self, scale):
        """Sets the `[batch]` factor (tensor or callable) read by the layers' backward pass."""
        self._scale = scale

    def get(self):
        """Returns the factor as a tensor; raises if it was never set."""
        if self._scale is None:
            raise RuntimeError(
                "A parameter-gradient-scaling layer ran its backward pass before the "
                "per-sample factor was set. Call `scale.set(factor)` between the forward "
                "and the backward pass."
            )
        return tf.stop_gradient(_resolve(self._scale))


# Layers cannot receive the holder as a call argument through Sequential/Functional models,
# so the active scope is found per thread: tf.distribute runs each replica in its own thread,
# which keeps replicas apart; a plain module global would not.
_scope = threading.local()


def active_parameter_gradient_scale():
    """Returns the `ParameterGradientScale` of the innermost active scope, or None."""
    stack = getattr(_scope, "stack", None)
    return stack[-1] if stack else None


@contextlib.contextmanager
def parameter_gradient_scaling():
    """Scope in which capable layers scale their parameter gradients per sample.

    Yields a fresh `ParameterGradientScale`; set its factor after the forward pass and before
    the backward pass. Layers called outside any scope are plain Keras layers.
    """
    holder = ParameterGradientScale()
    stack = getattr(_scope, "stack", None)
    if stack is None:
        stack = _scope.stack = []
    stack.append(holder)
    try:
        yield holder
    finally:
        stack.pop()


def _as_tensors(inputs, kernel, bias):
    # Variables read inside a tf.custom_gradient would need `variables=` in its grad_fn;
    # reading them outside lets ordinary autodiff carry the gradient on to them (and on
    # through a spectral norm's sigma).
    params = (kernel,) if bias is None else (kernel, bias)
    return (inputs,) + tuple(tf.convert_to_tensor(p) for p in params)


def scaled_dense(inputs, kernel, bias, holder):
    """`inputs @ kernel + bias` whose kernel/bias gradients use the per-sample scaled upstream.

    The gradient with respect to `inputs` is the ordinary one. `inputs` may have any rank >= 2
    (batch first); `bias` may be None.
    """

    @tf.custom_gradient
    def _dense(x, w, *b):
        x2 = tf.reshape(x, [-1, tf.shape(w)[0]])
        y2 = tf.matmul(x2, w)
        if b:
            y2 = y2 + b[0]
        y = tf.reshape(y2, tf.concat([tf.shape(x)[:-1], tf.shape(w)[1:]], axis=0))

        def grad(upstream):
            scaled = upstream * per_sample(holder.get(), upstream)
            upstream2 = tf.reshape(upstream, tf.shape(y2))
            scaled2 = tf.reshape(scaled, tf.shape(y2))
            dx = tf.reshape(tf.matmul(upstream2, w, transpose_b=True), tf.shape(x))
            dw = tf.matmul(x2, scaled2, transpose_a=True)
            if b:
                return dx, dw, tf.reduce_sum(scaled2, axis=0)
            return dx, dw

        return y, grad

    return _dense(*_as_tensors(inputs, kernel, bias))


def scaled_conv2d(inputs, kernel, bias, holder, strides, padding, dilations):
    """NHWC 2-D convolution (+ bias) whose kernel/bias gradients use the per-sample scaled upstream.

    `strides` and `dilations` are `(h, w)` pairs, `padding` is "same" or "valid". The gradient
    with respect to `inputs` is the ordinary one.
    """
    strides4 = [1, strides[0], strides[1], 1]
    dilations4 = [1, dilations[0], dilations[1], 1]
    padding = padding.upper()

    @tf.custom_gradient
    def _conv(x, w, *b):
        y = tf.nn.conv2d(x, w, strides=strides4, padding=padding, dilations=dilations4)
        if b:
            y = tf.nn.bias_add(y, b[0])

        def grad(upstream):
            scaled = upstream * per_sample(holder.get(), upstream)
            dx = tf.raw_ops.Conv2DBackpropInput(
                input_sizes=tf.shape(x), filter=w, out_backprop=upstream,
                strides=strides4, padding=padding, dilations=dilations4,
            )
            dw = tf.raw_ops.Conv2DBackpropFilter(
                input=x, filter_sizes=tf.shape(w), out_backprop=scaled,
                strides=strides4, padding=padding, dilations=dilations4,
            )
            if b:
                return dx, dw, tf.reduce_sum(scaled, axis=[0, 1, 2])
            return dx, dw

        return y, grad

    return _conv(*_as_tensors(inputs, kernel, bias))
