"""FusedProp paper, Table 2: SNGAN's ResNet on CIFAR-10 with the nonsaturating loss.

Two time-scale learning rates: D 4e-4, G 1e-4 (the paper's code README command); the
paper's second setting, G 0.5e-4, is `--config.g_lr=5e-5`. `--config=configs/cifar10_resnet_ns.py`
is AltGD (form alternating), `...:fused` is FusedProp. Adam(beta1 0.5, beta2 0.999), batch 64.
"""

from configs import base


def get_config(variant=""):
    """`variant`: the training form, "alternating" (default) or "fused"."""
    config = base.get_cifar10_base_config()
    config.form = base.form_variant(variant, ("alternating", "fused"), "alternating")
    config.name = "cifar10_resnet_ns"
    config.network = "sngan_resnet"
    config.generator.width = 256
    config.discriminator.width = 128
    config.discriminator.spectral_norm = True
    config.loss = "nonsaturating"
    config.d_lr = 4e-4
    config.g_lr = 1e-4
    config.beta1 = 0.5
    config.beta2 = 0.999
    return config
