"""InvFusedProp-capable drop-in replacements for `keras.layers.Dense`, `Conv2D` and `Embedding`.

Outside a `tf_fusedprop.ops.ParameterGradientScaling` scope these layers compute exactly
what the Keras layers compute. Inside one, their kernel/bias gradients are formed from the
upstream gradient multiplied per sample by the scope's factor, while the gradient passed on to
their input stays unscaled (InvFusedProp, Fig. 3 of the paper).

`spectral_norm=True` gives SNGAN / PyTorch semantics: the layer uses `W / sigma(W)` where
`sigma = v^T W u` comes from one power iteration per training call; `u` and `v` are constants
of the gradient (stop-gradient) but the gradient does flow through `sigma`'s dependence on
`W`. `u` is a non-trainable weight updated only in training calls; an inference call runs the
iteration from the stored `u` without storing the result (as SNGAN's Chainer code does).
Note that a step which calls D twice (the conventional `alternating` form) therefore runs two
power iterations per step, where the single-pass FusedProp forms run one.
"""

import keras
import tensorflow as tf

from tf_fusedprop import conv_weight_gradients, ops
from tf_fusedprop import weight_gradient_formulations as formulations

__all__ = ["Conv2D", "Conv2DTranspose", "Dense", "Embedding", "LeakyReLU", "supports_parameter_gradient_scaling"]


def supports_parameter_gradient_scaling(layer):
    """True for layers that implement per-sample parameter-gradient scaling (InvFusedProp)."""
    return getattr(layer, "_supports_parameter_gradient_scaling", False)


class _FusedPropLayer:
    """Mixin that makes a Keras layer InvFusedProp-capable (per-sample parameter-gradient
    scaling inside a `ParameterGradientScaling` scope) and adds `spectral_norm` (SNGAN
    semantics). The layer names its weight matrix (`_weight_name`) and supplies
    `_affine(inputs, weight, scaling, training)` (without activation)."""

    _supports_parameter_gradient_scaling = True
    _weight_name = "kernel"

    def build(self, input_shape):
        super().build(input_shape)
        self._build_spectral_norm(getattr(self, self._weight_name).shape[-1])

    def call(self, inputs, training=None):
        scaling = ops.active_parameter_gradient_scaling()
        if scaling is None and not self.spectral_norm and self._weight_gradient_formulation() == "native":
            return super().call(inputs)
        x = self._affine(inputs, self._normalized_kernel(training), scaling, training)
        activation = getattr(self, "activation", None)
        return activation(x) if activation is not None else x

    def get_config(self):
        config = super().get_config()
        config["spectral_norm"] = self.spectral_norm
        return config

    def _weight_gradient_formulation(self):
        # Layers whose kernel gradient has other formulations (Conv2D) override this.
        return "native"

    def _build_spectral_norm(self, out_dim):
        if self.spectral_norm:
            # Under a tf.distribute strategy each replica updates its own copy of u (sync on
            # read: no cross-replica merge inside a training step, also within gradient
            # accumulation's loop), and every replica computes the same u from the same mirrored
            # kernel and previous u; reading it outside the step (a checkpoint) gives the first
            # replica's copy.
            # In the layer's variable dtype (float64 stays float64), at least float32 (mixed policies).
            dtype = "float64" if keras.backend.standardize_dtype(self.variable_dtype) == "float64" else "float32"
            self.sn_u = keras.Variable(
                initializer=keras.initializers.RandomNormal(stddev=1.0),
                shape=(out_dim,),
                dtype=dtype,
                trainable=False,
                synchronization="on_read",
                aggregation="only_first_replica",
                name="sn_u",
            )

    def _normalized_kernel(self, training):
        kernel = getattr(self, self._weight_name)
        if not self.spectral_norm:
            return kernel
        # The power iteration runs at least in float32: under a mixed policy the kernel read
        # here is bfloat16, and u would otherwise accumulate bf16 rounding step after step.
        w = tf.reshape(kernel, [-1, kernel.shape[-1]])
        if w.dtype.size < 4:
            w = tf.cast(w, tf.float32)
        u = tf.cast(self.sn_u, w.dtype)
        v = tf.stop_gradient(tf.math.l2_normalize(tf.linalg.matvec(w, u)))
        u = tf.stop_gradient(tf.math.l2_normalize(tf.linalg.matvec(w, v, transpose_a=True)))
        sigma = tf.tensordot(v, tf.linalg.matvec(w, u), axes=1)
        if training:
            self.sn_u.assign(tf.cast(u, self.sn_u.dtype))
        return kernel / tf.cast(sigma, kernel.dtype)

    # Keras's Dense/Conv save exactly kernel and bias; the power-iteration state must survive
    # a save/load too, or a reloaded D would restart its spectral-norm estimate.
    def save_own_variables(self, store):
        """Saves kernel, bias and, with spectral norm, the power-iteration vector `sn_u`."""
        super().save_own_variables(store)
        if self.built and self.spectral_norm:
            store["sn_u"] = self.sn_u

    def load_own_variables(self, store):
        """Loads what `save_own_variables` saved."""
        super().load_own_variables(store)
        if self.built and self.spectral_norm:
            self.sn_u.assign(store["sn_u"])


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class Dense(_FusedPropLayer, keras.layers.Dense):
    """`keras.layers.Dense` with InvFusedProp parameter-gradient scaling and optional SN.

    Args:
      units: as in `keras.layers.Dense`.
      spectral_norm: if True, use the spectrally normalized kernel (see module docstring).
      **kwargs: every other `keras.layers.Dense` argument.
    """

    def __init__(self, units, spectral_norm=False, **kwargs):
        super().__init__(units, **kwargs)
        self.spectral_norm = bool(spectral_norm)

    def _affine(self, inputs, kernel, scaling, training=None):
        if scaling is not None:
            return ops.scaled_dense(inputs, kernel, self.bias, scaling)
        x = keras.ops.matmul(inputs, kernel)
        return x if self.bias is None else keras.ops.add(x, self.bias)


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class Conv2D(_FusedPropLayer, keras.layers.Conv2D):
    """`keras.layers.Conv2D` with InvFusedProp parameter-gradient scaling and optional SN.

    Supports `data_format="channels_last"` and `groups=1` (the layouts GAN discriminators use
    with TensorFlow); other values raise ValueError.

    Args:
      filters, kernel_size: as in `keras.layers.Conv2D`.
      spectral_norm: if True, use the spectrally normalized kernel (see module docstring).
      weight_gradient: how the kernel gradient is computed (`tf_fusedprop.conv_weight_gradients`):
        "auto" (the process's policy: by default the fastest formulation measured on this
        machine for the layer's shape, in bfloat16/float16 on CPUs; TensorFlow's own kernel
        otherwise), "native", "forward_conv" or "taps". The values are the same either way,
        up to the dtype's rounding.
      **kwargs: every other `keras.layers.Conv2D` argument.
    """

    def __init__(self, filters, kernel_size, spectral_norm=False, weight_gradient="auto", **kwargs):
        super().__init__(filters, kernel_size, **kwargs)
        if self.groups != 1 or self.data_format != "channels_last":
            raise ValueError(
                "tf_fusedprop.layers.Conv2D supports groups=1 and data_format='channels_last'. "
                f"Received: groups={self.groups}, data_format={self.data_format!r}."
            )
        self.spectral_norm = bool(spectral_norm)
        self.weight_gradient = conv_weight_gradients.check_policy(weight_gradient)

    def get_config(self):
        return {**super().get_config(), "weight_gradient": self.weight_gradient}

    def _weight_gradient_formulation(self):
        if tuple(self.dilation_rate) != (1, 1):
            return "native"
        return conv_weight_gradients.resolve(self.weight_gradient, self.compute_dtype)

    def _affine(self, inputs, kernel, scaling, training=None):
        setting = self._weight_gradient_formulation()
        if scaling is None and setting == "native":
            x = self.convolution_op(inputs, kernel)
            return keras.ops.add(x, self.bias) if self.use_bias else x
        formulation = setting
        if setting == "auto":
            formulation = conv_weight_gradients.formulation(
                setting, inputs.shape, kernel.shape, self.strides, self.padding, self.compute_dtype, training
            )
        return ops.conv2d(
            inputs,
            kernel,
            self.bias,
            strides=self.strides,
            padding=self.padding,
            dilations=self.dilation_rate,
            factor=scaling,
            weight_gradient=formulation,
        )


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class Conv2DTranspose(keras.layers.Conv2DTranspose):
    """`keras.layers.Conv2DTranspose` whose kernel gradient formulation is chosen like `Conv2D`'s.

    The same values and gradients as Keras's layer (up to the dtype's rounding); a generator's
    layer, so it has no InvFusedProp scaling or spectral norm. With `output_padding`, dilation,
    `channels_first` or a non-static spatial input shape it is exactly Keras's layer.

    Args:
      filters, kernel_size: as in `keras.layers.Conv2DTranspose`.
      weight_gradient: as in `tf_fusedprop.layers.Conv2D`.
      **kwargs: every other `keras.layers.Conv2DTranspose` argument.
    """

    def __init__(self, filters, kernel_size, weight_gradient="auto", **kwargs):
        super().__init__(filters, kernel_size, **kwargs)
        self.weight_gradient = conv_weight_gradients.check_policy(weight_gradient)

    def get_config(self):
        return {**super().get_config(), "weight_gradient": self.weight_gradient}

    def call(self, inputs, training=None):
        plain = (
            self.output_padding is not None
            or tuple(self.dilation_rate) != (1, 1)
            or self.data_format != "channels_last"
            or None in tuple(inputs.shape[1:3])
        )
        setting = "native" if plain else conv_weight_gradients.resolve(self.weight_gradient, self.compute_dtype)
        if setting == "native":
            return super().call(inputs)
        formulation = setting
        if setting == "auto":
            # The kernel gradient is a convolution's whose input is this layer's output gradient.
            output_hw = [
                formulations.transposed_output_size(
                    inputs.shape[a], self.kernel.shape[a - 1], self.strides[a - 1], self.padding.upper()
                )
                for a in (1, 2)
            ]
            formulation = conv_weight_gradients.formulation(
                setting,
                (inputs.shape[0], *output_hw, self.filters),
                self.kernel.shape,
                self.strides,
                self.padding,
                self.compute_dtype,
                training,
            )
        x = ops.conv2d_transpose(
            inputs, self.kernel, self.bias, self.strides, self.padding, weight_gradient=formulation
        )
        return self.activation(x) if self.activation is not None else x


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class Embedding(_FusedPropLayer, keras.layers.Embedding):
    """`keras.layers.Embedding` with InvFusedProp parameter-gradient scaling and optional SN.

    Inside a scaling scope the gradient of looked-up row i is multiplied by sample i's factor
    before it is added to the table's gradient (e.g. the class embedding of a projection
    discriminator). With `spectral_norm=True` the table `[input_dim, output_dim]` is divided by
    its largest singular value, as SNGAN's projection discriminator does.

    Args:
      input_dim, output_dim: as in `keras.layers.Embedding` (classes, embedding size).
      spectral_norm: if True, use the spectrally normalized table (see module docstring).
      **kwargs: every other `keras.layers.Embedding` argument.
    """

    _weight_name = "embeddings"

    def __init__(self, input_dim, output_dim, spectral_norm=False, **kwargs):
        super().__init__(input_dim, output_dim, **kwargs)
        self.spectral_norm = bool(spectral_norm)

    def _affine(self, inputs, table, scaling, training=None):
        if scaling is not None:
            return ops.scaled_embedding(inputs, table, scaling)
        return tf.gather(table, tf.cast(inputs, "int32"))


def _leaky_relu(x, negative_slope):
    @tf.custom_gradient
    def forward(value):
        y = tf.nn.leaky_relu(value, negative_slope)

        def grad(upstream):
            # With a positive slope, y > 0 exactly where x > 0: the mask can come from y. It is a
            # constant of the gradient (piecewise constant in x): differentiated again (R1, GP), the
            # mask must not lead back through TF's own LeakyRelu gradient, which reads the BiasAdd.
            mask_source = tf.stop_gradient(y)
            return tf.raw_ops.LeakyReluGrad(gradients=upstream, features=mask_source, alpha=negative_slope)

        return y, grad

    return forward(x)


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class LeakyReLU(keras.layers.LeakyReLU):
    """`keras.layers.LeakyReLU` whose gradient reads the layer's output instead of its input.

    Same values and gradients (for a positive slope the output is positive exactly where the
    input is). Why: TensorFlow's own LeakyRelu gradient reads the input, i.e. the BiasAdd
    before it, so Grappler's remapper cannot fuse Conv2D/MatMul + BiasAdd + LeakyRelu in a
    training graph: it tries, fails ("remapper failed: ... Mutation::Apply error: fanout ...
    LeakyReluGrad ... missing node ... BiasAdd", the error line `python train.py` used to
    print) and leaves the activation as a separate op. Reading the output (as ReLU's gradient
    does) keeps the pattern fusable; `benchmarks/speed.py --variants=float32,keras_leaky_relu`
    measures what it is worth.

    Args:
      negative_slope: the slope for negative inputs; must be > 0 (0.2 for DCGAN, 0.1 for SNGAN).
      **kwargs: layer options.
    """

    def __init__(self, negative_slope=0.3, **kwargs):
        super().__init__(negative_slope=negative_slope, **kwargs)
        if not negative_slope > 0:
            raise ValueError(
                f"tf_fusedprop.layers.LeakyReLU needs negative_slope > 0. Received: negative_slope={negative_slope}"
            )

    def call(self, inputs):
        return _leaky_relu(inputs, self.negative_slope)
