"""FusedProp paper, Table 2: SNGAN's CNN on CIFAR-10 with the hinge loss.

`--config=configs/cifar10_cnn_hinge.py` is AltGD (form alternating, the baseline);
`--config=configs/cifar10_cnn_hinge.py:inverse` is InvFusedProp (hinge has no FusedProp
factor). Adam(2e-4, beta1 0.5, beta2 0.999), n_dis 1, batch 64.
"""

from configs import base


def get_config(variant=""):
    """`variant`: the training form, "alternating" (default) or "inverse"."""
    config = base.get_cifar10_base_config()
    config.form = base.form_variant(variant, ("alternating", "inverse"), "alternating")
    config.name = "cifar10_cnn_hinge"
    config.network = "sngan_cnn"
    config.generator.width = 512
    config.discriminator.width = 64
    config.discriminator.spectral_norm = True
    config.loss = "hinge"
    config.d_lr = 2e-4
    config.g_lr = 2e-4
    config.beta1 = 0.5
    config.beta2 = 0.999
    return config
