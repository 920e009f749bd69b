"""Reference generators and discriminators.

* `sngan`: SNGAN's standard CNN for 32x32 images (FusedProp paper, Table 2, "CNN").
* `resnet`: SNGAN's ResNet for 32x32 images (FusedProp paper, Table 2, "ResNet").
* `small`: a DCGAN-style pair for 16x16 digits and MLPs for 2-D toys, for CPU-sized runs.
* `variable_dtype`: the dtype a model's inputs and D's last layer use under a dtype policy.

`get(name)` gives a registered pair's builders, `facts(name)` what else a training script needs
to know of it (`Network`: image or 2-D samples, conditional, the multiple its image side must
be, the builder arguments a sample shape fixes, default widths): one record per network, so a
new network is one entry.

Every builder returns a functional `keras.Model`. Generators map `(batch, latent_dim)` latents
to samples (images in [-1, 1]); discriminators map samples to `(batch, 1)` raw logits and are
built only from `tf_fusedprop.layers` Conv2D/Dense with no normalization layers, so every
training form applies to them.
"""

import collections

from tf_fusedprop import _checks
from tf_fusedprop.networks.dtypes import variable_dtype
from tf_fusedprop.networks.resnet import GlobalSumPooling2D, resnet_discriminator, resnet_generator
from tf_fusedprop.networks.small import digits_discriminator, digits_generator, mlp_discriminator, mlp_generator
from tf_fusedprop.networks.sngan import bottom_of, cnn_discriminator, cnn_generator, default_widths

__all__ = [
    "GlobalSumPooling2D",
    "Network",
    "cnn_discriminator",
    "cnn_generator",
    "digits_discriminator",
    "digits_generator",
    "facts",
    "get",
    "mlp_discriminator",
    "mlp_generator",
    "names",
    "resnet_discriminator",
    "resnet_generator",
    "variable_dtype",
]


class Network(
    collections.namedtuple(
        "Network", ["generator", "discriminator", "image", "conditional", "size_multiple", "inputs", "default_widths"]
    )
):
    """A registered pair of builders and the facts about it.

    Attributes:
      generator, discriminator: the builders.
      image: whether it takes images (else 2-D vectors).
      conditional: whether the builders take `num_classes` (a class-conditional GAN).
      size_multiple: what the image side must be a multiple of (its up- and down-samplings).
      inputs: `sample_shape -> (generator kwargs, discriminator kwargs)` that the samples fix.
      default_widths: `image side -> (generator width, discriminator width)` for widths left
        None, or None.
    """


def _vector_inputs(shape):
    return {"output_dim": shape[0]}, {"input_dim": shape[0]}


def _digits_inputs(shape):
    size = {"image_size": shape[0], "channels": shape[-1]}
    return size, dict(size)


def _sngan_inputs(shape):
    """One up/down-sampling block per octave between the image and 4 px (6 at 48 px)."""
    bottom = bottom_of(shape[0])
    return {"channels": shape[-1], "bottom": bottom, "image_size": shape[0]}, {
        "input_shape": tuple(shape),
        "bottom": bottom,
    }


_REGISTRY = _checks.Registry(
    "network",
    {
        "sngan_cnn": Network(cnn_generator, cnn_discriminator, True, True, 8, _sngan_inputs, default_widths),
        "sngan_resnet": Network(resnet_generator, resnet_discriminator, True, True, 8, _sngan_inputs, None),
        "digits": Network(digits_generator, digits_discriminator, True, True, 4, _digits_inputs, None),
        "mlp": Network(mlp_generator, mlp_discriminator, False, False, 1, _vector_inputs, None),
    },
)


def names():
    """The registered network names."""
    return _REGISTRY.names()


def facts(name):
    """The `Network` registered under `name`.

    Raises:
      ValueError: for an unknown name; the message lists the valid names.
    """
    return _REGISTRY.get(name)


def get(name):
    """Returns the `(generator_fn, discriminator_fn)` builders registered under `name`.

    Raises:
      ValueError: for an unknown name; the message lists the valid names.
    """
    network = facts(name)
    return network.generator, network.discriminator
