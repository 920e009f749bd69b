"""`configs/images.py`'s defaults on a small folder at 64 px, scored offline: MNIST-1k at 64 px.

`configs/mnist64.py` (images.py at 64 px on MNIST digits) on 1,000 of them (the first 100 of
each class of MNIST-5k), where D memorises the training images within a run that fits a
working session; G is scored against all 5,000 digits under the MNIST-5k classifier, so
memorised digits do not score as new ones. Issue 61's question: does adaptive augmentation
help where a user's folder is small?

    python train.py --config=configs/mnist1k64.py                # FusedProp
    python train.py --config=configs/mnist1k64.py:alternating    # the AltGD baseline
"""

from configs import mnist64


def get_config(variant=""):
    """`variant`: the training form (default fused; alternating is the baseline).

    mnist64's network, widths, optimizers, EMA and augmentation (none) on dataset mnist1k:
    5,000 G updates (320 passes over the 1,000 digits; 82 min a run on a 2-core Xeon with AMX,
    so one fits a session; without augmentation fused stalled to ~1,000 updates, was best at
    4,000, FID 14.6, and 72% worse by 5,000: the turn is inside the run) in epochs of 250,
    FID/KID of 5,000 samples against the 5,000 digits every 250 updates.
    """
    config = mnist64.get_config(variant)
    config.name = "mnist1k64"
    config.dataset = "mnist1k"
    config.steps = 5_000
    config.eval_every = 1
    return config
