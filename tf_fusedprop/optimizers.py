"""Optimizers whose per-variable update is one TensorFlow op.

Keras's `Adam.update_step` runs about 20 element-wise ops per variable (each a pass over the
variable's memory and an executor dispatch); TensorFlow's `ResourceApplyAdam` kernel does the
same update in one pass. For SNGAN's G and D (34 variables, 6.7M parameters) on a 2-core CPU:
11.1 against 5.1 ms per update of both players on a 2-core AMD EPYC Zen 5
(`benchmarks/adam.py`).
"""

import keras
import tensorflow as tf

__all__ = ["Adam"]


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class Adam(keras.optimizers.Adam):
    """`keras.optimizers.Adam` that updates each variable with TensorFlow's fused Adam kernel.

    The same update as Keras's (`m`, `v` and the bias-corrected step; equal up to float
    rounding, and the same slot variables, so checkpoints move between the two), in one
    `ResourceApplyAdam` op per variable. Keras's own `update_step` runs where the fused kernel
    does not apply: `amsgrad=True`, a variable whose dtype differs from the gradient's, and
    sparse gradients (`tf.IndexedSlices`, e.g. an embedding's), which Keras's Adam applies row
    by row.
    Weight decay, clipping, gradient accumulation, EMA and loss scaling are Keras's, outside
    `update_step`, unchanged.

    Args: those of `keras.optimizers.Adam`.
    """

    def update_step(self, gradient, variable, learning_rate):
        """Applies one Adam update of `variable` by `gradient`."""
        if self.amsgrad or isinstance(gradient, tf.IndexedSlices) or gradient.dtype != variable.dtype:
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        step = tf.cast(self.iterations + 1, dtype)
        # The slots Keras's Adam keeps for `variable` (its own bookkeeping, which subclasses use).
        index = self._get_variable_index(variable)
        momentum, velocity = self._momentums[index], self._velocities[index]
        beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=momentum.handle,
            v=velocity.handle,
            beta1_power=tf.pow(beta_1, step),
            beta2_power=tf.pow(beta_2, step),
            lr=tf.cast(learning_rate, dtype),
            beta1=beta_1,
            beta2=beta_2,
            epsilon=tf.cast(self.epsilon, dtype),
            grad=gradient,
        )
