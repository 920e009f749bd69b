"""FusedProp paper, Table 2: SNGAN's ResNet on CIFAR-10 with the nonsaturating loss.

Two time-scale learning rates: D 4e-4, G 1e-4 (the paper's code README command); the
paper's second setting, G 0.5e-4, is `--config.g_lr=5e-5`. `--config=configs/cifar10_resnet_ns.py`
is AltGD (form alternating), `...:fused` is FusedProp. Adam(beta1 0.5, beta2 0.999), batch 64.
"""

from configs import base


def get_config(variant=""):
    """`variant`: the training form, "alternating" (default) or "fused"."""
    return base.get_cifar10_config(
        variant,
        name="cifar10_resnet_ns",
        network="sngan_resnet",
        loss="nonsaturating",
        forms=("alternating", "fused"),
        widths=(256, 128),
        d_lr=4e-4,
        g_lr=1e-4,
    )
