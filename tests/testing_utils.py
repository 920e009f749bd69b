"""The suite's base class, tiny networks and helpers shared by the tests (8x8 images)."""

import contextlib
import functools
import os
from unittest import mock

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from tf_fusedprop import layers as fp_layers
from tf_fusedprop.experiment import callbacks, distribution, real_samples

LATENT = 4
IMAGE = (8, 8, 3)


class TestCase(tf.test.TestCase, parameterized.TestCase):
    """The one base class of the suite: TensorFlow's tensor assertions (`assertAllClose`...),
    temporary directories (`get_temp_dir`) and absl's `parameterized` decorators."""

    # tf.test.TestCase's deprecated `test_session` would be collected as an always-skipped test.
    test_session = None


def tiny_generator(dtype="float32", batch_norm=True):
    """Dense -> [BatchNorm] -> ReLU -> Dense -> tanh -> 8x8x3; BatchNorm exercises G's state."""
    inner = [keras.layers.Dense(16, dtype=dtype)]
    if batch_norm:
        inner.append(keras.layers.BatchNormalization(dtype=dtype))
    return keras.Sequential(
        [keras.Input((LATENT,), dtype=dtype)]
        + inner
        + [
            keras.layers.ReLU(dtype=dtype),
            keras.layers.Dense(int(np.prod(IMAGE)), activation="tanh", dtype=dtype),
            keras.layers.Reshape(IMAGE, dtype=dtype),
        ],
        name="generator",
    )


def tiny_discriminator(dtype="float32", spectral_norm=False, extra=None):
    """Conv2D(s2, same) -> Conv2D(valid) -> Dense: a conv D built from tf_fusedprop.layers."""
    extra = [] if extra is None else extra
    return keras.Sequential(
        [
            keras.Input(IMAGE, dtype=dtype),
            fp_layers.Conv2D(4, 3, strides=2, padding="same", spectral_norm=spectral_norm, dtype=dtype),
            keras.layers.LeakyReLU(0.1, dtype=dtype),
            fp_layers.Conv2D(4, 3, padding="valid", spectral_norm=spectral_norm, dtype=dtype),
            keras.layers.LeakyReLU(0.1, dtype=dtype),
            keras.layers.Flatten(dtype=dtype),
        ]
        + extra
        + [fp_layers.Dense(1, spectral_norm=spectral_norm, dtype=dtype)],
        name="discriminator",
    )


def tiny_pair(seed=0, dtype="float32", spectral_norm=False):
    """A (generator, discriminator) pair with deterministic weights."""
    keras.utils.set_random_seed(seed)
    return tiny_generator(dtype), tiny_discriminator(dtype, spectral_norm)


def tiny_conditional_pair(num_classes=3, seed=0, dtype="float32", spectral_norm=False):
    """A conditional (generator, discriminator) pair at 8x8x1: the digits networks with class-
    conditional BatchNorm in G and a projection head (with `layers.Embedding`) in D."""
    from tf_fusedprop import networks  # Lazy: most tests need no network builder.

    keras.utils.set_random_seed(seed)
    size = dict(image_size=8, width=4, dtype=dtype if dtype != "float32" else None, num_classes=num_classes)
    return (
        networks.digits_generator(latent_dim=LATENT, **size),
        networks.digits_discriminator(spectral_norm=spectral_norm, **size),
    )


def tiny_labelled_batch(n=6, num_classes=3, seed=1, dtype="float32"):
    """(real, z, real_labels, fake_labels) for `tiny_conditional_pair`: 8x8x1 images."""
    rng = np.random.default_rng(seed)
    real = rng.uniform(-1, 1, size=(n, 8, 8, 1)).astype(dtype)
    z = rng.normal(size=(n, LATENT)).astype(dtype)
    labels = rng.integers(0, num_classes, size=(2, n)).astype("int32")
    return tf.constant(real), tf.constant(z), tf.constant(labels[0]), tf.constant(labels[1])


def tiny_batch(n=6, seed=1, dtype="float32"):
    """(real, z): real images in [-1, 1] and latents, batch `n`."""
    rng = np.random.default_rng(seed)
    real = rng.uniform(-1, 1, size=(n,) + IMAGE).astype(dtype)
    z = rng.normal(size=(n, LATENT)).astype(dtype)
    return tf.constant(real), tf.constant(z)


class StateSnapshot:
    """Saves and restores a model's non-trainable variables (spectral-norm u, BN statistics)."""

    def __init__(self, *models):
        self._vars = [v for m in models for v in m.non_trainable_variables]
        self._values = [v.numpy() for v in self._vars]

    def restore(self):
        for v, value in zip(self._vars, self._values):
            v.assign(value)


def split_cpu_in_two():
    """Splits the CPU into two logical devices (`tests/conftest.py` does, before any test)."""
    distribution.split_cpu(2)


@functools.cache
def two_cpu_strategy():
    """The `MirroredStrategy` over the two logical CPUs of `split_cpu_in_two`, one per process:
    a second strategy would number its collectives from the same keys, and the runtime keeps
    each key's shape, so a collective of another shape under the same key fails ("Shape mismatch
    in the collective instance 100")."""
    if len(tf.config.list_logical_devices("CPU")) < 2:
        raise RuntimeError("the CPU is not split in two: run the tests with pytest (tests/conftest.py splits it)")
    return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


def run_script(script, timeout=300, env=None):
    """Runs a Python `script` in a fresh process from the project root (TensorFlow quiet unless
    `env` says otherwise); returns the `subprocess.CompletedProcess` (text output)."""
    import subprocess  # Lazy: most tests run in this process.
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"} if env is None else env
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=root, env=env, timeout=timeout
    )


def run_benchmark(script, *args, timeout=300):
    """Runs `benchmarks/<script>` with `args` in a fresh process from the project root, as a user
    would; returns the `subprocess.CompletedProcess` (text output)."""
    import subprocess  # Lazy: most tests run in this process.
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return subprocess.run(
        [sys.executable, os.path.join("benchmarks", script), *args],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=timeout,
    )


def printed_by(run, argv):
    """The lines a benchmark's `run(argv)` prints, run in this process (no fresh interpreter and
    TensorFlow import per test); an error raises, its traceback the test's."""
    import contextlib  # Lazy: few tests need it.
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run(argv)
    return out.getvalue().splitlines()


def marked_lines(stdout):
    """`{MARK: rest}` of the lines of a script's output that start with an upper-case word."""
    return dict(line.split(" ", 1) for line in stdout.splitlines() if line.split(" ")[0].isupper() and " " in line)


def max_relative_difference(actual, expected):
    """max |a - e| over all tensors, divided by max |e| over all tensors."""
    actual, expected = (
        [np.asarray(tf.convert_to_tensor(t)) for t in ts] for ts in (actual, expected)
    )  # dense IndexedSlices
    scale = max(float(np.max(np.abs(e))) for e in expected)
    return max(float(np.max(np.abs(a - e))) for a, e in zip(actual, expected)) / scale


# --------------------------------------------------------------------------------------------
# Shared by the experiment-harness tests (tests/experiment/ and tests/train_test.py); appended
# here, so their imports stand below the core's helpers.
# --------------------------------------------------------------------------------------------

import glob  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

from configs import (  # noqa: E402
    cifar10_cnn_hinge,
    cifar10_cnn_ns,
    cifar10_resnet_ns,
    cifar10_resnet_projection,
    digits,
    digits32,
    digits_conditional,
    grid25,
    images,
    mnist,
    mnist1k64,
    mnist64,
    ring8,
)

#: Every shipped config file in configs/, by name.
CONFIG_MODULES = {
    module.__name__.split(".")[-1]: module
    for module in (
        digits,
        digits_conditional,
        digits32,
        images,
        mnist,
        mnist64,
        mnist1k64,
        ring8,
        grid25,
        cifar10_cnn_ns,
        cifar10_cnn_hinge,
        cifar10_resnet_ns,
        cifar10_resnet_projection,
    )
}


def read_events(directory):
    """`{tag: [(step, plugin_name, tensor as numpy)]}` of every TensorBoard event file in `directory`."""
    records = {}
    for path in sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*"))):
        for raw in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(raw.numpy())
            for value in event.summary.value:
                tensor = tf.make_ndarray(value.tensor)
                records.setdefault(value.tag, []).append((event.step, value.metadata.plugin_data.plugin_name, tensor))
    return records


def tiny_config(name, variant="", cache_dir=None):
    """The shipped config `name` (`configs/<name>.py[:variant]`) shrunk to seconds: 2 steps of
    batch 8 in 2 epochs (a warm start's switch between them), small widths, 20 evaluation samples."""
    module = CONFIG_MODULES[name]
    config = module.get_config(variant) if variant else module.get_config()
    config.update(
        batch_size=8,
        steps=2,
        steps_per_epoch=1,
        steps_per_execution=1,
        latent_dim=8,
        grid_samples=4,
        eval_samples=20,
        cache_dir=cache_dir,
        mixed_precision="float32",  # what "auto" picks depends on the machine; tests must not
    )
    widths = {
        "digits": {"width": (4, 4)},
        "mlp": {"units": (8, 8), "hidden_layers": (1, 1)},
        "sngan_cnn": {"width": (16, 4)},
        "sngan_resnet": {"width": (8, 8)},
    }
    for key, (g_value, d_value) in widths[config.network].items():
        config.generator[key], config.discriminator[key] = g_value, d_value
    if "eval_real_samples" in config:
        config.eval_real_samples = 16
    if config.warmup:  # a warm start shrunk with the schedule: step 1 alternating, step 2 the config's form
        config.warmup = 1
    return config


def image_folder(directory, count=8, size=8):
    """Writes `count` gray PNG files of `size` x `size` (a gradient, a different one each) into
    `directory`, a folder of images for `configs/images.py`; returns it."""
    os.makedirs(directory, exist_ok=True)
    ramp = np.linspace(0, 255, size * size).reshape(size, size, 1)
    for i in range(count):
        image = np.round((ramp + 255 * i / count) % 256).astype(np.uint8)
        tf.io.write_file(os.path.join(directory, f"{i:04d}.png"), tf.io.encode_png(image))
    return directory


def h5_arrays(path):
    """`{name: array}` of every dataset of a Keras `.weights.h5` file."""
    import h5py  # Keras's own dependency, only needed here.

    arrays = {}
    with h5py.File(path, "r") as f:
        f.visititems(
            lambda name, item: arrays.update({name: np.asarray(item[()])}) if isinstance(item, h5py.Dataset) else None
        )
    return arrays


def weights_are_finite(path):
    """Whether every float array of a Keras `.weights.h5` file is finite (and there is one)."""
    import h5py  # Keras's own dependency, only needed here.

    arrays = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, item: arrays.append(np.asarray(item[()])) if isinstance(item, h5py.Dataset) else None)
    floats = [a for a in arrays if np.issubdtype(a.dtype, np.floating)]
    return bool(floats) and all(np.all(np.isfinite(a)) for a in floats)


def class_temp_dir(test_class):
    """A temporary directory for all tests of `test_class` (from its `setUpClass`), removed
    after them: e.g. a cache that one test fills and the others reuse."""
    directory = tempfile.mkdtemp()
    test_class.addClassCleanup(shutil.rmtree, directory, ignore_errors=True)
    return directory


# --------------------------------------------------------------------------------------------
# Local network endpoints for the download tests (nothing leaves 127.0.0.1).
# --------------------------------------------------------------------------------------------

import http.server  # noqa: E402
import socket  # noqa: E402
import threading  # noqa: E402


def closed_port_url(path="/"):
    """An http URL on 127.0.0.1 where nothing listens: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


@contextlib.contextmanager
def silent_server():
    """Yields the http URL of a port that accepts connections but never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/"


@contextlib.contextmanager
def http_server(routes):
    """Serves `routes` (`{path with query: bytes}`; other paths: 404) on 127.0.0.1 from a
    thread; yields `(base_url, requests)`, `requests` the list of paths asked for (HEAD
    requests as `"HEAD <path>"`)."""
    requests = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self, head=False):
            requests.append(f"HEAD {self.path}" if head else self.path)
            body = routes.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            if not head:
                self.wfile.write(body or b"")

        def do_HEAD(self):
            self.do_GET(head=True)

        def log_message(self, *args):  # Quiet.
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def write_image_tree(root, count=6):
    """Digits as files in class folders `zero/` and `one/`: PNG and JPEG (gray and RGB), an RGBA
    PNG, a BMP, a GIF and a (lossless) WebP, a corrupt JPEG and a text file; returns
    `{relative path: the uint8 gray digit written}` of the decodable files."""
    digits = np.round((real_samples.digits_array(16) + 1.0) * 127.5).astype(np.uint8)
    written = {}
    for index in range(count):
        for label, name in ((0, "zero"), (1, "one")):
            digit = digits[real_samples.digits_labels() == label][index]
            os.makedirs(os.path.join(root, name), exist_ok=True)
            path = os.path.join(name, f"{index}.png" if index % 2 else f"{index}.jpg")
            rgb = np.repeat(digit, 3, axis=-1) if index % 3 == 0 else digit
            encoded = tf.io.encode_png(rgb) if index % 2 else tf.io.encode_jpeg(rgb, quality=100)
            tf.io.write_file(os.path.join(root, path), encoded)
            written[path] = digit
    from PIL import Image  # Lazy: matplotlib's dependency, in the test extra (BMP, GIF and WebP writers)

    rgba = np.concatenate([np.repeat(digits[1], 3, axis=-1), np.full((16, 16, 1), 128, np.uint8)], axis=-1)
    tf.io.write_file(os.path.join(root, "one", "alpha.png"), tf.io.encode_png(rgba))
    Image.fromarray(digits[2][..., 0]).save(os.path.join(root, "zero", "b.bmp"))
    Image.fromarray(digits[3][..., 0]).save(os.path.join(root, "one", "g.gif"))
    Image.fromarray(np.repeat(digits[4], 3, axis=-1)).save(os.path.join(root, "zero", "w.webp"), lossless=True)
    written.update(
        {"one/alpha.png": digits[1], "zero/b.bmp": digits[2], "one/g.gif": digits[3], "zero/w.webp": digits[4]}
    )
    with open(os.path.join(root, "one", "corrupt.jpg"), "wb") as f:
        f.write(b"\xff\xd8 not a jpeg")
    open(os.path.join(root, "notes.txt"), "w").close()  # not an image: ignored
    return written


class InceptionModuleStandIn(tf.Module):
    """Stands in for TF-GAN's Inception SavedModel (save it where a run loads one): pool_3 = per-channel means, logits = input height, width."""

    @tf.function(input_signature=[tf.TensorSpec([None, None, None, 3], tf.float32)])
    def __call__(self, images):
        size = tf.cast(tf.shape(images)[1:3], tf.float32)
        return {
            "pool_3": tf.reduce_mean(images, axis=[1, 2]),
            "logits": tf.tile(size[None], [tf.shape(images)[0], 1]),
        }


class StoppedAfterCheckpoint(Exception):
    """Raised inside `stopped_after_checkpoint` where a kill would have landed."""


@contextlib.contextmanager
def stopped_after_checkpoint(epochs=1):
    """Within it, a training run in this process raises `StoppedAfterCheckpoint` right after its
    checkpoint of epoch `epochs` is written: the workdir is left as a kill at that point leaves
    it (`train_test`'s SIGKILL test kills a real process there)."""
    save = callbacks.BackupAndRestore.on_epoch_end

    def save_then_stop(checkpoint, epoch, logs=None):
        save(checkpoint, epoch, logs)
        if epoch + 1 == epochs:
            raise StoppedAfterCheckpoint(f"stopped after the checkpoint of epoch {epochs}")

    with mock.patch.object(callbacks.BackupAndRestore, "on_epoch_end", save_then_stop):
        yield


def small_disk(test, megabytes=2):
    """A directory on a tmpfs of `megabytes`, mounted for `test` and unmounted after it: a real
    file system that fills up. Mounting needs root (or a user namespace's); where it is refused
    the test is skipped, saying so."""
    import subprocess  # Lazy: most tests run in this process.
    import unittest

    directory = tempfile.mkdtemp(dir=test.get_temp_dir())
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", directory], capture_output=True, text=True
    )
    if mounted.returncode:
        raise unittest.SkipTest(f"cannot mount a small tmpfs here: {mounted.stderr.strip() or mounted.returncode}")
    test.addCleanup(subprocess.run, ["umount", "-l", directory], capture_output=True)
    return directory


def fill_disk(directory, keep=0):
    """Writes `directory/filler` until the disk holding it has at most `keep` bytes free; returns its path."""
    path = os.path.join(directory, "filler")
    with open(path, "wb") as f:
        chunk = b"\0" * 65536
        try:
            while shutil.disk_usage(directory).free > keep:
                f.write(chunk[: max(1, min(len(chunk), shutil.disk_usage(directory).free - keep))])
                f.flush()
        except OSError:
            pass
    return path


#: `train.py` whose run waits at G update `TF_FUSEDPROP_TEST_WAIT_AT` (after that train-function
#: call, before the other callbacks), having written `waiting` in its working directory, until a
#: signal ends it or the file is removed: a signal then lands mid-epoch at a known step.
WAITS_AT_STEP = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # as under a terminal (a background job ignores it)
import train
from tf_fusedprop.experiment import divergence
check = divergence.DivergenceMonitor.on_train_batch_end
def check_then_wait(self, batch, logs=None):
    check(self, batch, logs)
    if int(self.model.g_optimizer.iterations.numpy()) == int(os.environ.get("TF_FUSEDPROP_TEST_WAIT_AT", -1)):
        open("waiting", "w").close()
        deadline = time.monotonic() + 300
        while os.path.exists("waiting") and time.monotonic() < deadline:
            time.sleep(0.05)
divergence.DivergenceMonitor.on_train_batch_end = check_then_wait
sys.exit(train.run([train.__file__, *sys.argv[1:]]))
"""
