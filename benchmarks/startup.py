"""Seconds from `train.py` start to its first step on a folder of your own images.

    python benchmarks/startup.py [--images=10000] [--size=64] [--source_size=96] [--override=KEY=VALUE]

Writes `--images` PNG files (random smooth colour images of `--source_size` px, so that each is
cropped and resized) into a temporary folder, then runs `train.py --config=configs/images.py`
on it twice in fresh processes, for one step: first with an empty cache (every image decoded),
then again with the cache made by the first (a rerun or another run on the same folder). Each
line of train.py's output is stamped as it arrives; the table gives the seconds until the
"Images: ..." line (the data opened: listed, decoded or read from the cache, counted) and until
the first epoch's line (the first step done: networks built, traced, the weight-gradient choice
read or timed), and the process's total. The metrics are off (`inception_path=None`) and so is
the sample grid's cost beyond one small grid, so the numbers are the data's and the step's.
Run it on a quiet machine: the header gives the CPU and its flags.
"""

import os
import subprocess
import sys
import tempfile
import time

import machine  # noqa: F401  (first: sets oneDNN and TF's log level, puts the project first on sys.path)
import numpy as np
import own_flags
import tensorflow as tf
from absl import app, flags

FLAGS = flags.FLAGS


def define_flags(values=FLAGS):
    """The command line's flags, on `values` (defined when run, not when imported: other
    benchmarks define the same names; `run` defines them on its own `FlagValues`)."""
    flags.DEFINE_integer("images", 10_000, "PNG files in the folder.", flag_values=values)
    flags.DEFINE_integer("size", 64, "The image size trained at (px).", flag_values=values)
    flags.DEFINE_integer("source_size", 96, "The side of the PNG files written (px).", flag_values=values)
    flags.DEFINE_multi_string(
        "override", [], "KEY=VALUE passed to train.py as --config.KEY=VALUE (e.g. widths).", flag_values=values
    )


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_pngs(directory, count, side, seed=0):
    """`count` PNG files of random smooth colour images, `side` px square (64 distinct ones repeated)."""
    rng = np.random.default_rng(seed)
    encoded = []
    for _ in range(min(64, count)):
        coarse = rng.uniform(0, 255, (1, 6, 6, 3)).astype(np.float32)
        encoded.append(tf.io.encode_png(tf.cast(tf.image.resize(coarse, [side, side])[0], tf.uint8)).numpy())
    for i in range(count):
        with open(os.path.join(directory, f"{i:05d}.png"), "wb") as f:
            f.write(encoded[i % len(encoded)])


def stamped_run(command, env):
    """`{"images": s, "first_step": s, "total": s}` of one train.py run (None where a line never came)."""
    start = time.perf_counter()
    stamps = {"images": None, "first_step": None}
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in process.stdout:
        lines.append(line)
        now = time.perf_counter() - start
        if stamps["images"] is None and line.startswith("Images: "):
            stamps["images"] = now
        if stamps["first_step"] is None and line.lstrip().startswith("1/1 "):
            stamps["first_step"] = now
    if process.wait() != 0:
        raise SystemExit("train.py failed:\n" + "".join(lines[-30:]))
    stamps["total"] = time.perf_counter() - start
    return stamps


def _main(values):
    print(machine.header())
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "images")
        os.makedirs(folder)
        write_pngs(folder, values.images, values.source_size)
        print(f"{values.images} PNG files of {values.source_size} px, trained at {values.size} px", flush=True)
        env = {**os.environ, "TF_FUSEDPROP_CACHE": os.path.join(tmp, "cache")}
        rows = []
        for name in ("first run (empty cache)", "cached run"):
            command = [
                sys.executable,
                "train.py",
                "--config=configs/images.py",
                f"--config.data={folder}",
                f"--config.image_size={values.size}",
                "--config.steps=1",
                "--config.steps_per_epoch=1",
                "--config.steps_per_execution=1",
                "--config.eval_samples=0",
                "--config.grid_samples=4",
                "--config.inception_path=None",
                f"--workdir={os.path.join(tmp, 'run' + str(len(rows)))}",
                *(f"--config.{item}" for item in values.override),
            ]
            stamps = stamped_run(command, env)
            rows.append((name, stamps))
            print(f"  {name}: " + ", ".join(f"{k} {v:.1f} s" for k, v in stamps.items() if v is not None), flush=True)
    print()
    print("| run | s to the data opened ('Images:' line) | s to the first step | s in all |")
    print("|---|---|---|---|")
    for name, stamps in rows:
        cells = [f"{stamps[k]:.1f}" if stamps[k] is not None else "—" for k in ("images", "first_step", "total")]
        print(f"| {name} | " + " | ".join(cells) + " |")


run, main = own_flags.entry_points(define_flags, _main)

if __name__ == "__main__":
    define_flags()
    app.run(main)
