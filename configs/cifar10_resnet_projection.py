"""Class-conditional CIFAR-10 in the SNGAN-projection setting (Miyato & Koyama, ICLR 2018).

SNGAN's ResNet with class-conditional BatchNorm in G and a projection discriminator (its class
embedding a `tf_fusedprop.layers.Embedding`, spectrally normalized like every layer of D), the
hinge loss, Adam(2e-4, beta1 0, beta2 0.9), batch 64, 50k G updates.

`--config=configs/cifar10_resnet_projection.py` is the paper's AltGD baseline with n_dis 5;
`:inverse` and `:adaptive` are InvFusedProp (the hinge loss has no FusedProp factor) with one
D update per G update, as every simultaneous form has.
"""

from configs import base


def get_config(variant=""):
    """`variant`: "alternating" (default, n_dis 5), "inverse" or "adaptive"."""
    config = base.get_cifar10_config(
        variant,
        name="cifar10_resnet_projection",
        network="sngan_resnet",
        loss="hinge",
        forms=("alternating", "inverse", "adaptive"),
        widths=(256, 128),
    )
    config.num_classes = 10
    config.n_dis = 5 if config.form == "alternating" else 1
    config.beta1, config.beta2 = 0.0, 0.9
    config.steps = 50_000
    config.grid_samples = 100  # 10 classes x 10 samples
    return config
