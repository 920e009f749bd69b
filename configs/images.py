"""Your own images: a folder (searched recursively), a .zip of one, or a TFDS dataset; FusedProp.

    python train.py --config=configs/images.py --config.data=PATH --config.image_size=64
    python train.py --config=configs/images.py:alternating --config.data=PATH   # the AltGD baseline
    python train.py --config=configs/images.py --config.data=tfds:fashion_mnist --config.image_size=32

The images are decoded once (centre-cropped to a square, resized with antialiasing, uint8)
into the user cache, keyed by the files and the resolution; a rerun or a resume reuses them
(`tf_fusedprop.experiment.image_files`). PNG, JPEG, BMP, GIF (first frame) and WebP; gray,
RGB and RGBA (transparent pixels composited onto `background`, white unless set: what
icons and cut-outs are drawn to be seen on; `none` keeps the colour stored beneath them); a
file that does not decode is skipped and reported.
FID, KID and IS against your images are on: TF-GAN's Inception module is fetched once into the
user cache (`inception_path="auto"`); offline, one line says they are off and training goes on
(`--config.inception_path=DIR` scores with a local copy, `--config.inception_path=None` turns them off).
"""

from ml_collections import config_dict

from configs import base


def get_config(variant=""):
    """`variant`: the training form (default fused; alternating is the baseline).

    SNGAN's CNN (D spectrally normalized; one up/down-sampling block per octave between the
    image and 4 px: 3 at 32 px, 4 at 64, 5 at 128, 6 at 256; 48 px starts from 6) with widths
    per resolution unless set (`--config.generator.width`, `--config.discriminator.width`): G
    512 / D 64 (the paper's) up to 64 px, 256 / 32 at 128 px, 128 / 16 at 256 px
    (`tf_fusedprop.networks.sngan.default_widths`: the larger maps would otherwise multiply a
    step's cost on a CPU), nonsaturating loss, batch 64, z of 128, Adam 2e-4 (beta1 0, beta2 0.999)
    and an EMA generator (decay 0.999) for samples, evaluation and export, as measured best on
    digits, its horizon ramped up (`ema.rampup` 0.05, StyleGAN2-ADA's: the half-life is at most
    5% of the updates so far, so the first grids show what G has learned; without it the EMA
    still held 78% of G's initial weights after the first 250 updates; on digits, 3 seeds, it
    made 0.999's final FID equal 0.995's instead of 0.65-0.8 worse: docs/guide.md); 64 px. `data` (required; `tfds:NAME[:SPLIT]` reads a TFDS dataset prepared in
    `data_dir`, its first image feature, split train by default), `channels` (1, 3, or None:
    gray when every image is gray, else RGB), `background` (what transparent pixels show:
    white, black, gray, "#rrggbb", or none: the colour stored beneath them), `mirror` (random x-flips), `conditional` (a
    class-conditional GAN, its classes the first level of subfolders or the TFDS `label`
    feature: `num_classes` is set from them and the names go to the workdir's `classes.json`). Evaluation: FID/IS of 5,000 samples against up to
    10,000 of your images every 5 epochs of 1,000 updates, under TF-GAN's Inception (`inception_path`:
    "auto" fetches it once when it can; a URL or a local copy's directory; None: off).
    """
    config = base.get_sngan_images_config(variant, name="images", dataset="images")
    config.generator.width = config_dict.placeholder(int)  # None: from image_size (docstring)
    config.discriminator.width = config_dict.placeholder(int)
    config.data = config_dict.placeholder(str)
    config.image_size = 64
    config.channels = config_dict.placeholder(int)
    config.background = "white"
    config.mirror = False
    config.conditional = False
    config.steps = 50_000
    config.steps_per_epoch = 1_000
    config.eval_samples = 5_000
    config.eval_every = 5
    config.eval_real_samples = 10_000
    config.grid_samples = 64
    config.ema.decay = 0.999
    config.ema.rampup = 0.05
    config.data_dir = config_dict.placeholder(str)
    config.inception_path = "auto"
    return config
