"""FusedProp paper, Table 2: SNGAN's CNN on CIFAR-10 with the hinge loss.

`--config=configs/cifar10_cnn_hinge.py` is AltGD (form alternating, the baseline);
`--config=configs/cifar10_cnn_hinge.py:inverse` is InvFusedProp (hinge has no FusedProp
factor). Adam(2e-4, beta1 0.5, beta2 0.999), n_dis 1, batch 64.
"""

from configs import base


def get_config(variant=""):
    """`variant`: the training form, "alternating" (default) or "inverse"."""
    return base.get_cifar10_config(
        variant,
        name="cifar10_cnn_hinge",
        network="sngan_cnn",
        loss="hinge",
        forms=("alternating", "inverse"),
        widths=(512, 64),
    )
