"""A user's own images: a folder (searched recursively), a `.zip` of one, or a TFDS dataset
(`tfds:NAME[:SPLIT]`), decoded once.

    prepared = image_files.decode_once("photos/", image_size=64, cache_dir=downloads.user_cache_dir())
    prepared.images      # uint8 [n, 64, 64, channels]: centre-cropped, resized with antialiasing

`open_source(path)` lists the image files of a folder or zip (PNG, JPEG, BMP, GIF: its first
frame, WebP), sorted, with the first level of subfolders as class names. `decode_once` decodes
every file once, centre-crops it to a square and resizes it with antialiasing to
`image_size`, and keeps the result as uint8 in the cache (`cache_dir/images/`), keyed by a
fingerprint of the source's file list, sizes and modification times (a zip: its members'
CRCs) with the resolution and channels: a rerun, a resume or another run on the same data
reuses it (a TFDS dataset: keyed by its name, version, split and data_dir). The cache is a
directory of raw uint8 images, read memory-mapped. A file that cannot be used is skipped,
so that a run does not die in epoch 7 on a bad JPEG: counted apart from the decoded ones, the
first few named with their reasons in the preparation line, all of them in the cache's
`skipped.txt`; what TensorFlow's decoders print about them is hidden.

Each file's bytes become a square image in `image_decoding` (`image_decoding.decode`): the
format known by its first bytes, a JPEG's EXIF orientation applied before the crop (a phone's
portrait photo comes out upright), transparency composited onto `background`, the crop and the
antialiased resize. This module lists the files, reads them, decodes them in parallel, keeps
the result in the cache and says what was skipped.

Speed: files are read in order and decoded on every core (threads; TensorFlow's decoders release
the GIL), and a JPEG at least twice the target size is decoded at a fraction of its size
(`image_decoding.decode`), so a folder of phone photos prepares at the speed of the decoder
rather than of a full-size decode and resize (`benchmarks/pipeline.py --photos`).

Channels: 1 (gray) or 3 (RGB) as asked, or from the data: gray when every image is gray (or
gray with alpha), else RGB, gray images replicated.

Transparency: an image with an alpha channel is composited onto `background` (white by
default; `image_decoding.background_color`) before it is cropped and resized, so the colour
stored under transparent pixels never shows; "none" keeps that colour (alpha dropped, what
versions before 2026-12-06 did, and their caches). The preparation line counts the images
that had transparency.

The design follows StyleGAN2-ADA's `dataset_tool.py` (resize and crop once, ahead of
training) and its `ImageFolderDataset` (one reader for a folder or a zip, classes from the
folder names as Keras's `image_dataset_from_directory` takes them).
"""

import collections
import concurrent.futures
import dataclasses
import hashlib
import os
import time
import zipfile

import numpy as np
import tensorflow as tf

from tf_fusedprop import _startup, machine
from tf_fusedprop.experiment import files, image_decoding
from tf_fusedprop.experiment.data_errors import ImageSourceError, NotPreparedError

__all__ = [
    "IMAGE_EXTENSIONS",
    "DecodedImages",
    "ImageSourceError",
    "NotPreparedError",
    "Source",
    "UNDECODED_EXTENSIONS",
    "decode_once",
    "open_source",
]

#: File extensions read as images (lower case), as TensorFlow decodes them.
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp")
#: Image files TensorFlow does not decode (a phone's HEIC, a scanner's TIFF...): listed too, so
#: that each is named as skipped in the preparation line instead of left out without a word.
UNDECODED_EXTENSIONS = (".tif", ".tiff", ".heic", ".heif", ".avif", ".jxl", ".dng", ".cr2", ".nef", ".arw")
#: The cache's list of the files skipped, a path and its reason per line.
SKIPPED = "skipped.txt"
#: Bump when decoding, cropping or resizing changes (`image_decoding`): it is part of the cache's name.
VERSION = 3  # 2: EXIF orientation applied; 3: large JPEGs decoded reduced


@dataclasses.dataclass(frozen=True)
class Source:
    """The image files of a folder or zip.

    Attributes:
      path: the folder or `.zip` as given.
      members: the image files' paths relative to the folder (or inside the zip), sorted, `/`-separated.
      fingerprint: a hex digest of the file list with each file's size and modification time
        (a zip: size and CRC): it changes when a file is added, removed or rewritten.
    """

    path: str
    members: tuple
    fingerprint: str

    @property
    def is_zip(self):
        """Whether the images are read from a zip file."""
        return not os.path.isdir(self.path)

    def class_names(self):
        """The first-level subfolders holding images, sorted, or None when an image lies at the top level."""
        if any("/" not in member for member in self.members):
            return None
        return sorted({member.split("/", 1)[0] for member in self.members})

    def read(self, member, archive=None):
        """The bytes of one member (`archive`: the source's open `zipfile.ZipFile`, if a zip)."""
        if archive is not None:
            return archive.read(member)
        with open(os.path.join(self.path, *member.split("/")), "rb") as f:
            return f.read()


def _is_image(name):
    base = os.path.basename(name)
    return not base.startswith(".") and os.path.splitext(base)[1].lower() in IMAGE_EXTENSIONS + UNDECODED_EXTENSIONS


def open_source(path):
    """The image files of a folder (searched recursively; hidden files skipped) or a `.zip`.

    Raises:
      ImageSourceError: the path does not exist, is neither a folder nor a zip, or holds no image file.
    """
    path = os.fspath(path)
    listing = []
    if os.path.isdir(path):
        for root, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in names:
                full = os.path.join(root, name)
                if _is_image(name) and os.path.isfile(full):
                    stat = os.stat(full)
                    listing.append((os.path.relpath(full, path).replace(os.sep, "/"), stat.st_size, stat.st_mtime_ns))
    elif os.path.isfile(path) and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            listing = [
                (i.filename, i.file_size, i.CRC) for i in archive.infolist() if not i.is_dir() and _is_image(i.filename)
            ]
    elif not os.path.exists(path):
        raise ImageSourceError(
            f"config.data={path!r} does not exist: pass a folder of images, a .zip of one, or tfds:NAME."
        )
    else:
        raise ImageSourceError(
            f"config.data={path!r} is neither a folder nor a .zip file: pass a folder of images or a .zip of one."
        )
    if not listing:
        raise ImageSourceError(
            f"config.data={path!r} holds no image file ({', '.join(IMAGE_EXTENSIONS)}, searched recursively)."
        )
    listing.sort()
    digest = hashlib.sha1(repr(listing).encode()).hexdigest()[:16]
    return Source(path=path, members=tuple(name for name, _, _ in listing), fingerprint=digest)


@dataclasses.dataclass
class DecodedImages:
    """A source decoded once: `images` uint8 `[n, s, s, channels]` (memory-mapped from the
    cache), `labels` int32 `[n]` (the class of each image, by `class_names`) or None, the
    `skipped` files (paths that did not decode), `cache_path` (a directory), whether it was
    `reused` from the cache, how many images had transparency (`transparent`) and what it was
    composited onto (`background`; "none" for caches made before compositing existed), and why
    each file was skipped (`skipped_reasons`, aligned with `skipped`; None for older caches; also
    in the cache's `skipped.txt`, a path and its reason per line)."""

    images: np.ndarray
    labels: np.ndarray
    class_names: list
    skipped: list
    cache_path: str
    reused: bool
    transparent: int = 0
    background: str = "none"
    skipped_reasons: list = None

    def _skipped_text(self, named=3):
        """ "; skipped 2 of 25 files: a.tif (unsupported format ...), b.jpg (corrupt ...), each
        with its reason in CACHE/skipped.txt": the first `named` in the line, all in the file."""
        count, total = len(self.skipped), len(self.skipped) + len(self.images)
        reasons = self.skipped_reasons or [None] * count
        shown = [f"{path} ({reason})" if reason else path for path, reason in zip(self.skipped[:named], reasons)]
        more = f" and {count - named} more" if count > named else ""
        where = os.path.join(self.cache_path, SKIPPED)
        listed = f", each with its reason in {where}" if os.path.exists(where) else ""
        return f"; skipped {count} of {total} file{'s' if total > 1 else ''}: {', '.join(shown)}{more}{listed}"

    def describe(self, source_path):
        """One line: how many images, their shape, the classes, what was skipped, where cached."""
        n, size, _, channels = self.images.shape
        classes = f", {len(self.class_names)} classes" if self.class_names else ""
        skipped = self._skipped_text() if self.skipped else ""
        how = "reused from" if self.reused else "prepared into"
        shown = "the colour stored beneath kept" if self.background == "none" else f"composited onto {self.background}"
        alpha = f", {self.transparent} with transparency ({shown})" if self.transparent else ""
        return (
            f"Images: {n} from {source_path} at {size}x{size}x{channels}{classes}{alpha}{skipped}; {how} "
            f"{self.cache_path}."
        )


def decode_once(
    path,
    image_size,
    cache_dir,
    channels=None,
    data_dir=None,
    log=None,
    *,
    workers=None,
    reduce_jpegs=True,
    background="white",
):
    """The images of a folder, a zip or a TFDS dataset, decoded once into `cache_dir/images/`
    (see the module docstring).

    The cache is a directory per source and resolution: `images.u8` (the uint8 images, raw,
    read memory-mapped, so a set larger than memory is never loaded whole), `labels.npy` and
    `meta.json` (shape, class names, skipped files).

    Args:
      path: a folder of images (searched recursively), a `.zip` of one, or `tfds:NAME[:SPLIT]`
        (a prepared TFDS dataset with an image feature; split "train" by default).
      image_size: the side of the square images.
      cache_dir: the user cache (`downloads.user_cache_dir()`).
      channels: 1 or 3, or None: from the data.
      data_dir: TFDS's data directory for a `tfds:` source (None: TFDS's default).
      log: called with progress lines while the cache is made (e.g. `print`); None: silent.
      workers: threads decoding a folder or zip (None: one per core this process may use).
      reduce_jpegs: decode a large JPEG at a fraction of its size (see `image_decoding.decode`); False decodes
        every JPEG whole (slower; how the cache was made before, for comparisons). Part of the
        cache key.
      background: what transparent pixels show (`image_decoding.background_color`: "white", "black", "gray",
        "#rrggbb"; "none" keeps the colour stored beneath them). Part of the cache key, but for
        "none", whose caches are those made before compositing existed.

    Returns:
      A `DecodedImages`. `labels` hold the first-level subfolder of each image when every image lies
      in one (a TFDS dataset: its `label` feature), else None.

    Raises:
      ImageSourceError: the source has no image, none of its files decodes, or (TFDS) the
        name is unknown or not prepared in `data_dir`.
    """
    reader = _TfdsReader(path, data_dir) if is_tfds(path) else _FilesReader(path)
    image_decoding.background_color(background)  # a bad value is refused before anything is decoded
    key = f"{reader.fingerprint}_{image_size}px_{channels or 'auto'}c_v{VERSION}{'' if reduce_jpegs else '_full'}"
    key += "" if background == "none" else f"_on_{background.lstrip('#').lower()}"
    cache_path = os.path.join(cache_dir, "images", key)
    if os.path.exists(os.path.join(cache_path, "meta.json")):
        return _load(cache_path, reused=True)
    os.makedirs(os.path.dirname(cache_path), exist_ok=True)
    files.remove_stale_temporaries(os.path.dirname(cache_path))  # a preparation killed midway
    workers = machine.cores() if workers is None else workers
    images = reader.images(image_size, log, workers=max(1, workers), reduce_jpegs=reduce_jpegs, background=background)
    needed = reader.count * image_size * image_size * 3 if reader.count else None
    # A corrupt file makes TensorFlow's decoders print lines of their own (libjpeg's "Invalid JPEG
    # data"): hidden, each file's reason is in the preparation line and skipped.txt instead.
    with _startup.native_stderr_silenced(True):
        files.atomic_write(
            cache_path,
            lambda tmp: _write(reader, images, image_size, channels, background, tmp),
            "the image cache",
            needed,
        )
    try:
        return _load(cache_path, reused=False)
    except FileNotFoundError:  # another worker's identical cache replaced ours just now
        return _load(cache_path, reused=True)


def _load(directory, reused):
    meta = files.read_json(os.path.join(directory, "meta.json"))
    images = np.memmap(os.path.join(directory, "images.u8"), np.uint8, mode="r", shape=tuple(meta["shape"]))
    labels = np.load(os.path.join(directory, "labels.npy")) if meta["class_names"] else None
    later = (meta.get("transparent", 0), meta.get("background", "none"), meta.get("skipped_reasons"))
    return DecodedImages(images, labels, meta["class_names"], meta["skipped"], directory, reused, *later)


def _write(reader, images, image_size, channels, background, directory):
    """Writes `images` (`reader`'s `(image, label)`) into `directory` (see `decode_once`), one at
    a time: RGB first (gray replicated), then one channel if asked for or if every image was gray."""
    os.makedirs(directory)
    raw, count, gray, labels = os.path.join(directory, "rgb.u8"), 0, True, []
    with open(raw, "wb") as f:
        for image, label in images:
            gray = gray and image.shape[-1] == 1
            f.write(np.round(image_decoding.with_channels(image, 3)).astype(np.uint8).tobytes())
            labels.append(label)
            count += 1
    if not count:
        raise reader.nothing_decodes()
    rgb = np.memmap(raw, np.uint8, mode="r", shape=(count, image_size, image_size, 3))
    wanted = channels or (1 if gray else 3)
    if wanted == 3:
        os.replace(raw, os.path.join(directory, "images.u8"))
    else:
        with open(os.path.join(directory, "images.u8"), "wb") as f:
            for start in range(0, count, 256):
                luma = image_decoding.with_channels(rgb[start : start + 256].astype(np.float32), 1)
                f.write(np.round(luma).astype(np.uint8).tobytes())
        del rgb
        os.remove(raw)
    class_names = reader.class_names
    np.save(os.path.join(directory, "labels.npy"), np.array(labels if class_names else [], np.int32))
    meta = {
        "shape": [count, image_size, image_size, wanted],
        "class_names": class_names,
        "skipped": reader.skipped,
        "skipped_reasons": reader.reasons,
        "transparent": reader.transparent,
        "background": background,
    }
    if reader.skipped:
        with open(os.path.join(directory, SKIPPED), "w") as f:
            f.writelines(f"{path}\t{reason}\n" for path, reason in zip(reader.skipped, reader.reasons))
    files.write_json(os.path.join(directory, "meta.json"), meta)


def _ordered_map(function, items, workers):
    """`function` over `items` on `workers` threads, results in the order of `items`, at most
    `2 * workers` items read ahead (a folder of photos is never held in memory whole).
    TensorFlow's decoders release the GIL, so threads use the cores."""
    if workers <= 1:
        yield from map(function, items)
        return
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        pending = collections.deque()
        for item in items:
            pending.append(pool.submit(function, item))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def is_tfds(path):
    """Whether `config.data` names a TFDS dataset (`tfds:NAME[:SPLIT]`)."""
    return isinstance(path, str) and path.startswith("tfds:")


class _Progress:
    """A progress line every few seconds while a source is decoded (none for one under a second):
    files done of the total, decoded and skipped counted apart."""

    def __init__(self, what, total, log):
        self.what, self.total, self.log = what, total, log
        self.start = self.last = time.monotonic()
        self.decoded = self.skipped = 0

    def __call__(self, decoded):
        self.decoded += bool(decoded)
        self.skipped += not decoded
        now, done = time.monotonic(), self.decoded + self.skipped
        if self.log and (now - self.last > 5 or done == self.total) and now - self.start > 1:
            skipped = f", {self.skipped} skipped" if self.skipped else ""
            self.log(f"Preparing {self.what}: {done}/{self.total or '?'} files, {self.decoded} decoded{skipped} ...")
            self.last = now


class _FilesReader:
    """A folder or zip: `fingerprint`, `class_names` (or None), `images(image_size, log,
    workers, reduce_jpegs, background)` yielding `(image, label)` (`image_decoding.decode`'s images; label None
    without classes), `skipped` (the paths that did not decode) and `transparent` (how many had
    transparency), once iterated, `count` (the files) and `nothing_decodes()`, the error."""

    def __init__(self, path):
        self.source = open_source(path)
        self.count = len(self.source.members)
        self.transparent = 0
        self.fingerprint = self.source.fingerprint
        self.class_names = self.source.class_names()
        self.skipped, self.reasons = [], []

    def images(self, image_size, log, workers=1, reduce_jpegs=True, background="white"):
        source = self.source
        index = {name: i for i, name in enumerate(self.class_names or [])}
        progress = _Progress(f"{source.path} at {image_size} px", len(source.members), log)
        archive = zipfile.ZipFile(source.path) if source.is_zip else None

        def decode(item):
            member, raw = item
            if isinstance(raw, str):  # why it could not be read
                return member, None, raw
            extension = os.path.splitext(member)[1].lower()
            if extension in UNDECODED_EXTENSIONS:
                return member, None, f"unsupported format: {extension[1:].upper()}, convert it to PNG or JPEG"
            if not image_decoding.looks_like_an_image(raw):
                return member, None, "not an image file: no PNG, JPEG, GIF, BMP or WebP header"
            try:
                return member, image_decoding.decode(raw, image_size, reduce_jpegs, background), None
            except (tf.errors.InvalidArgumentError, ValueError):
                return member, None, "corrupt or truncated: it does not decode"

        def read():  # in this thread: a ZipFile is not to be shared between threads
            for member in source.members:
                try:
                    yield member, source.read(member, archive)
                except (zipfile.BadZipFile, OSError) as err:
                    yield member, f"unreadable: {type(err).__name__}, {getattr(err, 'strerror', None) or err}"

        try:
            for member, decoded, reason in _ordered_map(decode, read(), workers):
                if decoded is None:
                    self.skipped.append(os.path.join(source.path, member))
                    self.reasons.append(reason)
                else:
                    self.transparent += decoded[1]
                    yield decoded[0], index.get(member.split("/", 1)[0])
                progress(decoded is not None)
        finally:
            if archive is not None:
                archive.close()

    def nothing_decodes(self):
        return ImageSourceError(
            f"none of the {len(self.source.members)} image files in config.data={self.source.path!r} decodes (the "
            f"first: {self.skipped[0]}): TensorFlow reads PNG, JPEG, BMP, GIF and WebP."
        )


class _TfdsReader:
    """A prepared TFDS dataset `tfds:NAME[:SPLIT]` with an image feature (its first), labels
    from its `label` feature when that is a class label; as `_FilesReader`."""

    def __init__(self, spec, data_dir):
        import tensorflow_datasets as tfds  # Lazy: importing TFDS takes seconds.

        self.spec, self.data_dir, self.skipped, self.reasons, self.count, self.transparent = (
            spec,
            data_dir,
            [],
            [],
            None,
            0,
        )
        name, _, split = spec[len("tfds:") :].partition(":")
        self.name, self.split = name, split or "train"
        where = data_dir if data_dir is not None else f"None (TFDS's default, {tfds.core.constants.DATA_DIR})"
        try:
            self.builder = tfds.builder(self.name, data_dir=data_dir)
        except tfds.core.registered.DatasetNotFoundError:
            raise ImageSourceError(
                f"config.data={spec!r}: TFDS knows no dataset {self.name!r} (see `tfds.list_builders()` or the TFDS "
                "catalog)."
            ) from None
        except Exception as err:  # a malformed name, a broken data_dir
            raise ImageSourceError(f"config.data={spec!r}: {' '.join(str(err).split())[:200]}") from None
        self.unprepared = (
            f"config.data={spec!r} is not prepared in data_dir={where} (TFDS looked in {self.builder.data_dir}): "
            f"run `tfds build {self.name} --data_dir=DIR` where the internet is reachable, copy DIR here and pass "
            "--config.data_dir=DIR."
        )
        features = self.builder.info.features
        image_keys = [key for key, feature in features.items() if isinstance(feature, tfds.features.Image)]
        if not image_keys:
            raise ImageSourceError(f"config.data={spec!r}: TFDS dataset {self.name!r} has no image feature.")
        self.image_key = image_keys[0]
        label = features["label"] if "label" in features.keys() else None
        self.class_names = list(label.names) if isinstance(label, tfds.features.ClassLabel) else None
        version = self.builder.info.version
        key = repr(("tfds", self.name, str(version), self.split, data_dir))
        self.fingerprint = hashlib.sha1(key.encode()).hexdigest()[:16]

    def images(self, image_size, log, workers=1, reduce_jpegs=True, background="white"):
        del workers, reduce_jpegs  # TFDS decodes; its images arrive as arrays
        try:
            ds = self.builder.as_dataset(split=self.split, shuffle_files=False)
        except AssertionError:  # TFDS's word for "no prepared files there"
            raise NotPreparedError(self.unprepared) from None
        except Exception as err:  # an unknown split
            raise ImageSourceError(f"config.data={self.spec!r}: {' '.join(str(err).split())[:200]}") from None
        splits = self.builder.info.splits
        total = splits[self.split].num_examples if self.split in splits else None
        progress = _Progress(f"{self.spec} at {image_size} px", total, log)
        for example in ds.as_numpy_iterator():
            image, transparent = image_decoding.opaque(example[self.image_key], background)
            self.transparent += transparent
            yield image_decoding.square(image, image_size), int(example["label"]) if self.class_names else None
            progress(True)

    def nothing_decodes(self):
        return ImageSourceError(f"config.data={self.spec!r}: split {self.split!r} holds no example.")
