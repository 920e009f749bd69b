"""Class-conditional digits: the default digits run with a label per sample, FusedProp.

G's BatchNorms are class-conditional and D is a projection discriminator (Miyato & Koyama
2018) whose class embedding is a `tf_fusedprop.layers.Embedding`, so every form is exact.
The sample grid has one digit class per row; besides FID it reports the class accuracy of the
generated samples under the digits classifier (the share classified as the requested digit).
"""

from configs import digits


def get_config():
    """configs/digits.py with `num_classes=10`."""
    config = digits.get_config()
    config.name = "digits_conditional"
    config.num_classes = 10
    config.grid_samples = 100  # 10 classes x 10 samples
    return config
