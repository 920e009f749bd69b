"""The standard CNN generator and discriminator of SNGAN, for 32x32 images and beyond.

Follows Miyato et al., "Spectral Normalization for Generative Adversarial Networks" (ICLR 2018),
Table 3 (a) and (b), the "CNN" rows of the FusedProp paper's Table 2 (CIFAR-10). Other sizes
get one up- (G) or down-sampling (D) block per octave between the image and a `bottom` of 4
(or 6 at 48 px), as SNGAN's and Mimicry's 48/64/128 px models do (`octaves`); at 32 px the
networks are exactly SNGAN's.
"""

import keras

from tf_fusedprop import layers as fp_layers
from tf_fusedprop.networks.conditional import batch_norm, labels_input, output_logits
from tf_fusedprop.networks.dtypes import variable_dtype

__all__ = ["bottom_of", "cnn_discriminator", "cnn_generator", "default_widths", "octaves"]


def bottom_of(image_size):
    """The side the networks start (G) or end (D) at for `image_size`: halved while above 6 and
    even (32, 64, 128, 256 -> 4; 48 -> 6)."""
    side = image_size
    while side > 6 and side % 2 == 0:
        side //= 2
    return side


def default_widths(image_size):
    """`(generator width, discriminator width)` for `image_size`: the paper's 512 and 64 up to
    64 px, then halved per octave (256/32 at 128 px, 128/16 at 256 px), so that the wider
    feature maps of a larger image do not multiply a step's cost on a CPU."""
    g, d, side = 512, 64, 64
    while side < image_size:
        g, d, side = g // 2, d // 2, side * 2
    return max(g, 8), max(d, 4)


def octaves(image_size, bottom):
    """The number of 2x up/down-sampling blocks between `bottom` and `image_size`.

    Raises:
      ValueError: `image_size` is not `bottom` times a power of two (at least 2).
    """
    count, side = 0, bottom
    while side < image_size:
        side, count = side * 2, count + 1
    if side != image_size or count < 1:
        raise ValueError(
            f"the image side must be bottom * 2**k (k >= 1). Received: image_size={image_size}, bottom={bottom}."
        )
    return count


def cnn_generator(latent_dim=128, width=512, channels=3, bottom=4, dtype=None, num_classes=None, image_size=None):
    """SNGAN's CNN generator (Miyato et al. 2018, Table 3 (a)).

    `z -> Dense(bottom*bottom*width) -> BN -> ReLU`, then one 4x4 stride-2 transposed
    convolution per octave up to `image_size` with `width/2, width/4, width/8` filters (then
    `width/8` again), each followed by BN and ReLU, then a 3x3 convolution to `channels` and
    tanh. Keras layers (G may use BatchNormalization), but for the transposed convolutions:
    `tf_fusedprop.layers.Conv2DTranspose` picks their fastest kernel gradient.

    Args:
      latent_dim: size of the latent vector z.
      width: channels at the bottom (512 in the paper); a multiple of 8.
      channels: output image channels.
      bottom: spatial size after the Dense layer.
      dtype: dtype or dtype policy of every layer (e.g. "mixed_bfloat16"); None for the default.
      num_classes: for a class-conditional G (SNGAN-projection), the number of classes: the
        model takes `[z, labels]` and its BatchNorms are class-conditional.
      image_size: the side of the images, `bottom * 2**k`; None: `8 * bottom` (SNGAN's three blocks).

    Returns:
      A `keras.Model` named "generator" mapping `(batch, latent_dim)` latents (and labels) to
      `(batch, image_size, image_size, channels)` images in [-1, 1].
    """
    if width < 8 or width % 8:
        raise ValueError(f"cnn_generator needs width to be a positive multiple of 8. Received: width={width}.")
    blocks = octaves(image_size or 8 * bottom, bottom)
    z = keras.Input((latent_dim,), dtype=variable_dtype(dtype), name="z")
    labels = None if num_classes is None else labels_input()
    x = keras.layers.Dense(bottom * bottom * width, dtype=dtype)(z)
    x = keras.layers.Reshape((bottom, bottom, width), dtype=dtype)(x)
    x = batch_norm(x, labels, num_classes, dtype)
    x = keras.layers.ReLU(dtype=dtype)(x)
    for block in range(1, blocks + 1):
        x = fp_layers.Conv2DTranspose(width // 2 ** min(block, 3), 4, strides=2, padding="same", dtype=dtype)(x)
        x = batch_norm(x, labels, num_classes, dtype)
        x = keras.layers.ReLU(dtype=dtype)(x)
    x = keras.layers.Conv2D(channels, 3, padding="same", activation="tanh", dtype=dtype)(x)
    return keras.Model(z if labels is None else [z, labels], x, name="generator")


def cnn_discriminator(input_shape=(32, 32, 3), width=64, spectral_norm=True, dtype=None, num_classes=None, bottom=None):
    """SNGAN's CNN discriminator (Miyato et al. 2018, Table 3 (b)).

    Per octave down to `bottom`, a 3x3 s1 and a 4x4 s2 convolution of `width`, `2*width`,
    `4*width` (then `8*width`) channels, and a last 3x3 s1 convolution of `8*width`, each
    followed by LeakyReLU(0.1) (at 32 px the paper's seven: 64 ... 512 channels), then Flatten
    and Dense(1). Every trainable layer is a `tf_fusedprop.layers` Conv2D/Dense and there is no
    normalization layer, so all training forms (including "inverse" and "adaptive") apply.

    Args:
      input_shape: `(height, width, channels)` of the images, square: `bottom * 2**k`.
      width: channels of the first convolution (64 in the paper).
      spectral_norm: whether every layer is spectrally normalized (SNGAN semantics).
      dtype: dtype or dtype policy of the layers; the last Dense computes in the policy's
        variable dtype, so logits stay float32 under mixed precision. None for the default.
      num_classes: for a projection discriminator (SNGAN-projection), the number of classes:
        the model takes `[images, labels]`.
      bottom: the side after the last down-sampling; None: `height / 8` (SNGAN's three).

    Returns:
      A `keras.Model` named "discriminator" mapping `(batch, *input_shape)` images (and
      labels) to `(batch, 1)` raw logits.
    """
    side = input_shape[0]
    blocks = octaves(side, bottom or side // 8)
    convs = [(k, s, 2 ** min(block, 3)) for block in range(blocks) for k, s in ((3, 1), (4, 2))]
    convs.append((3, 1, 2 ** min(blocks, 3)))
    x = inputs = keras.Input(input_shape, dtype=variable_dtype(dtype), name="images")
    labels = None if num_classes is None else labels_input()
    for kernel_size, strides, multiplier in convs:
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
