"""The ResNet generator and discriminator of SNGAN for 32x32 images, and per octave beyond.

Follows Miyato et al., "Spectral Normalization for Generative Adversarial Networks" (ICLR 2018),
Table 4 (a) and (c) and its Chainer code (`sngan_projection`, `snresnet_32`), the "ResNet" rows
of the FusedProp paper's Table 2 (CIFAR-10). Upsampling is nearest-neighbour, downsampling is
2x2 average pooling.
"""

import keras

from tf_fusedprop import layers as fp_layers
from tf_fusedprop.networks.conditional import batch_norm, labels_input, output_logits
from tf_fusedprop.networks.dtypes import variable_dtype
from tf_fusedprop.networks.sngan import octaves

__all__ = ["GlobalSumPooling2D", "resnet_generator", "resnet_discriminator"]


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class GlobalSumPooling2D(keras.layers.Layer):
    """Sums NHWC features over height and width: `(batch, h, w, c) -> (batch, c)`."""

    def call(self, inputs):
        return keras.ops.sum(inputs, axis=(1, 2))

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[3])


def _up_block(x, filters, dtype, labels=None, num_classes=None):
    """BN-ReLU-up-conv3x3-BN-ReLU-conv3x3, plus the shortcut up-conv1x1 (BN class-conditional
    when `labels` is given)."""
    h = batch_norm(x, labels, num_classes, dtype)
    h = keras.layers.ReLU(dtype=dtype)(h)
    h = keras.layers.UpSampling2D(dtype=dtype)(h)
    h = keras.layers.Conv2D(filters, 3, padding="same", dtype=dtype)(h)
    h = batch_norm(h, labels, num_classes, dtype)
    h = keras.layers.ReLU(dtype=dtype)(h)
    h = keras.layers.Conv2D(filters, 3, padding="same", dtype=dtype)(h)
    shortcut = keras.layers.UpSampling2D(dtype=dtype)(x)
    shortcut = keras.layers.Conv2D(filters, 1, dtype=dtype)(shortcut)
    return keras.layers.Add(dtype=dtype)([h, shortcut])


def _dis_block(x, filters, spectral_norm, dtype, first=False, downsample=True):
    """SNGAN's discriminator block; `first` is its "optimized" block (no leading ReLU)."""

    def conv(kernel_size):
        return fp_layers.Conv2D(filters, kernel_size, padding="same", spectral_norm=spectral_norm, dtype=dtype)

    def pool(t):
        return keras.layers.AveragePooling2D(2, dtype=dtype)(t) if downsample else t

    h = x if first else keras.layers.ReLU(dtype=dtype)(x)
    h = conv(3)(h)
    h = keras.layers.ReLU(dtype=dtype)(h)
    h = pool(conv(3)(h))
    if first:
        shortcut = conv(1)(pool(x))
    elif downsample or x.shape[-1] != filters:
        shortcut = pool(conv(1)(x))
    else:
        shortcut = x
    return keras.layers.Add(dtype=dtype)([h, shortcut])


def resnet_generator(latent_dim=128, width=256, channels=3, bottom=4, dtype=None, num_classes=None, image_size=None):
    """SNGAN's ResNet generator for CIFAR-10 (Miyato et al. 2018, Table 4 (a)).

    `z -> Dense(bottom*bottom*width)`, one up-sampling residual block of `width` channels per
    octave up to `image_size` (three at 32 px; BN-ReLU-upsample-conv3x3-BN-ReLU-conv3x3; shortcut
    upsample-conv1x1), then BN-ReLU-conv3x3 to `channels` and tanh.

    Args:
      latent_dim: size of the latent vector z.
      width: channels of every residual block (256 in the paper).
      channels: output image channels.
      bottom: spatial size after the Dense layer.
      dtype: dtype or dtype policy of every layer; None for the default.
      num_classes: for a class-conditional G (SNGAN-projection), the number of classes: the
        model takes `[z, labels]` and its BatchNorms are class-conditional.
      image_size: the side of the images, `bottom * 2**k`; None: `8 * bottom`.

    Returns:
      A `keras.Model` named "generator" mapping `(batch, latent_dim)` latents (and labels) to
      `(batch, image_size, image_size, channels)` images in [-1, 1].
    """
    z = keras.Input((latent_dim,), dtype=variable_dtype(dtype), name="z")
    labels = None if num_classes is None else labels_input()
    x = keras.layers.Dense(bottom * bottom * width, dtype=dtype)(z)
    x = keras.layers.Reshape((bottom, bottom, width), dtype=dtype)(x)
    for _ in range(octaves(image_size or 8 * bottom, bottom)):
        x = _up_block(x, width, dtype, labels, num_classes)
    x = batch_norm(x, labels, num_classes, dtype)
    x = keras.layers.ReLU(dtype=dtype)(x)
    x = keras.layers.Conv2D(channels, 3, padding="same", activation="tanh", dtype=dtype)(x)
    return keras.Model(z if labels is None else [z, labels], x, name="generator")


def resnet_discriminator(
    input_shape=(32, 32, 3), width=128, spectral_norm=True, dtype=None, num_classes=None, bottom=None
):
    """SNGAN's ResNet discriminator for CIFAR-10 (Miyato et al. 2018, Table 4 (c)).

    An optimized down block (conv3x3-ReLU-conv3x3-avgpool; shortcut avgpool-conv1x1), down
    blocks (ReLU-conv3x3-ReLU-conv3x3-avgpool; shortcut conv1x1-avgpool) down to twice `bottom`
    (one at 32 px: to 8x8), two blocks without
    downsampling (identity shortcut), all with `width` channels; then ReLU, global sum pooling
    and Dense(1). Every trainable layer is a `tf_fusedprop.layers` Conv2D/Dense and there is
    no normalization layer, so all training forms apply.

    Args:
      input_shape: `(height, width, channels)` of the images, square: `bottom * 2**k`, k >= 2.
      width: channels of every block (128 in the paper).
      spectral_norm: whether every layer is spectrally normalized (SNGAN semantics).
      dtype: dtype or dtype policy of the layers; the last Dense computes in the policy's
        variable dtype, so logits stay float32 under mixed precision. None for the default.
      num_classes: for a projection discriminator (SNGAN-projection), the number of classes:
        the model takes `[images, labels]`.
      bottom: half the side of the last block's output; None: `height / 8` (SNGAN's 32 px model).

    Returns:
      A `keras.Model` named "discriminator" mapping `(batch, *input_shape)` images (and
      labels) to `(batch, 1)` raw logits.
    """
    x = inputs = keras.Input(input_shape, dtype=variable_dtype(dtype), name="images")
    labels = None if num_classes is None else labels_input()
    side = input_shape[0]
    x = _dis_block(x, width, spectral_norm, dtype, first=True)
    for _ in range(octaves(side, bottom or side // 8) - 2):  # down to 2 * bottom (32 px: to 8x8)
        x = _dis_block(x, width, spectral_norm, dtype)
    x = _dis_block(x, width, spectral_norm, dtype, downsample=False)
    x = _dis_block(x, width, spectral_norm, dtype, downsample=False)
    x = keras.layers.ReLU(dtype=dtype)(x)
    x = GlobalSumPooling2D(dtype=dtype)(x)
    x = output_logits(x, labels, num_classes, spectral_norm, dtype)
    return keras.Model(inputs if labels is None else [inputs, labels], x, name="discriminator")
