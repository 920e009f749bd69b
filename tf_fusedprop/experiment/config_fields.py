"""The fields of a training config and the check of each one's value: `FIELDS` (every
config's) and `DATASET_FIELDS` (those a dataset adds), with `ConfigError`, what every check of
a config raises.

A field's check is `check(key, value)`: it raises a one-line `ConfigError` naming the field,
the value received and what is accepted (`known_dataset` also returns the dataset's
`DatasetSpec`). The fields that configure the GAN (`GAN_FIELDS`) have no check here: the
library checks them when `config.gan_arguments` builds its objects. `config.check` runs these
checks, then the checks of fields against each other and against the data.
"""

import math

from tf_fusedprop import networks as fp_networks
from tf_fusedprop import precision as fp_precision
from tf_fusedprop._checks import positive_int
from tf_fusedprop.experiment import datasets, image_decoding

__all__ = [
    "DATASET_FIELDS",
    "FIELDS",
    "GAN_FIELDS",
    "MIXED_PRECISION",
    "ConfigError",
    "is_int",
    "known_dataset",
    "require",
]

#: Accepted values of `config.mixed_precision` ("auto": from the hardware, `precision.choose`).
MIXED_PRECISION = fp_precision.POLICIES + ("off",)


class ConfigError(ValueError):
    """An invalid config or workdir; the message is one line saying what was received and
    what to do."""


def require(condition, message):
    """Raises a `ConfigError` with `message` unless `condition` holds."""
    if not condition:
        raise ConfigError(message)


def is_int(value):
    """Whether `value` is an integer (a bool is not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _positive_int(key, value):
    try:
        positive_int(key, value)
    except ValueError:
        raise ConfigError(f"config.{key} must be a positive integer; received {key}={value!r}.") from None


def _sample_count(key, value):
    require(
        is_int(value) and (value == 0 or value >= 2),
        f"config.{key} must be 0 (off) or an integer >= 2; received {key}={value!r}.",
    )


def _seed(key, value):
    require(is_int(value) and value >= 0, f"config.{key} must be an integer >= 0; received {key}={value!r}.")


def _learning_rate(key, value):
    require(
        isinstance(value, (int, float)) and math.isfinite(value) and value > 0,
        f"config.{key} must be a positive number; received {key}={value!r}.",
    )


def _adam_beta(key, value):
    require(
        isinstance(value, (int, float)) and 0 <= value < 1, f"config.{key} must be in [0, 1); received {key}={value!r}."
    )


def _known(kind, names, get):
    """The check that `get(value)` (a library registry lookup) knows the value."""

    def check(key, value):
        """`get(value)`: what `value` names, or a one-line `ConfigError` listing the names known."""
        try:
            return get(value)
        except ValueError:
            raise ConfigError(
                f"unknown {kind}: received config.{key}={value!r}; expected one of {', '.join(names())}."
            ) from None

    return check


def _mixed_precision(key, value):
    require(
        value in MIXED_PRECISION,
        f"config.{key} must be one of {', '.join(MIXED_PRECISION)}; received {key}={value!r}.",
    )


def _minutes(key, value):
    require(
        isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 and value == value,
        f"config.{key} must be a number of minutes, 0 or more (0: none); received {key}={value!r}.",
    )


def _bool(key, value):
    require(isinstance(value, bool), f"config.{key} must be True or False; received {value!r}.")


#: The check of `config.dataset`, which returns its `datasets.DatasetSpec`.
known_dataset = _known("dataset", datasets.names, datasets.get)


#: The fields that configure the GAN (`config.gan_arguments` maps them; the library checks them).
GAN_FIELDS = (
    "loss",
    "form",
    "n_dis",
    "warmup",
    "alternate_every",
    "auto",
    "iter_size",
    "ema",
    "r1",
    "gp",
    "augment",
    "adaptive_augment",
    "lookahead",
    "probe",
)


#: The fields of every config -> the check of the value (None: any value, or checked by the
#: library through `config.gan_arguments`; `generator` and `discriminator` are checked against
#: their builders by `config.DATA_RELATIONS`).
FIELDS = {
    "name": None,
    "dataset": known_dataset,
    "network": _known("network", fp_networks.names, fp_networks.get),
    "generator": None,
    "discriminator": None,
    "latent_dim": _positive_int,
    **{key: None for key in GAN_FIELDS},
    "batch_size": _positive_int,
    "steps": _positive_int,
    "steps_per_epoch": _positive_int,
    "checkpoint_minutes": _minutes,
    "d_lr": _learning_rate,
    "g_lr": _learning_rate,
    "warmup_g_lr_scale": _learning_rate,  # a positive factor
    "beta1": _adam_beta,
    "beta2": _adam_beta,
    "seed": _seed,
    "eval_samples": _sample_count,
    "eval_every": _positive_int,
    "grid_samples": _positive_int,
    "cache_dir": None,
    "mixed_precision": _mixed_precision,
    "jit_compile": _bool,
    "steps_per_execution": _positive_int,
    "num_classes": None,
}


def _channels(key, value):
    require(
        value in (None, 1, 3),
        f"config.{key} must be 1 (gray), 3 (RGB) or None (from the data); received {key}={value!r}.",
    )


def _data(key, value):
    require(
        isinstance(value, str) and bool(value),
        f"config.{key} must name your images: a folder (searched recursively), a .zip of one, or tfds:NAME[:SPLIT]; "
        f"received {key}={value!r}.",
    )


def _background(key, value):
    try:
        image_decoding.background_color(value)
    except ValueError as err:
        raise ConfigError(f"config.{key}: {err} (e.g. --config.{key}=black or --config.{key}='#202020').") from None


#: The fields that a dataset adds (its `DatasetSpec.fields`) -> the check of the value.
DATASET_FIELDS = {
    "data": _data,
    "background": _background,
    "channels": _channels,
    "mirror": _bool,
    "conditional": _bool,
    "image_size": _positive_int,  # and a multiple of the network's (`config.RELATIONS`)
    "data_dir": None,
    "inception_path": None,
    "eval_real_samples": _sample_count,
}
