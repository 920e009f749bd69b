"""FusedProp paper, Table 2: SNGAN's CNN on CIFAR-10 with the nonsaturating loss.

`--config=configs/cifar10_cnn_ns.py` is AltGD (form alternating, the baseline);
`--config=configs/cifar10_cnn_ns.py:fused` is FusedProp. Adam(2e-4, beta1 0.5, beta2 0.999)
for both players, n_dis 1, batch 64, as in SNGAN and the paper's code.
"""

from configs import base


def get_config(variant=""):
    """`variant`: the training form, "alternating" (default) or "fused"."""
    return base.get_cifar10_config(
        variant,
        name="cifar10_cnn_ns",
        network="sngan_cnn",
        loss="nonsaturating",
        forms=("alternating", "fused"),
        widths=(512, 64),
    )
