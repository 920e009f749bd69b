"""Small networks that train in minutes on a CPU: a DCGAN-style pair for 16x16 digits and
MLPs for 2-D toy distributions (Gaussian mixtures)."""

import keras

from tf_fusedprop import layers as fp_layers
from tf_fusedprop.networks.conditional import batch_norm, labels_input, output_logits
from tf_fusedprop.networks.dtypes import variable_dtype

__all__ = ["digits_generator", "digits_discriminator", "mlp_generator", "mlp_discriminator"]


def _check_image_size(image_size):
    if image_size < 4 or image_size % 4:
        raise ValueError(f"image_size must be a positive multiple of 4. Received: image_size={image_size}.")


def digits_generator(latent_dim=32, image_size=16, channels=1, width=32, dtype=None, num_classes=None):
    """A DCGAN-style generator for small grayscale images (e.g. 16x16 digits).

    `z -> Dense((image_size/4)^2 * 2*width) -> BN -> ReLU -> ConvT(width, 4, s2) -> BN -> ReLU
    -> ConvT(channels, 4, s2) -> tanh`.

    Args:
      latent_dim: size of the latent vector z.
      image_size: output height and width; a multiple of 4.
      channels: output image channels.
      width: filters of the last hidden layer (the first has `2 * width`).
      dtype: dtype or dtype policy of every layer; None for the default.
      num_classes: for a class-conditional G, the number of classes: the model then takes
        `[z, labels]` and its BatchNorms are class-conditional.

    Returns:
      A `keras.Model` named "generator" mapping `(batch, latent_dim)` latents (and labels) to
      `(batch, image_size, image_size, channels)` images in [-1, 1].
    """
    _check_image_size(image_size)
    bottom = image_size // 4
    z = keras.Input((latent_dim,), dtype=variable_dtype(dtype), name="z")
    labels = None if num_classes is None else labels_input()
    x = keras.layers.Dense(bottom * bottom * 2 * width, dtype=dtype)(z)
    x = keras.layers.Reshape((bottom, bottom, 2 * width), dtype=dtype)(x)
    x = batch_norm(x, labels, num_classes, dtype)
    x = keras.layers.ReLU(dtype=dtype)(x)
    x = fp_layers.Conv2DTranspose(width, 4, strides=2, padding="same", dtype=dtype)(x)
    x = batch_norm(x, labels, num_classes, dtype)
    x = keras.layers.ReLU(dtype=dtype)(x)
    x = fp_layers.Conv2DTranspose(channels, 4, strides=2, padding="same", activation="tanh", dtype=dtype)(x)
    return keras.Model(z if labels is None else [z, labels], x, name="generator")


def digits_discriminator(image_size=16, channels=1, width=32, spectral_norm=True, dtype=None, num_classes=None):
    """A DCGAN-style discriminator for small grayscale images (e.g. 16x16 digits).

    `Conv(width, 4, s2) -> LeakyReLU(0.2) -> Conv(2*width, 4, s2) -> LeakyReLU(0.2) -> Flatten
    -> Dense(1)`, built from `tf_fusedprop.layers` without normalization layers, so all
    training forms apply.

    Args:
      image_size: input height and width; a multiple of 4.
      channels: input image channels.
      width: filters of the first convolution (the second has `2 * width`).
      spectral_norm: whether every layer is spectrally normalized (SNGAN semantics).
      dtype: dtype or dtype policy of the layers; the last Dense computes in the policy's
        variable dtype, so logits stay float32 under mixed precision. None for the default.
      num_classes: for a projection discriminator, the number of classes: the model then takes
        `[images, labels]` (`tf_fusedprop.networks.conditional.projection_logits`).

    Returns:
      A `keras.Model` named "discriminator" mapping `(batch, image_size, image_size, channels)`
      images (and labels) to `(batch, 1)` raw logits.
    """
    _check_image_size(image_size)
    x = inputs = keras.Input((image_size, image_size, channels), dtype=variable_dtype(dtype), name="images")
    labels = None if num_classes is None else labels_input()
    for filters in (width, 2 * width):
        x = fp_layers.Conv2D(filters, 4, strides=2, padding="same", spectral_norm=spectral_norm, dtype=dtype)(x)
        x = fp_layers.LeakyReLU(0.2, dtype=dtype)(x)
    x = keras.layers.Flatten(dtype=dtype)(x)
    x = output_logits(x, labels, num_classes, spectral_norm, dtype)
    return keras.Model(inputs if labels is None else [inputs, labels], x, name="discriminator")


def mlp_generator(latent_dim=2, output_dim=2, units=128, hidden_layers=3, output_activation="tanh", dtype=None):
    """An MLP generator for 2-D toy distributions: `hidden_layers` x (Dense(units), ReLU), Dense.

    Args:
      latent_dim: size of the latent vector z.
      output_dim: dimension of the samples.
      units: width of every hidden layer.
      hidden_layers: number of hidden layers.
      output_activation: "tanh" (default) keeps samples in [-1, 1], so the toy data must be
        scaled into that square; None gives an unbounded linear output.
      dtype: dtype or dtype policy of every layer; None for the default.

    Returns:
      A `keras.Model` named "generator" mapping `(batch, latent_dim)` latents to
      `(batch, output_dim)` samples (in [-1, 1] with the default tanh).
    """
    x = z = keras.Input((latent_dim,), dtype=variable_dtype(dtype), name="z")
    for _ in range(hidden_layers):
        x = keras.layers.Dense(units, activation="relu", dtype=dtype)(x)
    x = keras.layers.Dense(output_dim, activation=output_activation, dtype=dtype)(x)
    return keras.Model(z, x, name="generator")


def mlp_discriminator(input_dim=2, units=128, hidden_layers=3, spectral_norm=False, dtype=None):
    """An MLP discriminator for 2-D toys: `hidden_layers` x (Dense(units), LeakyReLU(0.2)), Dense(1).

    Built from `tf_fusedprop.layers.Dense`, so all training forms apply. Spectral norm is off by
    default: a 1-Lipschitz D on samples in [-1, 1]^2 can only produce logits a few units apart,
    which slows the toys down.

    Args:
      input_dim: dimension of the samples.
      units: width of every hidden layer.
      hidden_layers: number of hidden layers.
      spectral_norm: whether every layer is spectrally normalized (SNGAN semantics).
      dtype: dtype or dtype policy of the layers; the last Dense computes in the policy's
        variable dtype, so logits stay float32 under mixed precision. None for the default.

    Returns:
      A `keras.Model` named "discriminator" mapping `(batch, input_dim)` samples to `(batch, 1)`
      raw logits.
    """
    x = inputs = keras.Input((input_dim,), dtype=variable_dtype(dtype), name="samples")
    for _ in range(hidden_layers):
        x = fp_layers.Dense(units, spectral_norm=spectral_norm, dtype=dtype)(x)
        x = fp_layers.LeakyReLU(0.2, dtype=dtype)(x)
    x = fp_layers.Dense(1, spectral_norm=spectral_norm, dtype=variable_dtype(dtype))(x)
    return keras.Model(inputs, x, name="discriminator")
