"""Reference generators and discriminators.

* `sngan`: SNGAN's standard CNN for 32x32 images (FusedProp paper, Table 2, "CNN").
* `resnet`: SNGAN's ResNet for 32x32 images (FusedProp paper, Table 2, "ResNet").
* `small`: a DCGAN-style pair for 16x16 digits and MLPs for 2-D toys, for CPU-sized runs.
* `variable_dtype`: the dtype a model's inputs and D's last layer use under a dtype policy.

Every builder returns a functional `keras.Model`. Generators map `(batch, latent_dim)` latents
to samples (images in [-1, 1]); discriminators map samples to `(batch, 1)` raw logits and are
built only from `tf_fusedprop.layers` Conv2D/Dense with no normalization layers, so every
training form applies to them.
"""

from tf_fusedprop import _checks
from tf_fusedprop.networks.dtypes import variable_dtype
from tf_fusedprop.networks.resnet import GlobalSumPooling2D, resnet_discriminator, resnet_generator
from tf_fusedprop.networks.small import digits_discriminator, digits_generator, mlp_discriminator, mlp_generator
from tf_fusedprop.networks.sngan import cnn_discriminator, cnn_generator

__all__ = [
    "GlobalSumPooling2D",
    "cnn_discriminator",
    "cnn_generator",
    "digits_discriminator",
    "digits_generator",
    "get",
    "mlp_discriminator",
    "mlp_generator",
    "names",
    "resnet_discriminator",
    "resnet_generator",
    "variable_dtype",
]

_REGISTRY = {
    "sngan_cnn": (cnn_generator, cnn_discriminator),
    "sngan_resnet": (resnet_generator, resnet_discriminator),
    "digits": (digits_generator, digits_discriminator),
    "mlp": (mlp_generator, mlp_discriminator),
}


def names():
    """The registered network names."""
    return tuple(_REGISTRY)


def get(name):
    """Returns the `(generator_fn, discriminator_fn)` builders registered under `name`.

    Raises:
      ValueError: for an unknown name; the message lists the valid names.
    """
    return _checks.registered(_REGISTRY, "network", name)
