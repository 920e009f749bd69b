"""FusedProp paper, Table 2: SNGAN's CNN on CIFAR-10 with the nonsaturating loss.

`--config=configs/cifar10_cnn_ns.py` is AltGD (form alternating, the baseline);
`--config=configs/cifar10_cnn_ns.py:fused` is FusedProp. Adam(2e-4, beta1 0.5, beta2 0.999)
for both players, n_dis 1, batch 64, as in SNGAN and the paper's code.
"""

from configs import base


def get_config(variant=""):
    """`variant`: the training form, "alternating" (default) or "fused"."""
    config = base.get_cifar10_base_config()
    config.form = base.form_variant(variant, ("alternating", "fused"), "alternating")
    config.name = "cifar10_cnn_ns"
    config.network = "sngan_cnn"
    config.generator.width = 512
    config.discriminator.width = 64
    config.discriminator.spectral_norm = True
    config.loss = "nonsaturating"
    config.d_lr = 2e-4
    config.g_lr = 2e-4
    config.beta1 = 0.5
    config.beta2 = 0.999
    return config
