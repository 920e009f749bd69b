"""The training config: `validate(config)` checks every field before anything is built.

The fields are documented in `configs/base.py`. The fields that configure the GAN map onto
the library's constructors (`gan_arguments`: `loss`, `form` and `n_dis` -> `forms.get`,
`iter_size`, `ema` -> `EMA(**ema)`, `r1` -> `R1(**r1)`, `gp` -> `GradientPenalty(**gp)`,
`augment` -> `DiffAugment`, `lookahead` -> `Lookahead(**lookahead)`), and the library checks them, once: `validate` builds those
arguments and turns a ValueError into a one-line `ConfigError` naming the fields. What the
library cannot check (the harness's own fields: the dataset, the schedule, the optimizers'
numbers, the evaluation) has one entry each in `config_fields.FIELDS` (or, for the fields a
dataset adds, `config_fields.DATASET_FIELDS`), the check of its value, and `RELATIONS` check
fields against each other, in order. `ConfigError`, what every check raises, is defined with
the checks of one field (`config_fields`).
"""

import dataclasses
import inspect
import json

from tf_fusedprop import forms as fp_forms
from tf_fusedprop import losses as fp_losses
from tf_fusedprop import networks as fp_networks
from tf_fusedprop import schedules
from tf_fusedprop._checks import positive_int
from tf_fusedprop.augment import DiffAugment
from tf_fusedprop.ema import EMA
from tf_fusedprop.experiment import config_fields, datasets, training_plan
from tf_fusedprop.experiment.config_fields import ConfigError, is_int, require
from tf_fusedprop.lookahead import Lookahead
from tf_fusedprop.regularizers import R1, GradientPenalty
from tf_fusedprop.stray_probe import StrayProbe

__all__ = [
    "RELATIONS",
    "ADDED_DATASET_FIELDS",
    "ADDED_FIELDS",
    "CheckedConfig",
    "ConfigError",
    "check",
    "fit_steps_per_execution",
    "gan_arguments",
    "json_values",
    "LOOKAHEAD_FORM_RULES",
    "as_it_trains",
    "lookahead_applies",
    "schedule",
    "validate",
    "with_added_fields",
]


def schedule(config):
    """`(epochs, steps_per_epoch)`; an epoch longer than the run is shortened to the run."""
    steps_per_epoch = min(config.steps_per_epoch, config.steps)
    return config.steps // steps_per_epoch, steps_per_epoch


def fit_steps_per_execution(config):
    """`(config, note)`: where the epoch length (and `warmup`, where set: the train function
    switches forms there) is not a multiple of `config.steps_per_execution`, a copy of `config`
    with the largest common divisor not above it, and a line saying so; else `(config, None)`. For a `steps_per_execution` that the user did not set
    (train.py: not on the command line), so that changing the epoch length does not ask for it;
    one the user set is checked by `validate` as it is. Invalid numbers are left to `validate`.
    """
    numbers = (config.steps, config.steps_per_epoch, config.steps_per_execution)
    if not all(is_int(n) and n > 0 for n in numbers):
        return config, None
    _, steps_per_epoch = schedule(config)
    try:
        plan = training_plan.plan(config)
    except (ValueError, TypeError):
        return config, None  # refused by validate
    wanted = config.steps_per_execution
    fitted = plan.fitted_steps_per_execution(steps_per_epoch, wanted)
    if fitted == wanted:
        return config, None
    warmup = plan.warmup
    config = config.copy_and_resolve_references()
    config.steps_per_execution = fitted
    epoch_only = max(d for d in range(1, min(wanted, steps_per_epoch) + 1) if steps_per_epoch % d == 0)
    lengths = f"the epoch length ({steps_per_epoch} steps)"
    lengths += f" and the warm start ({warmup})" if fitted != epoch_only and warmup % epoch_only else ""
    auto = plan.fields["auto"]
    held = f", at most config.auto.hold ({auto['hold']})" if auto["threshold"] and auto["hold"] < epoch_only else ""
    return config, (
        f"config.steps_per_execution: {fitted}, not the config's {wanted}, to divide {lengths}{held}; "
        "set it on the command line to choose another divisor."
    )


def json_values(config):
    """The config as plain JSON values, as `config.json` and `summary.json` hold it."""
    return json.loads(json.dumps(config.to_dict()))


#: The most real images an adaptive augmentation holds out (`adaptive_augment.held_out`).
MAX_HELD_OUT = 1024

#: Fields added after runs were recorded, with the value that means what those runs did: a
#: `config.json` without one reads as having that value (a resume, the benchmarks' records).
ADDED_FIELDS = {
    "warmup": 0,
    "alternate_every": 0,
    "warmup_g_lr_scale": 1.0,
    "ema": {"rampup": None},
    "checkpoint_minutes": 10,  # how often a run saves, not what it trains
    "adaptive_augment": {"target": None, "interval": 4, "ramp_images": 500_000, "held_out": 0},
    "probe": {"every": 0},
    "auto": training_plan.SCHEDULING_FIELDS["auto"],
}
#: The same for the fields a dataset adds, by dataset: a run of your images recorded before
#: compositing existed trained on the colour stored beneath transparent pixels.
ADDED_DATASET_FIELDS = {"images": {"background": "none"}}


def gan_arguments(config):
    """`FusedPropGAN`'s arguments (but the networks) as `config` sets them: the library's own
    objects, built (and so checked) by the library.

    Raises:
      ConfigError: the library refused a value; one line naming the config fields.
    """
    builders = (
        (("loss",), lambda: {"loss": fp_losses.get(config.loss).name}),
        (("form",), lambda: {"form": fp_forms.get(config.form)}),  # an unknown name blames config.form alone
        (("form", "n_dis"), lambda: {"form": fp_forms.get(config.form, n_dis=config.n_dis)}),
        (("auto",), lambda: _checked_auto(config)),  # its own values first: an error names it alone
        (("warmup", "alternate_every", "auto"), lambda: {"form": training_plan.plan(config).form}),
        (("loss", "form"), lambda: _supported_pair(config)),
        (("iter_size",), lambda: {"iter_size": positive_int("iter_size", config.iter_size)}),
        (("num_classes",), lambda: {"num_classes": _num_classes(config.num_classes)}),
        (("r1",), lambda: {"r1": _feature(R1, config.r1, "gamma", 1.0)}),
        (("gp",), lambda: {"gp": _feature(GradientPenalty, config.gp, "weight", 1.0)}),
        (("augment",), lambda: {"augment": DiffAugment(config.augment) if config.augment else None}),
        (("adaptive_augment",), lambda: {"augment": _augment(config)}),
        (("ema",), lambda: {"ema": _feature(EMA, config.ema, "decay", 0.5)}),
        (("lookahead",), lambda: {"lookahead": _lookahead(config)}),
        (("probe",), lambda: {"probe": _feature(StrayProbe, config.probe, "every", 1)}),
    )
    arguments = {"seed": config.seed}
    for keys, build in builders:
        try:
            arguments.update(build())
        except (ValueError, TypeError) as err:
            fields = ", ".join(f"config.{key}" for key in keys)
            raise ConfigError(f"invalid {fields}: {' '.join(str(err).split())}") from None
    penalties = (arguments.pop("r1"), arguments.pop("gp"))
    return {**arguments, "regularizers": [penalty for penalty in penalties if penalty is not None]}


def with_added_fields(values, added=None):
    """A recorded config's JSON values with the fields added since (`ADDED_FIELDS`, nested ones
    inside their sub-dicts, and its dataset's `ADDED_DATASET_FIELDS`) at the value that means
    what it did."""
    merged = dict(values)
    if added is None:
        added = {**ADDED_FIELDS, **ADDED_DATASET_FIELDS.get(values.get("dataset"), {})}
    for key, default in added.items():
        if isinstance(default, dict):
            if isinstance(merged.get(key), dict):
                merged[key] = with_added_fields(merged[key], default)
            else:
                merged.setdefault(key, dict(default))
        else:
            merged.setdefault(key, default)
    return merged


#: The words of `lookahead.forms` that name a rule rather than forms: a form added later joins
#: the configs that say so, and no recorded config changes with it.
LOOKAHEAD_FORM_RULES = {"all_forms": fp_forms.FORMS, "simultaneous_forms": fp_forms.SIMULTANEOUS_FORMS}


def lookahead_applies(form, lookahead):
    """Whether the `lookahead` sub-dict (`every`, `alpha`, `forms`) turns Lookahead on for
    `form`: `every` is not 0 and `forms` (comma-separated form names and rules of
    `LOOKAHEAD_FORM_RULES`; absent: every form) includes it.

    Raises:
      ValueError: `forms` names a form or rule that does not exist.
    """
    listed = str(lookahead.get("forms", "all_forms"))
    words = [word.strip() for word in listed.split(",") if word.strip()]
    unknown = sorted(set(words) - set(fp_forms.FORMS) - set(LOOKAHEAD_FORM_RULES))
    if unknown:
        raise ValueError(
            f"lookahead.forms names unknown forms {unknown}; forms: {', '.join(fp_forms.FORMS)}, "
            f"or the rules {', '.join(LOOKAHEAD_FORM_RULES)}."
        )
    forms = {name for word in words for name in LOOKAHEAD_FORM_RULES.get(word, (word,))}
    return bool(lookahead["every"]) and form in forms


def as_it_trains(values):
    """A config's JSON values with `lookahead.forms` read for the run's form (None, and `every`
    0 where Lookahead does not apply to it): two configs that train alike compare equal, however
    their forms are listed."""
    lookahead = values.get("lookahead")
    if not (isinstance(lookahead, dict) and "forms" in lookahead):
        return values
    applies = lookahead_applies(values.get("form"), lookahead)
    return {**values, "lookahead": {**lookahead, "forms": None, "every": lookahead["every"] if applies else 0}}


def _feature(cls, settings, switch, neutral, applies=True):
    """`cls(**settings)`, the object of a feature's sub-dict, or None when its `switch` field is
    off (0 or None) or the feature does not `apply`. Off, `cls` is still built (with `switch`
    set to a `neutral` valid value), so that a bad value of another field is refused now, not
    on the day the feature is switched on."""
    settings = dict(settings)
    off = settings[switch] is None or settings[switch] == 0
    built = cls(**{**settings, **({switch: neutral} if off else {})})
    return None if off or not applies else built


def _augment(config):
    """`DiffAugment(config.augment)`, adaptive (`p="auto"` with the `adaptive_augment` sub-dict)
    where `adaptive_augment.target` is set; None without a policy. The adaptive one is built
    either way, so that a bad interval or ramp is refused before it is switched on."""
    settings = dict(config.adaptive_augment)
    adaptive = settings["target"] is not None
    settings["held_out"] = settings["held_out"] or None  # 0: ADA's signal
    if settings["held_out"] is not None and not (is_int(settings["held_out"]) and settings["held_out"] <= MAX_HELD_OUT):
        raise ValueError(
            f"adaptive_augment.held_out must be a number of images from 0 to {MAX_HELD_OUT} (D scores them all at "
            f"every adjustment); received held_out={settings['held_out']!r}"
        )
    if settings["held_out"] is not None and datasets.get(config.dataset).held_out is None:
        raise ValueError(
            f"adaptive_augment.held_out needs real images that D never trains on, and dataset {config.dataset!r} "
            f"holds none back (your images and the digit sets do); received held_out={settings['held_out']!r}, set it to 0"
        )
    if settings["held_out"] is not None and (config.num_classes is not None or config.get("conditional")):
        raise ValueError(
            "adaptive_augment.held_out compares unconditional samples; a conditional GAN adapts with held_out=0 "
            f"(received held_out={settings['held_out']!r})"
        )
    built = DiffAugment(config.augment, p="auto", **{**settings, **({} if adaptive else {"target": 0.6})})
    if not config.augment:
        if adaptive:
            raise ValueError(
                "adaptive_augment.target adapts the probability of config.augment's operations, and it names none; "
                "set one, e.g. --config.augment=translation,cutout"
            )
        return None
    return built if adaptive else DiffAugment(config.augment)


def _lookahead(config):
    """`Lookahead(every, alpha)` where `lookahead_applies` to the config's form, else None."""
    settings = {key: value for key, value in dict(config.lookahead).items() if key != "forms"}
    return _feature(Lookahead, settings, "every", 1, applies=lookahead_applies(config.form, dict(config.lookahead)))


def _checked_auto(config):
    """Nothing, once `schedules.Auto` has taken `config.auto` on its own (when on: threshold not
    0), as it would schedule fused (alternating ignores it, but it is checked all the same)."""
    auto = config.auto.to_dict()
    if training_plan.auto_on(auto):
        schedules.Auto("fused", **auto)
    return {}


def _supported_pair(config):
    fp_forms.check_form(config.loss, config.form)
    return {}


def _num_classes(value):
    return None if value is None else positive_int("num_classes", value)


# --------------------------------------------------------------------------------------------
# Checks of fields against each other: check(config), once every field is valid
# --------------------------------------------------------------------------------------------


def _network_fits_dataset(config):
    image = datasets.get(config.dataset).image
    fitting = [name for name in fp_networks.names() if fp_networks.facts(name).image == image]
    require(
        fp_networks.facts(config.network).image == image,
        f"network {config.network!r} does not fit dataset {config.dataset!r}: use "
        f"{'an image network (' + ', '.join(fitting) + ')' if image else 'network ' + ', '.join(fitting)} "
        f"(received network={config.network!r}, dataset={config.dataset!r}).",
    )


def _image_size_fits_network(config):
    if "image_size" not in config:
        return
    multiple = fp_networks.facts(config.network).size_multiple
    require(
        config.image_size % multiple == 0,
        f"network {config.network!r} builds images whose side is a multiple of {multiple}; received "
        f"image_size={config.image_size} (e.g. --config.image_size={max(multiple, round(config.image_size / multiple) * multiple)}).",
    )


def _classes_fit_dataset(config, data):
    if config.num_classes is None:
        return
    names = data.class_names
    classes = None if names is None else len(names)
    require(
        classes is not None and config.num_classes == classes,
        f"config.num_classes (a conditional GAN) must be the classes of dataset {config.dataset!r}"
        f"{f' ({classes})' if classes else ', which has no labels'}; received num_classes={config.num_classes}.",
    )


def _augment_needs_images(config):
    require(
        not config.augment or datasets.get(config.dataset).image,
        f"config.augment (DiffAugment) transforms images; dataset {config.dataset!r} has none "
        f"(received augment={config.augment!r}); set --config.augment=''.",
    )


def _batch_splits_into_micro_batches(config):
    require(
        config.batch_size % config.iter_size == 0,
        f"config.batch_size must be divisible by config.iter_size; received batch_size={config.batch_size}, "
        f"iter_size={config.iter_size}.",
    )


def _whole_epochs(config):
    require(
        config.steps <= config.steps_per_epoch or config.steps % config.steps_per_epoch == 0,
        f"config.steps must be a multiple of config.steps_per_epoch; received steps={config.steps}, "
        f"steps_per_epoch={config.steps_per_epoch} (e.g. --config.steps="
        f"{max(1, round(config.steps / config.steps_per_epoch)) * config.steps_per_epoch}).",
    )


def _whole_executions(config):
    _, steps_per_epoch = schedule(config)
    require(
        steps_per_epoch % config.steps_per_execution == 0,
        f"the epoch length ({steps_per_epoch} steps) must be a multiple of config.steps_per_execution; "
        f"received steps_per_execution={config.steps_per_execution}.",
    )
    plan = training_plan.plan(config)
    fields = plan.fields  # what the schedule does (alternating: nothing)
    warmup = fields["warmup"]
    require(
        warmup % config.steps_per_execution == 0 or plan.schedule.repeats is not None,  # a period: any call
        f"config.warmup ({warmup} G updates: the form switches there) must be a multiple of "
        f"config.steps_per_execution; received steps_per_execution={config.steps_per_execution}.",
    )
    auto = fields["auto"]
    require(
        not auto["threshold"] or auto["hold"] >= config.steps_per_execution,
        f"config.auto.hold ({auto['hold']} G updates alternated after a decision) must be at least "
        f"config.steps_per_execution, so that a stretch asked mid-call reaches the next call; received "
        f"steps_per_execution={config.steps_per_execution}.",
    )
    probe = config.probe.every if "probe" in config else 0
    require(
        not auto["threshold"] or auto["signal"] != "stray" or probe in (0, auto["every"]),
        f"config.auto.threshold follows its own probe every config.auto.every={auto['every']} G updates; "
        f"config.probe.every must be 0 or {auto['every']}; received {probe}.",
    )


def _builder_arguments(config, data):
    """`config.generator` and `config.discriminator` are arguments of the network's builders
    that the data and config do not set already."""
    builders = fp_networks.get(config.network)
    from_data = data.network_inputs
    from_config = ({"latent_dim", "dtype", "num_classes"}, {"dtype", "num_classes"})
    for role, builder, fixed, extra in zip(("generator", "discriminator"), builders, from_data, from_config):
        parameters = set(inspect.signature(builder).parameters)
        reserved = set(fixed) | extra
        given = config[role].to_dict()
        for key in sorted(given):
            require(
                key not in reserved,
                f"config.{role}.{key} is set from the data and config, not by hand; remove it "
                f"(received {role}.{key}={given[key]!r}).",
            )
            require(
                key in parameters,
                f"config.{role}.{key} is not an argument of {builder.__name__}; valid: "
                f"{', '.join(sorted(parameters - reserved))} (received {role}.{key}={given[key]!r}).",
            )


#: Checks of fields against each other, in order.
RELATIONS = (
    _network_fits_dataset,
    _image_size_fits_network,
    _augment_needs_images,
    _batch_splits_into_micro_batches,
    _whole_epochs,
    _whole_executions,
)

#: Checks of fields against the data (`check(config, data)`, `data` the run's
#: `datasets.OpenedDataset`), in order, once the fields are valid.
DATA_RELATIONS = (_classes_fit_dataset, _builder_arguments)


@dataclasses.dataclass(frozen=True)
class CheckedConfig:
    """A config checked once (`check`), with what the checks built from it, for the run to use
    instead of building it again.

    Attributes:
      data: the config's dataset (`datasets.OpenedDataset`), to share.
      plan: its `training_plan.TrainingPlan` (the form's schedule, G's rate).
      arguments: `FusedPropGAN`'s arguments but the networks (`gan_arguments`): the library's
        own objects, not yet attached to a model (for one GAN).
    """

    data: object
    plan: object
    arguments: dict


def check(config, data=None):
    """Checks every field of a training config, then the config against its data (see
    `configs/base.py` for the fields' meaning), and returns what it built on the way.

    Args:
      config: the config.
      data: a `datasets.OpenedDataset` of a config that reads the same data (`datasets.open_dataset`'s
        `reuse`), or None; what it has read is not read again.

    Returns:
      A `CheckedConfig`: the dataset (the checks against the data read it: a user's images
      decoded, or read from the decoded-once cache), the training plan and the GAN's arguments.

    Raises:
      ConfigError: the first problem found, in one line naming the field, the value received
        and what is accepted.
      image_files.ImageSourceError: a user's images cannot be read.
    """
    missing = [key for key in config_fields.FIELDS if key not in config]
    require(not missing, f"the config lacks {', '.join(missing)}; build it on configs/base.py's get_base_config().")
    spec = config_fields.known_dataset("dataset", config.dataset)
    checks = {**config_fields.FIELDS, **{key: config_fields.DATASET_FIELDS[key] for key in spec.fields}}
    unknown = sorted(set(config.keys()) - set(checks))
    require(not unknown, f"unknown config keys {unknown} for dataset {config.dataset!r}; remove them.")
    missing = [key for key in spec.fields if key not in config]
    require(not missing, f"dataset {config.dataset!r} needs config fields {missing}.")
    for key, check in checks.items():
        if check is not None:
            check(key, config[key])
    arguments = gan_arguments(config)
    for check in RELATIONS:
        check(config)
    data = datasets.open_dataset(config, reuse=data)
    for check in DATA_RELATIONS:
        check(config, data)
    return CheckedConfig(data, training_plan.plan(config), arguments)


def validate(config, data=None):
    """`check(config, data).data`: the config's dataset, once every field and relation is checked.

    Raises:
      ConfigError: as `check`.
      image_files.ImageSourceError: a user's images cannot be read.
    """
    return check(config, data).data
