"""What each dataset name means to the harness: one `DatasetSpec` per name, looked up once.

A spec says all that `config` and `train_lib` need to know about a dataset, so that no other
module branches on dataset names (`prepare(config)` is that knowledge for one run):

| dataset | sample | classes | networks | extra config fields | evaluator | sample grid |
|---|---|---|---|---|---|---|
| digits | `[s, s, 1]` | 10 | image | `image_size` | FID/KID/IS (and, conditional, class accuracy) under `features.DigitsClassifier` | image grid (conditional: a class per row) |
| mnist5k | `[s, s, 1]` (28 px padded to 32) | 10 | image | `image_size` | as digits, under a `DigitsClassifier` trained on MNIST-5k | as digits |
| cifar10 | `[32, 32, 3]` | 10 | image | `data_dir`, `inception_path`, `eval_real_samples` | FID/IS under TF-GAN's Inception (`inception_path`: "auto" fetches it once, offline one line and off; a URL or local copy; None: off) | image grid (conditional: a class per row) |
| images | `[s, s, 1 or 3]` | from subfolders | image | `data`, `image_size`, `channels`, `mirror`, `conditional`, `data_dir`, `inception_path`, `eval_real_samples` | FID/KID/IS under TF-GAN's Inception, as cifar10 | as cifar10 |
| ring8, grid25 | `[2]` | none | vector (mlp) | | `metrics.mode_coverage` | scatter plot with the true modes |

With `config.num_classes` set (a conditional GAN) the pipelines yield `(samples, labels)`.

The networks' side is theirs (`tf_fusedprop.networks.facts`: image or vector, the builder
arguments a sample shape fixes); `network_inputs(config)` gives those for a config.
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
    "Prepared",
    "class_names",
    "completed",
    "get",
    "grid_inputs",
    "inception_source",
    "names",
    "network_inputs",
    "prepare",
]


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    """What a dataset name means to the harness.

    Attributes:
      name: the dataset's name (`config.dataset`).
      fields: the config fields of this dataset only (`config.validate` checks them).
      image: True if it takes image networks, False for the vector network (mlp).
      sample_shape: `config -> shape` of one sample.
      pipeline: `(config, seed) -> tf.data.Dataset` of training batches.
      evaluator: `config -> make`, called before anything is written (so that a bad
        Inception path fails fast); `make(cache_dir)` is called once the workdir exists and
        returns `(evaluator, message)`: the evaluator (`evaluators`) or None, and a line to
        print (or None).
      render: `config -> render`, the sample-grid renderer of `callbacks.SampleGrid`.
      classes: the number of classes of its labels (a conditional GAN's `num_classes`), or
        None for unlabelled data (or for data whose classes depend on the config: `class_names`).
      eval_samples: the generated samples its evaluation takes by default (the shipped
        configs'; `--mode=evaluate` of a run trained with `eval_samples=0` uses it).
      class_names: `config -> [name, ...] or None`, the classes of data that the config names
        (a user's class subfolders); None: `classes` numbered from 0.
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
    class_names: Callable = None


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


# --------------------------------------------------------------------------------------------
# Digits
# --------------------------------------------------------------------------------------------


def _digits_evaluator(source, label):
    """The evaluator factory of a labelled digit set (`real_samples.LABELLED_DIGITS`, called `label` in
    what is printed): FID/KID/IS (and class accuracy) under a `features.DigitsClassifier`
    trained on that set."""

    def evaluator(config):
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
            )
            return evaluator, message

        return make

    return evaluator


def _digit_set(name, label, pipeline, eval_samples):
    """The `DatasetSpec` of a labelled digit set held in memory (`real_samples.LABELLED_DIGITS`)."""
    return DatasetSpec(
        name=name,
        fields=("image_size",),
        image=True,
        sample_shape=lambda config: (config.image_size, config.image_size, 1),
        pipeline=lambda config, seed: pipeline(
            config.batch_size, image_size=config.image_size, seed=seed, labels=_labelled(config)
        ),
        evaluator=_digits_evaluator(name, label),
        render=_image_grid,
        classes=10,
        eval_samples=eval_samples,
    )


DIGITS = _digit_set("digits", "digits", real_samples.digits, eval_samples=1797)  # as many as the real digits
MNIST5K = _digit_set("mnist5k", "MNIST-5k", real_samples.mnist5k, eval_samples=5000)


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


def _decoded_pipeline(decoded, config, seed, mirror=False):
    """The training pipeline of `image_files.DecodedImages` (with labels for a conditional GAN)."""
    labels = decoded.labels if _labelled(config) else None
    return real_samples.uint8_images(decoded.images, config.batch_size, seed=seed, mirror=mirror, labels=labels)


def _spread_sample(images, n):
    """`n` of `images` (uint8), evenly spread over the set, in [-1, 1]: the reference sample."""
    chosen = np.linspace(0, len(images) - 1, min(n, len(images))).round().astype(int)
    return real_samples.from_uint8(images[chosen])


def _inception_evaluator(what, decoded, data_key, kid=False):
    """The evaluator factory of FID/IS (with `kid`, KID too) under TF-GAN's Inception
    (`config.inception_path`) against `config.eval_real_samples` of the images of
    `decoded(config)` (an `image_files.DecodedImages`, spread evenly over it),
    whose reference statistics (and, for KID, up to 1,000 rows of their features) are cached
    under `data_key(config)`; without the module, a line says how to turn it on."""

    def evaluator(config):
        inception, off = _load_inception(config, what)

        def make(cache_dir):
            if inception is None:
                return None, off
            key = hashlib.sha1(os.path.abspath(inception.path).encode()).hexdigest()[:8]
            kept = 1000 if kid else 0
            name = f"{data_key(config)}{config.eval_real_samples}_inception{key}{'_kid' if kid else ''}_stats.npz"
            cache = os.path.join(cache_dir, name)
            real = None if os.path.exists(cache) else _spread_sample(decoded(config).images, config.eval_real_samples)
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


_cifar10_evaluator = _inception_evaluator("CIFAR-10", _cifar10_decoded, lambda config: "cifar10_train")


CIFAR10 = DatasetSpec(
    name="cifar10",
    fields=("data_dir", "inception_path", "eval_real_samples"),
    image=True,
    sample_shape=lambda config: (32, 32, 3),
    pipeline=lambda config, seed: _decoded_pipeline(_cifar10_decoded(config), config, seed),
    evaluator=_cifar10_evaluator,
    render=_image_grid,
    classes=10,
    eval_samples=10_000,  # the FusedProp paper's Table 2
)


# --------------------------------------------------------------------------------------------
# 2-D Gaussian mixtures
# --------------------------------------------------------------------------------------------


def _mixture(name, pipeline):
    centers, std = real_samples.mixture_spec(name)

    def evaluator(config):
        return lambda cache_dir: (evaluators.MixtureEvaluator(centers, std, _evaluation_latents(config)), None)

    def render(config):
        extent = float(np.abs(centers).max()) * 1.25 + 0.5
        return functools.partial(pictures.scatter_plot, extent=extent, centers=centers)

    return DatasetSpec(
        name=name,
        fields=(),
        image=False,
        sample_shape=lambda config: (2,),
        pipeline=lambda config, seed: pipeline(config.batch_size, seed=seed),
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
    in `config.data_dir`) at `config.image_size` (decoded once, into the user cache; memoized in
    this process).

    Raises:
      image_files.ImageSourceError: no decodable image, or fewer than one batch.
    """
    cache_dir = config.cache_dir or downloads.user_cache_dir()
    prepared = _prepare_user_images(config.data, config.image_size, cache_dir, config.channels, config.data_dir)
    if len(prepared.images) < config.batch_size:
        raise image_files.ImageSourceError(
            f"config.data={config.data!r} holds {len(prepared.images)} decodable images, fewer than one batch "
            f"(config.batch_size={config.batch_size}): add images or lower the batch size."
        )
    return prepared


@functools.lru_cache(maxsize=4)
def _prepare_user_images(path, image_size, cache_dir, channels, data_dir):
    prepared = image_files.decode_once(path, image_size, cache_dir, channels=channels, data_dir=data_dir, log=print)
    print(prepared.describe(path), flush=True)
    return prepared


IMAGES = DatasetSpec(
    name="images",
    fields=(
        "data",
        "image_size",
        "channels",
        "mirror",
        "conditional",
        "data_dir",
        "inception_path",
        "eval_real_samples",
    ),
    image=True,
    sample_shape=lambda config: _user_images(config).images.shape[1:],
    pipeline=lambda config, seed: _decoded_pipeline(_user_images(config), config, seed, mirror=config.mirror),
    evaluator=_inception_evaluator(
        "your images",
        _user_images,
        lambda config: os.path.basename(_user_images(config).cache_path) + "_real",
        kid=True,
    ),
    render=_image_grid,
    eval_samples=5_000,
    class_names=lambda config: _user_images(config).class_names,
)

_REGISTRY = {
    spec.name: spec for spec in sorted((DIGITS, MNIST5K, CIFAR10, IMAGES, RING8, GRID25), key=lambda spec: spec.name)
}


def class_names(config):
    """The names of the classes of `config`'s data (`DatasetSpec.class_names`, else its
    `classes` numbered "0", "1", ...), or None for unlabelled data."""
    spec = get(config.dataset)
    if spec.class_names is not None:
        return spec.class_names(config)
    return None if spec.classes is None else [str(i) for i in range(spec.classes)]


def completed(config):
    """`config` with what its data decide filled in: network widths left None, from the image
    side (`networks.Network.default_widths`); with `conditional` set (a user's images),
    `num_classes` from the data's classes. A config with nothing to fill is returned as it is.

    Raises:
      image_files.ImageSourceError: `conditional` on data without classes.
    """
    widths = fp_networks.facts(config.network).default_widths
    unset = [role for role in ("generator", "discriminator") if config[role].get("width", 0) is None]
    if widths is not None and unset:
        config = config.copy_and_resolve_references()
        chosen = dict(zip(("generator", "discriminator"), widths(get(config.dataset).sample_shape(config)[0])))
        for role in unset:
            config[role].width = chosen[role]
    if not config.get("conditional") or config.num_classes is not None:
        return config
    names = class_names(config)
    if not names:
        raise image_files.ImageSourceError(
            f"config.conditional=True takes the classes from the first level of subfolders (or a TFDS label "
            f"feature); config.data={config.data!r} has images at its top level: put each class in its own "
            "folder, or set --config.conditional=False."
        )
    config = config.copy_and_resolve_references()
    config.num_classes = len(names)
    return config


def names():
    """The dataset names, sorted."""
    return sorted(_REGISTRY)


def get(name):
    """The `DatasetSpec` registered under `name`.

    Raises:
      ValueError: for an unknown name; the message lists the valid names.
    """
    return _checks.registered(_REGISTRY, "dataset", name)


def network_inputs(config):
    """`(generator kwargs, discriminator kwargs)` that `config`'s data fix for its network."""
    return fp_networks.facts(config.network).inputs(get(config.dataset).sample_shape(config))


# --------------------------------------------------------------------------------------------
# One dataset, prepared for one run
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Prepared:
    """What a run needs of its dataset, from one look at the config (`prepare`).

    Attributes:
      spec: the `DatasetSpec`.
      pipeline: `seed -> tf.data.Dataset` of training batches.
      make_evaluator: `cache_dir -> (evaluator or None, message or None)` (see `DatasetSpec`).
      render: the sample-grid renderer.
      grid_inputs: `(latents, labels)` of the sample grid (`grid_inputs`).
      network_inputs: the builders' arguments that the data fix (`network_inputs`).
    """

    spec: DatasetSpec
    pipeline: Callable
    make_evaluator: Callable
    render: Callable
    grid_inputs: tuple
    network_inputs: tuple


def prepare(config, evaluate=True):
    """The dataset of `config`, prepared: what bad input breaks (a CIFAR-10 Inception path that
    is neither local nor downloadable) fails here, before anything is written. Without
    `evaluate` (or `config.eval_samples`), `make_evaluator` makes none.

    Raises:
      tf_fusedprop.experiment.features.InceptionModuleUnavailableError: bad `config.inception_path`.
    """
    spec = get(config.dataset)
    return Prepared(
        spec=spec,
        pipeline=functools.partial(spec.pipeline, config),
        make_evaluator=spec.evaluator(config) if evaluate and config.eval_samples else (lambda cache_dir: (None, None)),
        render=spec.render(config),
        grid_inputs=grid_inputs(config),
        network_inputs=network_inputs(config),
    )
