"""Images per second of a user's-images pipeline against what the fused step consumes.

    python benchmarks/pipeline.py [--sizes=32,64,128] [--images=2000] [--steps=6] [--batches=200]
    python benchmarks/pipeline.py --photos=2000 [--photo_size=64] [--sizes=]

Per image size: JPEG files are written (random smooth colour images of 1.5x the size, so that
each is cropped and resized), prepared once (`image_files.decode_once`: decode, crop, resize,
uint8 cache; its images/s printed too), then the training pipeline (`real_samples.uint8_images`, with
mirror flips) is iterated for `--batches` batches of 64, and the fused step of
`configs/images.py` at that size (`train_lib.build_gan`: SNGAN's CNN at its widths for the
size, `sngan.default_widths`, precision from the hardware) is timed for `--steps` steps on one batch. The table gives both in images/s
and their ratio; the pipeline must never be the bottleneck (issue 31: >= 5x at 64 px on 2
cores). Run it on a quiet machine: the header gives the CPU and its flags.

`--photos=N` first times the preparation of a folder of N phone-sized photos (4000x3000 JPEGs,
quality 90, smooth colours with sensor-like noise, ~3 MB each) at `--photo_size`, side by side:
as it was before issue 48 (every JPEG decoded at full size, one at a time: `workers=1,
reduce_jpegs=False`) and as `decode_once` does it now (reduced-size decoding, a thread per core).
"""

import os
import tempfile
import time

import machine  # noqa: F401  (first: sets oneDNN and TF's log level, puts the project first on sys.path)
import numpy as np
import own_flags
import tensorflow as tf
from absl import app, flags

from configs import images as images_config
from tf_fusedprop import machine as tf_machine
from tf_fusedprop import networks
from tf_fusedprop.experiment import image_files, real_samples, train_lib
from tf_fusedprop.networks import sngan

FLAGS = flags.FLAGS


def define_flags(values=FLAGS):
    """The command line's flags, on `values` (defined when run, not when imported: other
    benchmarks define the same names; `run` defines them on its own `FlagValues`)."""
    flags.DEFINE_list("sizes", ["32", "64", "128"], "Image sizes (px).", flag_values=values)
    flags.DEFINE_integer("images", 2000, "JPEG files written per size.", flag_values=values)
    flags.DEFINE_integer("batches", 200, "Pipeline batches (of 64) timed per size.", flag_values=values)
    flags.DEFINE_integer("steps", 6, "Fused steps timed per size (after 2 untimed ones).", flag_values=values)
    flags.DEFINE_integer("batch_size", 64, "Real images per step.", flag_values=values)
    flags.DEFINE_integer(
        "generator_width", None, "G's width (default: configs/images.py's for the size).", flag_values=values
    )
    flags.DEFINE_integer(
        "photos", 0, "Phone-sized JPEGs (4000x3000) to prepare, before and after (0: none).", flag_values=values
    )
    flags.DEFINE_integer("photo_size", 64, "The target size the photos are prepared at (px).", flag_values=values)
    flags.DEFINE_integer(
        "discriminator_width", None, "D's width (default: configs/images.py's for the size).", flag_values=values
    )


def write_jpegs(directory, count, size, seed=0):
    """`count` JPEG files of random smooth colour images, `size * 3 / 2` square."""
    rng = np.random.default_rng(seed)
    side = size * 3 // 2
    for i in range(count):
        coarse = rng.uniform(0, 255, (1, 8, 8, 3)).astype(np.float32)
        image = tf.cast(tf.image.resize(coarse, [side, side])[0], tf.uint8)
        tf.io.write_file(os.path.join(directory, f"{i:05d}.jpg"), tf.io.encode_jpeg(image, quality=90))


def write_photos(directory, count, distinct=8, seed=0):
    """`count` 4000x3000 JPEG files, `distinct` different ones repeated (decoding costs the same)."""
    rng = np.random.default_rng(seed)
    encoded = []
    for _ in range(min(distinct, count)):
        coarse = rng.uniform(0, 255, (1, 12, 16, 3)).astype(np.float32)
        smooth = tf.image.resize(coarse, [3000, 4000])[0]
        noisy = tf.clip_by_value(smooth + rng.normal(0, 6, (3000, 4000, 3)).astype(np.float32), 0, 255)
        encoded.append(tf.io.encode_jpeg(tf.cast(noisy, tf.uint8), quality=90).numpy())
    for i in range(count):
        with open(os.path.join(directory, f"IMG_{i:05d}.jpg"), "wb") as f:
            f.write(encoded[i % distinct])
    return sum(len(e) for e in encoded) / len(encoded)


def photos_per_second(count, size):
    """Prints and returns images/s of preparing `count` photos at `size`: before, now."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "photos")
        os.makedirs(folder)
        mean_bytes = write_photos(folder, count)
        print(f"photos: {count} JPEGs of 4000x3000, {mean_bytes / 1e6:.1f} MB each, prepared at {size} px", flush=True)
        rates = {}
        for name, options in (("before", {"workers": 1, "reduce_jpegs": False}), ("now", {})):
            start = time.perf_counter()
            image_files.decode_once(folder, size, os.path.join(tmp, f"cache_{name}"), **options)
            rates[name] = count / (time.perf_counter() - start)
            print(f"  {name}: {rates[name]:.1f} images/s ({10_000 / rates[name] / 60:.1f} min per 10,000)", flush=True)
    print(
        "\n| photos at {0} px | before (full decode, 1 thread) | now (reduced decode, {1} threads) | now / before |\n"
        "|---|---|---|---|\n| images/s | {2:.1f} | {3:.1f} | {4:.2f}x |\n".format(
            size, tf_machine.cores(), rates["before"], rates["now"], rates["now"] / rates["before"]
        )
    )
    return rates


def pipeline_images_per_second(images, batches, batch_size):
    """Images/s of iterating `real_samples.uint8_images` (mirror on) for `batches` batches, after a warm-up."""
    iterator = iter(real_samples.uint8_images(images, batch_size, seed=0, mirror=True))
    for _ in range(5):
        next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator).numpy()
    return batches * batch_size / (time.perf_counter() - start)


def step_images_per_second(size, batch_size, steps, real, generator_width=None, discriminator_width=None):
    """Real images/s that the fused step of configs/images.py at `size` consumes (the widths: None
    for configs/images.py's at `size`)."""
    config = images_config.get_config()
    config.update(image_size=size, batch_size=batch_size, steps_per_execution=1)
    g_width, d_width = sngan.default_widths(size)
    config.generator.width = generator_width or g_width
    config.discriminator.width = discriminator_width or d_width
    gan = train_lib.build_gan(config, network_inputs=networks.facts(config.network).inputs((size, size, 3)))
    step = tf.function(gan.train_step)
    for _ in range(2):
        float(step(real)["d_loss"])
    start = time.perf_counter()
    for _ in range(steps):
        logs = step(real)
    float(logs["d_loss"])
    return steps * batch_size / (time.perf_counter() - start)


def _main(values):
    print(machine.header())
    if values.photos:
        photos_per_second(values.photos, values.photo_size)
    rows = []
    for size in map(int, values.sizes):
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(tmp, "images")
            os.makedirs(folder)
            write_jpegs(folder, values.images, size)
            start = time.perf_counter()
            prepared = image_files.decode_once(folder, size, os.path.join(tmp, "cache"))
            decode = values.images / (time.perf_counter() - start)
        pipeline = pipeline_images_per_second(prepared.images, values.batches, values.batch_size)
        real = tf.constant(real_samples.from_uint8(prepared.images[: values.batch_size]))
        step = step_images_per_second(
            size, values.batch_size, values.steps, real, values.generator_width, values.discriminator_width
        )
        rows.append((size, decode, pipeline, step))
        print(
            f"  {size} px: prepared {decode:.0f} images/s, pipeline {pipeline:.0f} images/s, fused step {step:.1f} images/s",
            flush=True,
        )
    if not rows:
        return
    print()
    print(
        "| size | prepare once (decode, crop, resize) images/s | pipeline images/s | fused step images/s | pipeline / step |"
    )
    print("|---|---|---|---|---|")
    for size, decode, pipeline, step in rows:
        print(f"| {size} px | {decode:.0f} | {pipeline:.0f} | {step:.1f} | {pipeline / step:.0f}x |")


run, main = own_flags.entry_points(define_flags, _main)

if __name__ == "__main__":
    define_flags()
    app.run(main)
