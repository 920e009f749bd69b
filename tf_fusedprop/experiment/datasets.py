"""What each dataset name means to the harness: one `DatasetSpec` per name, and one
`OpenedDataset` per run.

A spec says all that `config` and `train_lib` need to know about a dataset, so that no other
module branches on dataset names. `open_dataset(config)` is that knowledge for one run: one
object that reads the data once (a user's images decoded, or read from the decoded-once cache,
on first use) and that validation (`config.validate`), the network builder and the evaluators
share:

| dataset | sample | classes | networks | extra config fields | evaluator | sample grid |
|---|---|---|---|---|---|---|
| digits | `[s, s, 1]` | 10 | image | `image_size` | FID/KID/IS (and, conditional, class accuracy) under `features.DigitsClassifier` | image grid (conditional: a class per row) |
| mnist5k | `[s, s, 1]` (28 px padded to 32) | 10 | image | `image_size` | as digits, under a `DigitsClassifier` trained on MNIST-5k | as digits |
| mnist1k | as mnist5k: 100 of each class | 10 | image | `image_size` | as mnist5k, against all 5,000 digits (what G makes beyond the 1,000 it saw) | as digits |
| cifar10 | `[32, 32, 3]` | 10 | image | `data_dir`, `inception_path`, `eval_real_samples` | FID/IS under TF-GAN's Inception (`inception_path`: "auto" fetches it once, offline one line and off; a URL or local copy; None: off) | image grid (conditional: a class per row) |
| images | `[s, s, 1 or 3]` | from subfolders | image | `data`, `image_size`, `channels`, `background`, `mirror`, `conditional`, `data_dir`, `inception_path`, `eval_real_samples` | FID/KID/IS under TF-GAN's Inception, as cifar10 | as cifar10 |
| ring8, grid25 | `[2]` | none | vector (mlp) | | `metrics.mode_coverage` | scatter plot with the true modes |

With `config.num_classes` set (a conditional GAN) the pipelines yield `(samples, labels)`.

The networks' side is theirs (`tf_fusedprop.networks.facts`: image or vector, the builder
arguments a sample shape fixes); `OpenedDataset.network_inputs` gives those for a run.
"""

import dataclasses
import functools
import hashlib
import os
from typing import Callable

import numpy as np

from tf_fusedprop import _checks
from tf_fusedprop import networks as fp_networks
from tf_fusedprop.experiment import downloads, evaluators, features, image_files, pictures, real_samples

__all__ = [
    "AUTO_INCEPTION",
    "DatasetSpec",
    "OpenedDataset",
    "completed",
    "get",
    "grid_inputs",
    "held_out_count",
    "inception_source",
    "names",
    "open_dataset",
]


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    """What a dataset name means to the harness.

    Its callables take the run's `OpenedDataset` (`data`: its `config`, and its `contents`,
    read on first use).

    Attributes:
      name: the dataset's name (`config.dataset`).
      fields: the config fields of this dataset only (`config.validate` checks them).
      image: True if it takes image networks, False for the vector network (mlp).
      sample_shape: `data -> shape` of one sample.
      pipeline: `(data, seed) -> tf.data.Dataset` of training batches.
      evaluator: `data -> make`, called before anything is written (so that a bad
        Inception path fails fast); `make(cache_dir)` is called once the workdir exists and
        returns `(evaluator, message)`: the evaluator (`evaluators`) or None, and a line to
        print (or None).
      render: `config -> render`, the sample-grid renderer of `callbacks.SampleGrid`.
      classes: the number of classes of its labels (a conditional GAN's `num_classes`), or
        None for unlabelled data (or for data whose classes depend on the config: `class_names`).
      eval_samples: the generated samples its evaluation takes by default (the shipped
        configs'; `--mode=evaluate` of a run trained with `eval_samples=0` uses it).
      read: `config -> contents`, what the dataset reads from disk once per run (a user's
        images, decoded); None: nothing (data that `real_samples` holds in memory).
      class_names: `data -> [name, ...] or None`, the classes of data that the config names
        (a user's class subfolders); None: `classes` numbered from 0.
      held_out: `(data, n) -> images`, n real samples that training never reads (what an
        adaptive augmentation's `held_out` signal compares D's real samples with); None: it
        has none.
    """

    name: str
    fields: tuple
    image: bool
    sample_shape: Callable
    pipeline: Callable
    evaluator: Callable
    render: Callable
    classes: int = None
    eval_samples: int = 1000
    read: Callable = None
    class_names: Callable = None
    held_out: Callable = None


def _evaluation_latents(config):
    return evaluators.latents(config.seed, evaluators.EVALUATION, config.eval_samples, config.latent_dim)


def _evaluation_labels(config):
    """Balanced class labels for a conditional G's evaluation samples, else None."""
    return None if config.num_classes is None else evaluators.class_labels(config.eval_samples, config.num_classes)


def grid_inputs(config):
    """`(latents, labels)` of the run's sample grid; for a conditional GAN one class per row
    (`grid_samples // num_classes` columns, at least one), else labels None."""
    if config.num_classes is None:
        return evaluators.latents(config.seed, evaluators.GRID, config.grid_samples, config.latent_dim), None
    columns = max(1, config.grid_samples // config.num_classes)
    latents = evaluators.latents(config.seed, evaluators.GRID, columns * config.num_classes, config.latent_dim)
    return latents, np.repeat(np.arange(config.num_classes, dtype=np.int32), columns)


def _image_grid(config):
    if config.num_classes is None:
        return pictures.image_grid
    return functools.partial(pictures.image_grid, columns=max(1, config.grid_samples // config.num_classes))


def _labelled(config):
    return config.num_classes is not None


def held_out_count(config):
    """The real samples a run holds back from training: `adaptive_augment.held_out` where an
    adaptive augmentation follows them (a policy, a target), else 0."""
    adaptive = config.adaptive_augment
    return adaptive.held_out if config.augment and adaptive.target is not None else 0


def held_out_rows(count, n):
    """The rows of a set of `count` samples that a run holding `n` back keeps out of training: a
    fixed draw, spread over the set whatever its order, ascending."""
    return np.sort(np.random.default_rng(0).permutation(count)[:n])


def _held_out_rows(data):
    """The rows of a user's images held back from training (`held_out_count`)."""
    return held_out_rows(len(data.contents.images), held_out_count(data.config))


# --------------------------------------------------------------------------------------------
# Digits
# --------------------------------------------------------------------------------------------


def _digits_evaluator(source, label):
    """The evaluator factory of a labelled digit set (`real_samples.LABELLED_DIGITS`, called `label` in
    what is printed): FID/KID/IS (and class accuracy) under a `features.DigitsClassifier`
    trained on that set."""

    def evaluator(data):
        config = data.config

        def make(cache_dir):
            classifier = features.DigitsClassifier.load_or_train(
                cache_dir, image_size=config.image_size, seed=0, source=source
            )
            message = (
                f"{label[0].upper() + label[1:]} classifier: {100 * classifier.test_accuracy:.1f}% held-out accuracy "
                f"({'trained now' if classifier.trained else 'cached'} in {cache_dir})."
            )
            name = f"{source}_{config.image_size}px_classifier_v{classifier.VERSION}_stats.npz"
            real = real_samples.labelled_digits(source)[0](config.image_size)  # a few thousand images: features take ms
            reference = features.reference_statistics(classifier, real, os.path.join(cache_dir, name))
            evaluator = evaluators.ImageEvaluator(
                classifier,
                reference,
                _evaluation_latents(config),
                f"{label} classifier",
                real_features=classifier.features(real),
                labels=_evaluation_labels(config),
                class_accuracy=True,
                score_name="classifier_score",
            )
            return evaluator, message

        return make

    return evaluator


def _digit_set(name, label, pipeline, eval_samples, scored_on=None, held_out=None):
    """The `DatasetSpec` of a labelled digit set held in memory (`real_samples.LABELLED_DIGITS`),
    scored under the classifier of the set itself, or of the set `scored_on` `(name, label)`.
    `held_out(n, image_size)` gives digits outside the set, which it never trains on; without
    it, a run that holds digits back (`held_out_count`) holds a fixed draw of the set's own
    (`held_out_rows`), and training skips them."""
    images, labels = real_samples.labelled_digits(name)

    def own_held_out(data, n):
        return images(data.config.image_size)[held_out_rows(len(labels()), n)]

    def training_rows(data):
        n = held_out_count(data.config) if held_out is None else 0
        if not n:
            return None
        count = len(labels())  # the set's size, without building its images at this size
        return np.setdiff1d(np.arange(count), held_out_rows(count, n))

    return DatasetSpec(
        name=name,
        fields=("image_size",),
        image=True,
        sample_shape=lambda data: (data.config.image_size, data.config.image_size, 1),
        pipeline=lambda data, seed: pipeline(
            data.config.batch_size,
            image_size=data.config.image_size,
            seed=seed,
            labels=_labelled(data.config),
            rows=training_rows(data),
        ),
        evaluator=_digits_evaluator(*(scored_on or (name, label))),
        render=_image_grid,
        classes=10,
        eval_samples=eval_samples,
        held_out=own_held_out if held_out is None else lambda data, n: held_out(n, data.config.image_size),
    )


DIGITS = _digit_set("digits", "digits", real_samples.digits, eval_samples=1797)  # as many as the real digits
MNIST5K = _digit_set("mnist5k", "MNIST-5k", real_samples.mnist5k, eval_samples=5000)
# D memorises 1,000 digits soon; G is scored against all 5,000 (issue 61's small-folder question).
MNIST1K = _digit_set(
    "mnist1k",
    "MNIST-1k",
    real_samples.mnist1k,
    eval_samples=5000,
    scored_on=("mnist5k", "MNIST-5k"),
    held_out=real_samples.mnist1k_held_out,
)


# --------------------------------------------------------------------------------------------
# CIFAR-10
# --------------------------------------------------------------------------------------------


#: `config.inception_path` of the shipped CIFAR-10 and images configs: TF-GAN's Inception
#: fetched once into the cache when it can be; when it cannot (offline), metrics are off, one
#: line says so and training goes on.
AUTO_INCEPTION = "auto"


def inception_source():
    """Where `inception_path="auto"` fetches the module: `$TF_FUSEDPROP_INCEPTION_URL` (e.g. a
    mirror inside a firewall) if set, else TF-Hub's handle `InceptionFeatures.MODULE_URL`."""
    return os.environ.get("TF_FUSEDPROP_INCEPTION_URL") or features.InceptionFeatures.MODULE_URL


def _load_inception(config, what):
    """`(TF-GAN's Inception, None)`, or `(None, the line saying why FID/KID/IS are off)`.

    `config.inception_path`: None or "" (off), "auto" (fetched once when it can be, else off),
    or a URL or local directory (must load: fails fast, as the user named it).
    """
    path = config.inception_path
    if not path:
        return None, f"FID/KID/IS off (config.inception_path=None); --config.inception_path=auto scores {what}."
    if path != AUTO_INCEPTION:
        try:
            return features.InceptionFeatures(path, cache_dir=config.cache_dir, log=print), None
        except features.InceptionModuleUnavailableError as err:
            raise features.InceptionModuleUnavailableError(f"{err} (config.inception_path)") from None
    url = inception_source()
    try:
        local = downloads.cached_saved_model(url, cache_dir=config.cache_dir, log=print)
    except downloads.DownloadError as err:
        cache = config.cache_dir or downloads.default_cache_dir()
        return None, (
            f"FID/KID/IS off: TF-GAN's Inception module could not be fetched ({err}); training goes on. To score "
            f"{what}, run once where {url} is reachable (it is kept in {cache}) or pass "
            "--config.inception_path=DIR, a copy of the module's directory."
        )
    try:
        return features.InceptionFeatures(local, cache_dir=config.cache_dir, log=print), None
    except features.InceptionModuleUnavailableError as err:
        raise features.InceptionModuleUnavailableError(f"{err} (config.inception_path=auto, from {url})") from None


def _cifar10_decoded(config):
    return real_samples.cifar10_decoded("train", config.data_dir, cache_dir=config.cache_dir)


def _decoded_pipeline(data, seed, mirror=False):
    """The training pipeline of a dataset whose contents are `image_files.DecodedImages`
    (with labels for a conditional GAN)."""
    decoded, config = data.contents, data.config
    labels = decoded.labels if _labelled(config) else None
    rows = np.setdiff1d(np.arange(len(decoded.images)), _held_out_rows(data))
    return real_samples.uint8_images(
        decoded.images, config.batch_size, seed=seed, mirror=mirror, labels=labels, rows=rows
    )


def _spread_sample(images, n):
    """`n` of `images` (uint8), evenly spread over the set, in [-1, 1]: the reference sample."""
    chosen = np.linspace(0, len(images) - 1, min(n, len(images))).round().astype(int)
    return real_samples.from_uint8(images[chosen])


def _inception_evaluator(what, data_key, kid=False):
    """The evaluator factory of FID/IS (with `kid`, KID too) under TF-GAN's Inception
    (`config.inception_path`) against `config.eval_real_samples` of the dataset's images
    (its contents, an `image_files.DecodedImages`, spread evenly over it),
    whose reference statistics (and, for KID, up to 1,000 rows of their features) are cached
    under `data_key(data)`; without the module, a line says how to turn it on."""

    def evaluator(data):
        config = data.config
        inception, off = _load_inception(config, what)

        def make(cache_dir):
            if inception is None:
                return None, off
            key = hashlib.sha1(os.path.abspath(inception.path).encode()).hexdigest()[:8]
            kept = 1000 if kid else 0
            name = f"{data_key(data)}{config.eval_real_samples}_inception{key}{'_kid' if kid else ''}_stats.npz"
            cache = os.path.join(cache_dir, name)
            real = None if os.path.exists(cache) else _spread_sample(data.contents.images, config.eval_real_samples)
            reference = features.reference_statistics(inception, real, cache, batch_size=100, keep_features=kept)
            evaluator = evaluators.ImageEvaluator(
                inception,
                reference[:2],
                _evaluation_latents(config),
                "Inception",
                real_features=reference[2] if kid else None,
                labels=_evaluation_labels(config),
            )
            return evaluator, None

        return make

    return evaluator


CIFAR10 = DatasetSpec(
    name="cifar10",
    fields=("data_dir", "inception_path", "eval_real_samples"),
    image=True,
    sample_shape=lambda data: (32, 32, 3),
    pipeline=_decoded_pipeline,
    evaluator=_inception_evaluator("CIFAR-10", lambda data: "cifar10_train"),
    render=_image_grid,
    classes=10,
    eval_samples=10_000,  # the FusedProp paper's Table 2
    read=_cifar10_decoded,
)


# --------------------------------------------------------------------------------------------
# 2-D Gaussian mixtures
# --------------------------------------------------------------------------------------------


def _mixture(name, pipeline):
    centers, std = real_samples.mixture_spec(name)

    def evaluator(data):
        return lambda cache_dir: (evaluators.MixtureEvaluator(centers, std, _evaluation_latents(data.config)), None)

    def render(config):
        extent = float(np.abs(centers).max()) * 1.25 + 0.5
        return functools.partial(pictures.scatter_plot, extent=extent, centers=centers)

    return DatasetSpec(
        name=name,
        fields=(),
        image=False,
        sample_shape=lambda data: (2,),
        pipeline=lambda data, seed: pipeline(data.config.batch_size, seed=seed),
        evaluator=evaluator,
        render=render,
        eval_samples=2_500,  # Metz et al. 2017
    )


RING8 = _mixture("ring8", real_samples.ring8)
GRID25 = _mixture("grid25", real_samples.grid25)

# --------------------------------------------------------------------------------------------
# The user's own images (a folder or a zip)
# --------------------------------------------------------------------------------------------


def _user_images(config):
    """The `image_files.DecodedImages` images of `config.data` (a folder, a zip or `tfds:NAME[:SPLIT]`
    in `config.data_dir`) at `config.image_size` (decoded once, into the user cache), with a line
    saying what they are.

    Raises:
      image_files.ImageSourceError: no decodable image, or fewer than one batch.
    """
    cache_dir = config.cache_dir or downloads.user_cache_dir()
    decoded = image_files.decode_once(
        config.data,
        config.image_size,
        cache_dir,
        channels=config.channels,
        data_dir=config.data_dir,
        log=print,
        background=config.background,
    )
    print(decoded.describe(config.data), flush=True)
    held_out = held_out_count(config)
    if len(decoded.images) - held_out < config.batch_size:
        kept = f", {held_out} of them held out (adaptive_augment.held_out)" if held_out else ""
        raise image_files.ImageSourceError(
            f"config.data={config.data!r} holds {len(decoded.images)} decodable images{kept}, fewer than one batch "
            f"to train on (config.batch_size={config.batch_size}): add images or lower the batch size."
        )
    if held_out:
        print(
            f"{held_out} of them held out from training: the adaptive augmentation compares D's real samples with them."
        )
    return decoded


IMAGES = DatasetSpec(
    name="images",
    fields=(
        "data",
        "image_size",
        "channels",
        "background",
        "mirror",
        "conditional",
        "data_dir",
        "inception_path",
        "eval_real_samples",
    ),
    image=True,
    sample_shape=lambda data: data.contents.images.shape[1:],
    pipeline=lambda data, seed: _decoded_pipeline(data, seed, mirror=data.config.mirror),
    evaluator=_inception_evaluator(
        "your images", lambda data: os.path.basename(data.contents.cache_path) + "_real", kid=True
    ),
    render=_image_grid,
    eval_samples=5_000,
    read=_user_images,
    class_names=lambda data: data.contents.class_names,
    held_out=lambda data, n: real_samples.from_uint8(data.contents.images[_held_out_rows(data)]),
)

_REGISTRY = _checks.Registry(
    "dataset",
    {
        spec.name: spec
        for spec in sorted((DIGITS, MNIST5K, MNIST1K, CIFAR10, IMAGES, RING8, GRID25), key=lambda spec: spec.name)
    },
)


def completed(config, data=None):
    """`config` with what its data decide filled in: network widths left None, from the image
    side (`networks.Network.default_widths`); with `conditional` set (a user's images),
    `num_classes` from the data's classes. A config with nothing to fill is returned as it is.

    Args:
      config: a valid config.
      data: its `OpenedDataset`; None opens it.

    Raises:
      image_files.ImageSourceError: `conditional` on data without classes.
    """
    data = data or open_dataset(config)
    widths = fp_networks.facts(config.network).default_widths
    unset = [role for role in ("generator", "discriminator") if config[role].get("width", 0) is None]
    if widths is not None and unset:
        config = config.copy_and_resolve_references()
        chosen = dict(zip(("generator", "discriminator"), widths(data.sample_shape[0])))
        for role in unset:
            config[role].width = chosen[role]
    if not config.get("conditional") or config.num_classes is not None:
        return config
    if not data.class_names:
        raise image_files.ImageSourceError(
            f"config.conditional=True takes the classes from the first level of subfolders (or a TFDS label "
            f"feature); config.data={config.data!r} has images at its top level: put each class in its own "
            "folder, or set --config.conditional=False."
        )
    config = config.copy_and_resolve_references()
    config.num_classes = len(data.class_names)
    return config


def names():
    """The dataset names, sorted."""
    return _REGISTRY.names()


def get(name):
    """The `DatasetSpec` registered under `name`.

    Raises:
      ValueError: for an unknown name; the message lists the valid names.
    """
    return _REGISTRY.get(name)


# --------------------------------------------------------------------------------------------
# One dataset, opened for one run
# --------------------------------------------------------------------------------------------

_UNREAD = object()

#: Config fields besides a dataset's own (`DatasetSpec.fields`) that what it reads depends on.
_READ_FIELDS = ("dataset", "cache_dir", "batch_size")


class OpenedDataset:
    """One run's dataset (`open_dataset`): read from disk at most once, on first use, and shared
    by validation, the network builder, the training pipeline and the evaluators.

    Attributes:
      spec: the `DatasetSpec`.
      config: the config it was opened for.
    """

    def __init__(self, config, reuse=None):
        self.spec = get(config.dataset)
        self.config = config
        same = reuse is not None and all(
            reuse.config.get(key) == config.get(key) for key in _READ_FIELDS + self.spec.fields
        )
        self._contents = reuse._contents if same else _UNREAD

    @property
    def contents(self):
        """What the dataset read (`DatasetSpec.read`: a user's images, decoded), read now if not yet.

        Raises:
          image_files.ImageSourceError, real_samples.DatasetUnavailableError: the data cannot be read.
        """
        if self._contents is _UNREAD:
            self._contents = None if self.spec.read is None else self.spec.read(self.config)
        return self._contents

    @functools.cached_property
    def sample_shape(self):
        """The shape of one sample."""
        return tuple(self.spec.sample_shape(self))

    @functools.cached_property
    def class_names(self):
        """The names of the classes of the data (`DatasetSpec.class_names`, else its `classes`
        numbered "0", "1", ...), or None for unlabelled data."""
        if self.spec.class_names is not None:
            return self.spec.class_names(self)
        return None if self.spec.classes is None else [str(i) for i in range(self.spec.classes)]

    @property
    def network_inputs(self):
        """`(generator kwargs, discriminator kwargs)` that the data fix for the config's network."""
        return fp_networks.facts(self.config.network).inputs(self.sample_shape)

    @property
    def grid_inputs(self):
        """`(latents, labels)` of the run's sample grid (`grid_inputs`)."""
        return grid_inputs(self.config)

    @property
    def render(self):
        """The sample-grid renderer of `callbacks.SampleGrid`."""
        return self.spec.render(self.config)

    def pipeline(self, seed):
        """The `tf.data.Dataset` of training batches, shuffled by `seed`."""
        return self.spec.pipeline(self, seed)

    def held_out(self, n):
        """`n` real samples that training never reads (`DatasetSpec.held_out`), float32 in [-1, 1]."""
        return self.spec.held_out(self, n)

    def evaluation(self, enabled=True):
        """`make(cache_dir) -> (evaluator or None, message or None)` (see `DatasetSpec`); what bad
        input breaks (an Inception path that is neither local nor downloadable) fails here,
        before anything is written. Not `enabled` (or without `config.eval_samples`): it makes none.

        Raises:
          tf_fusedprop.experiment.features.InceptionModuleUnavailableError: bad `config.inception_path`.
        """
        if not enabled or not self.config.eval_samples:
            return lambda cache_dir: (None, None)
        return self.spec.evaluator(self)


def open_dataset(config, reuse=None):
    """The dataset of a config whose fields are valid, as one `OpenedDataset` (nothing is read
    until used).

    Args:
      config: the config (its dataset's fields valid: `config.validate` checks them first).
      reuse: an `OpenedDataset` opened for a config that reads the same data (the same dataset
        fields, e.g. the config before `completed` filled in widths and classes): what it has
        read is not read again.
    """
    return OpenedDataset(config, reuse)
