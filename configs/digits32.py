"""scikit-learn's 1,797 digits at 32 px on SNGAN's CNN at the paper's widths: `configs/mnist.py`
on the other digit set (issue 30's second task).

    python train.py --config=configs/digits32.py[:alternating]
"""

from configs import mnist


def get_config(variant=""):
    """`configs/mnist.py`'s network, optimizers and schedule on scikit-learn's digits resized
    (bilinear) to 32 px; FID/KID of 1,797 samples (as many as the real digits) under a
    `DigitsClassifier` trained on them at 32 px. `variant`: the training form (default fused)."""
    config = mnist.get_config(variant)
    config.name = "digits32"
    config.dataset = "digits"
    config.eval_samples = 1_797
    return config
