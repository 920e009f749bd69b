"""The standard CNN generator and discriminator of SNGAN for 32x32 images.

Follows Miyato et al., "Spectral Normalization for Generative Adversarial Networks" (ICLR 2018),
Table 3 (a) and (b), the "CNN" rows of the FusedProp paper's Table 2 (CIFAR-10).
"""

import keras

from tf_fusedprop import layers as fp_layers
from tf_fusedprop.networks.conditional import batch_norm, labels_input, output_logits
from tf_fusedprop.networks.dtypes import variable_dtype

__all__ = ["cnn_generator", "cnn_discriminator"]

# (kernel size, stride, channel multiplier of `width`) of each discriminator convolution.
_DISCRIMINATOR_CONVS = ((3, 1, 1), (4, 2, 1), (3, 1, 2), (4, 2, 2), (3, 1, 4), (4, 2, 4), (3, 1, 8))


def cnn_generator(latent_dim=128, width=512, channels=3, bottom=4, dtype=None, num_classes=None):
    """SNGAN's CNN generator (Miyato et al. 2018, Table 3 (a)).

    `z -> Dense(bottom*bottom*width) -> BN -> ReLU`, then three 4x4 stride-2 transposed
    convolutions with `width/2, width/4, width/8` filters, each followed by BN and ReLU, then a
    3x3 convolution to `channels` and tanh. Keras layers (G may use BatchNormalization), but for
    the transposed convolutions: `tf_fusedprop.layers.Conv2DTranspose` picks their fastest kernel
    gradient.

    Args:
      latent_dim: size of the latent vector z.
      width: channels at the bottom (512 in the paper); a multiple of 8.
      channels: output image channels.
      bottom: spatial size after the Dense layer; images are `8 * bottom` pixels square.
      dtype: dtype or dtype policy of every layer (e.g. "mixed_bfloat16"); None for the default.
      num_classes: for a class-conditional G (SNGAN-projection), the number of classes: the
        model takes `[z, labels]` and its BatchNorms are class-conditional.

    Returns:
      A `keras.Model` named "generator" mapping `(batch, latent_dim)` latents (and labels) to
      `(batch, 8*bottom, 8*bottom, channels)` images in [-1, 1].
    """
    if width < 8 or width % 8:
        raise ValueError(f"cnn_generator needs width to be a positive multiple of 8. Received: width={width}.")
    z = keras.Input((latent_dim,), dtype=variable_dtype(dtype), name="z")
    labels = None if num_classes is None else labels_input()
    x = keras.layers.Dense(bottom * bottom * width, dtype=dtype)(z)
    x = keras.layers.Reshape((bottom, bottom, width), dtype=dtype)(x)
    x = batch_norm(x, labels, num_classes, dtype)
    x = keras.layers.ReLU(dtype=dtype)(x)
    for divisor in (2, 4, 8):
        x = fp_layers.Conv2DTranspose(width // divisor, 4, strides=2, padding="same", dtype=dtype)(x)
        x = batch_norm(x, labels, num_classes, dtype)
        x = keras.layers.ReLU(dtype=dtype)(x)
    x = keras.layers.Conv2D(channels, 3, padding="same", activation="tanh", dtype=dtype)(x)
    return keras.Model(z if labels is None else [z, labels], x, name="generator")


def cnn_discriminator(input_shape=(32, 32, 3), width=64, spectral_norm=True, dtype=None, num_classes=None):
    """SNGAN's CNN discriminator (Miyato et al. 2018, Table 3 (b)).

    Seven convolutions, each followed by LeakyReLU(0.1): 3x3 s1 `width`, 4x4 s2 `width`,
    3x3 s1 `2*width`, 4x4 s2 `2*width`, 3x3 s1 `4*width`, 4x4 s2 `4*width`, 3x3 s1 `8*width`
    (64 ... 512 in the paper), then Flatten and Dense(1). Every trainable layer is a
    `tf_fusedprop.layers` Conv2D/Dense and there is no normalization layer, so all training
    forms (including "inverse" and "adaptive") apply.

    Args:
      input_shape: `(height, width, channels)` of the images; height and width divisible by 8.
      width: channels of the first convolution (64 in the paper).
      spectral_norm: whether every layer is spectrally normalized (SNGAN semantics).
      dtype: dtype or dtype policy of the layers; the last Dense computes in the policy's
        variable dtype, so logits stay float32 under mixed precision. None for the default.
      num_classes: for a projection discriminator (SNGAN-projection), the number of classes:
        the model takes `[images, labels]`.

    Returns:
      A `keras.Model` named "discriminator" mapping `(batch, *input_shape)` images (and
      labels) to `(batch, 1)` raw logits.
    """
    x = inputs = keras.Input(input_shape, dtype=variable_dtype(dtype), name="images")
    labels = None if num_classes is None else labels_input()
    for kernel_size, strides, multiplier in _DISCRIMINATOR_CONVS:
        x = fp_layers.Conv2D(
            multiplier * width,
            kernel_size,
            strides=strides,
            padding="same",
            spectral_norm=spectral_norm,
            dtype=dtype,
        )(x)
        x = fp_layers.LeakyReLU(0.1, dtype=dtype)(x)
    x = keras.layers.Flatten(dtype=dtype)(x)
    x = output_logits(x, labels, num_classes, spectral_norm, dtype)
    return keras.Model(inputs if labels is None else [inputs, labels], x, name="discriminator")
