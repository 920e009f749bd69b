"""keras-io's "DCGAN overriding train_step", ported to `tf_fusedprop.FusedPropGAN`.

    python examples/keras_dcgan.py                       # makes a small folder of images itself
    python examples/keras_dcgan.py --images=DIR --epochs=20 --form=alternating
    python examples/keras_dcgan.py --steps=4 --out=/tmp/dcgan   # a smoke run (what the test does)

The user's GAN is kept as it was: images from a folder through
`keras.utils.image_dataset_from_directory`, a Sequential G and D of plain Keras layers, a
callback that reads `self.model.generator` and saves sample images, `ModelCheckpoint`,
`model.save` and `keras.models.load_model`. What changes (docs/porting.md says why, line by
line): the data go to [-1, 1] and G ends in tanh; D ends in a logit (`Dense(1)`, no sigmoid:
the loss applies it); the GAN class and its `train_step` are gone, `FusedPropGAN` is the model;
`compile` takes the two optimizers and no loss (the loss is a constructor argument).

Writes under `--out` (default `runs/keras_dcgan`): `samples/epoch_XXX_k.png` (the callback),
`gan.keras` (ModelCheckpoint, every epoch), `generator/` (the exported SavedModel), and prints
the reloaded model's agreement with the trained one.
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tf_fusedprop as fp  # noqa: E402  (first: it loads TensorFlow without TensorFlow's start-up lines)

# isort: split
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import layers  # noqa: E402

LATENT_DIM = 64
IMAGE_SIZE = 32


def make_image_folder(directory, count=96, seed=0):
    """A folder of `count` 32x32 PNGs (coloured discs on dark backgrounds) to train on when the
    user gives none: something a small GAN can learn in minutes on a CPU."""
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:IMAGE_SIZE, :IMAGE_SIZE]
    for i in range(count):
        center, radius = rng.uniform(8, 24, 2), rng.uniform(4, 10)
        disc = ((yy - center[0]) ** 2 + (xx - center[1]) ** 2 <= radius**2)[..., None]
        image = np.where(disc, rng.uniform(128, 255, 3), rng.uniform(0, 60, 3)).astype(np.uint8)
        tf.io.write_file(os.path.join(directory, f"disc_{i:03d}.png"), tf.io.encode_png(image))
    return directory


def dataset(directory, batch_size):
    """The folder's images as batches in [-1, 1] (keras-io scales to [0, 1]; GANs train in [-1, 1])."""
    images = keras.utils.image_dataset_from_directory(
        directory, label_mode=None, image_size=(IMAGE_SIZE, IMAGE_SIZE), batch_size=batch_size, shuffle=True, seed=0
    )
    return images.map(lambda x: x / 127.5 - 1.0)


def discriminator_for(form):
    """keras-io's D, ending in a logit. The single-pass forms "inverse" and "adaptive" scale the
    gradients inside D's parametrized layers: they need tf_fusedprop.layers (same arguments)."""
    conv, dense = (
        (fp.layers.Conv2D, fp.layers.Dense) if form in ("inverse", "adaptive") else (layers.Conv2D, layers.Dense)
    )
    return keras.Sequential(
        [
            keras.Input(shape=(IMAGE_SIZE, IMAGE_SIZE, 3)),
            conv(32, kernel_size=4, strides=2, padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            conv(64, kernel_size=4, strides=2, padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Flatten(),
            layers.Dropout(0.2),  # per sample: every form takes it (BatchNorm in D the single-pass forms refuse)
            dense(1),  # a logit: no sigmoid
        ],
        name="discriminator",
    )


def generator():
    """keras-io's G at 32x32, ending in tanh (images in [-1, 1])."""
    return keras.Sequential(
        [
            keras.Input(shape=(LATENT_DIM,)),
            layers.Dense(8 * 8 * 64),
            layers.Reshape((8, 8, 64)),
            layers.Conv2DTranspose(64, kernel_size=4, strides=2, padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2DTranspose(32, kernel_size=4, strides=2, padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2D(3, kernel_size=5, padding="same", activation="tanh"),
        ],
        name="generator",
    )


class GANMonitor(keras.callbacks.Callback):
    """keras-io's callback, unchanged but for the range (and PNGs written without Pillow):
    saves `num_img` samples every epoch, reading `self.model.generator` as before."""

    def __init__(self, directory, num_img=3, latent_dim=LATENT_DIM):
        super().__init__()
        self.directory, self.num_img, self.latent_dim = directory, num_img, latent_dim
        self.seed_generator = keras.random.SeedGenerator(42)

    def on_epoch_end(self, epoch, logs=None):
        random_latent_vectors = keras.random.normal(shape=(self.num_img, self.latent_dim), seed=self.seed_generator)
        generated_images = self.model.generator(random_latent_vectors)
        generated_images = (generated_images + 1.0) * 127.5  # keras-io: generated_images *= 255
        os.makedirs(self.directory, exist_ok=True)
        for i in range(self.num_img):
            # keras-io saves with keras.utils.array_to_img(...).save(), which needs Pillow.
            img = tf.cast(tf.clip_by_value(tf.round(generated_images[i]), 0, 255), tf.uint8)
            tf.io.write_file(os.path.join(self.directory, f"epoch_{epoch:03d}_{i}.png"), tf.io.encode_png(img))


def main(argv=None):
    """Trains the ported DCGAN; returns the path of the exported generator."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", help="a folder of images (default: make one under --out)")
    parser.add_argument("--out", default="runs/keras_dcgan")
    parser.add_argument("--form", default="fused", choices=fp.FORMS)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=None, help="steps per epoch (default: the whole folder)")
    parser.add_argument("--batch_size", type=int, default=32)
    args = parser.parse_args(argv)

    images = args.images or make_image_folder(os.path.join(args.out, "images"))
    keras.utils.set_random_seed(0)
    gan = fp.FusedPropGAN(generator(), discriminator_for(args.form), loss="nonsaturating", form=args.form, seed=0)
    gan.compile(
        d_optimizer=keras.optimizers.Adam(learning_rate=0.0002, beta_1=0.5),
        g_optimizer=keras.optimizers.Adam(learning_rate=0.0002, beta_1=0.5),
    )
    checkpoint = os.path.join(args.out, "gan.keras")
    gan.fit(
        dataset(images, args.batch_size).repeat() if args.steps else dataset(images, args.batch_size),
        epochs=args.epochs,
        steps_per_epoch=args.steps,
        callbacks=[
            GANMonitor(os.path.join(args.out, "samples"), num_img=3),
            keras.callbacks.ModelCheckpoint(checkpoint),
        ],
        verbose=2,
    )

    reloaded = keras.models.load_model(checkpoint)
    z = keras.random.normal((4, LATENT_DIM), seed=1)
    agreement = float(np.max(np.abs(reloaded.generator(z) - gan.generator(z))))
    print(f"reloaded {checkpoint}: |G_reloaded(z) - G(z)| <= {agreement:.1e}")
    exported = os.path.join(args.out, "generator")
    gan.export_generator(exported)
    served = tf.saved_model.load(exported)  # keep the loaded object: its variables live as long as it does
    print(f"exported {exported}: serve(z) has shape {tuple(served.serve(z).shape)}")
    return exported


if __name__ == "__main__":
    main()
