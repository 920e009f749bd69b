"""Which runs a grid makes and with which configs: the stabilizers (named changes of a shipped
config), a `Run` per (task, loss, form, stabilizer, seed), its validated config, which configs
train the same (`comparable`, `distinct`), and the estimated seconds of a run."""

import ast
import dataclasses
import math

from benchmarks.time_to_quality.tasks import FORMS, HINGE_FORMS, HINGE_TASK, TASKS
from tf_fusedprop.experiment import training_plan
from tf_fusedprop.experiment.config import (
    ConfigError,
    as_it_trains,
    json_values,
    schedule,
    validate,
    with_added_fields,
)

#: Stabilizers: named changes of the shipped config (`{KEY: VALUE}` with dotted keys, or
#: `{task: {KEY: VALUE}}`), each a row per form of the table, alternating included (the
#: comparison stays honest; a change that leaves a form's config as it was makes no row).
#: "defaults" is the shipped config itself; `--define_stabilizer` adds others for one invocation.
STABILIZERS = {
    "defaults": {},
    # The configs as shipped before the stabilizers were chosen (commit 049eb56, 2026-11-30).
    "previous_defaults": {
        "ring8": {"steps_per_execution": 10, "steps_per_epoch": 500, "ema.decay": None, "lookahead.every": 0},
        "grid25": {"steps_per_execution": 10, "steps_per_epoch": 1000, "ema.decay": None, "lookahead.every": 0},
        "digits": {"steps_per_execution": 1, "ema.decay": 0.999, "beta1": 0.5},
    },
    # Lookahead for alternating too, where the configs give it to the simultaneous forms only.
    "lookahead_everywhere": {"lookahead.forms": "all_forms"},
    "no_lookahead": {"lookahead.every": 0},
    "no_ema": {"ema.decay": None},
    "beta1_0": {"beta1": 0.0},
    # Issue 30: R1 on the real samples (Mescheder et al. 2018: SimGD converges locally with it),
    # lazy every 16 D updates, at the small weights GUIDE 4(e) pointed to (0.1 and 1 slowed
    # both forms on ring8); and the FusedProp paper's lever for its ResNet, G's rate halved.
    "r1_0.001": {"r1.gamma": 0.001, "r1.every": 16},
    "r1_0.003": {"r1.gamma": 0.003, "r1.every": 16},
    "r1_0.01": {"r1.gamma": 0.01, "r1.every": 16},
    # Issue 46: a warm start of K alternating G updates before the form (`config.warmup`), with
    # the config's Lookahead and without it; alternating's own run is the same with or without.
    **{f"warmup{k}": {"warmup": k} for k in (250, 500, 1000, 1500)},
    **{f"warmup{k}_no_lookahead": {"warmup": k, "lookahead.every": 0} for k in (250, 500, 1000)},
    # ... and one alternating update every k (one step per call, as these rows were measured).
    **{f"alternate_every{k}": {"alternate_every": k, "steps_per_execution": 1} for k in (2, 4)},
    # ... and both: ring8's 100-update warm start (all modes kept on 10 seeds), then MNIST's
    # every-4th mix (its stalling seed escapes) instead of pure fused (issue 62).
    "warmup100_mix4": {"warmup": 100, "alternate_every": 4, "steps_per_execution": 1},
    # ... and G's rate x1.5 after a 500-update warm start.
    "warmup500_g_lr_x1.5": {"warmup": 500, "warmup_g_lr_scale": 1.5},
    # Issue 48: configs/mnist.py's DiffAugment where a config ships none (configs/images.py's
    # defaults measured on mnist64), and the EMA horizon ramped up as configs/images.py ships it
    # (half-life <= 5% of the updates): at the config's decay, and at images.py's 0.999 with and
    # without the ramp (at 0.995 the ramp ends after ~2,800 updates; at 0.999 after ~13,900).
    "diffaugment": {"augment": "translation,cutout"},
    "ema_rampup": {"ema.rampup": 0.05},
    # Issue 61: the same operations applied with ADA's adaptive probability (target 0.6, p from
    # 0 to 1 in at most 500k real samples) instead of to every sample.
    "adaptive_diffaugment": {"augment": "translation,cutout", "adaptive_augment.target": 0.6},
    # ... with p able to go from 0 to 1 in 100k real samples (1,563 updates of 64), for a short run.
    "adaptive_diffaugment_ramp100k": {
        "augment": "translation,cutout",
        "adaptive_augment.target": 0.6,
        "adaptive_augment.ramp_images": 100_000,
    },
    # ... following D's memory instead (`P(D(real) > D(held_out))` against 64 images training
    # never reads, issue 61's second signal), as benchmarks/overfitting_signals.py ran it.
    "adaptive_diffaugment_held_out64": {
        "augment": "translation,cutout",
        "adaptive_augment.target": 0.6,
        "adaptive_augment.held_out": 64,
        "adaptive_augment.ramp_images": 100_000,
    },
    # Issue 62: `schedules.Auto`, alternating 100 updates after each 10 probes (100 updates) whose
    # mean stray is below 0.45, until a window has read 0.7 (what ring8, grid25 and digits ran).
    # Tasks whose config ships a schedule of alternating updates run it without (no warm start,
    # no periodic mix): Auto replaces them.
    "auto": {"auto.threshold": 0.45, "auto.peak": 0.7, "warmup": 0, "alternate_every": 0},
    # The same, stopping only after three windows in a row at 0.7 (300 updates) instead of one:
    # no better on ring8 (docs/quality.md, "Auto stopping on a sustained peak").
    "auto_sustained": {
        "auto.threshold": 0.45,
        "auto.peak": 0.7,
        "auto.peak_windows": 3,
        "warmup": 0,
        "alternate_every": 0,
    },
    # Auto on D's logit gap instead of the probe: alternating 100 updates after each 10 readings
    # (100 updates) whose mean gap (real - fake) is above 4 (ring8's stalls read 4.5-8.5, its
    # other runs at most 3.2: docs/quality.md, "D's logit gap").
    "auto_gap": {"auto.threshold": 4.0, "auto.signal": "logit_gap", "warmup": 0, "alternate_every": 0},
    # The same, acting on the early phase only: once a window's gap is 2 or less (alternating's
    # range on ring8), it no longer alternates (grid25's gap rises past 4 late in the run).
    "auto_gap_settled": {
        "auto.threshold": 4.0,
        "auto.signal": "logit_gap",
        "auto.peak": 2.0,
        "warmup": 0,
        "alternate_every": 0,
    },
    # Auto on G's spread (`fake_spread`): alternating 100 updates after each 10 readings (100
    # updates) whose mean spread is below 0.3, until a window reads 0.45 or more (the MNIST
    # screen's fused seeds read 0.19-0.26 while stalled, 0.46-0.50 by 500 updates on the two that
    # escaped: docs/quality.md, "G's spread"; chosen on those seeds).
    "auto_spread": {
        "auto.threshold": 0.3,
        "auto.signal": "spread",
        "auto.peak": 0.45,
        "warmup": 0,
        "alternate_every": 0,
    },
    # The same without `peak`: a stretch whenever a window reads below 0.3, at any time (after
    # the switch, fused narrowed the MNIST seed Auto had rescued to 0.14: docs/quality.md).
    "auto_spread_nopeak": {"auto.threshold": 0.3, "auto.signal": "spread", "warmup": 0, "alternate_every": 0},
    # Start alternating, let the spread say when fused takes over and when it must stop: a warm
    # start of 100 updates (ring8's shortest that kept every mode on 10 seeds), then the same
    # Auto (the warm start's readings count: a window below 0.3 in it goes on alternating).
    "warmup100_auto_spread": {
        "warmup": 100,
        "auto.threshold": 0.3,
        "auto.signal": "spread",
        "alternate_every": 0,
    },
    # Auto on G's coverage of the real batch (`fake_coverage`): alternating 100 updates after
    # each window whose mean coverage is below 0.8, at any time. Data against data reads 0.97
    # +- 0.03 a batch of 64 on MNIST; exported MNIST generators read 0.93 drawing nine digits,
    # 0.86 six, 0.47-0.75 two to six (docs/quality.md, "G's coverage"). The training
    # G read far lower (fidelity counts too): this alternated 62-98% of MNIST's and ring8's updates.
    "auto_coverage": {"auto.threshold": 0.8, "auto.signal": "coverage", "warmup": 0, "alternate_every": 0},
    # Start alternating, then alternate where G's coverage falls: a warm start of 100 updates,
    # then Auto on the coverage with `drop` alone (threshold 0.001: nearly never), alternating
    # 100 updates after each window whose mean is 30% below the best since the last stretch
    # (issue 62's next step: a fall from the run's own best, not a level, so fidelity's slow
    # rise does not read as a stall). On ring8 and grid25 its falls came with every mode drawn
    # (false alarms: 200-1,100 more alternating updates, nothing gained); the digits never fell
    # (docs/quality.md, "A fall from G's own best coverage").
    "warmup100_auto_coverage_drop": {
        "warmup": 100,
        "auto.threshold": 0.001,
        "auto.signal": "coverage",
        "auto.drop": 0.3,
        "alternate_every": 0,
    },
    "ema0.999": {"ema.decay": 0.999},
    "ema0.999_rampup": {"ema.decay": 0.999, "ema.rampup": 0.05},
    "g_lr_half": {
        "ring8": {"g_lr": 5e-4},
        "grid25": {"g_lr": 5e-4},
        "digits": {"g_lr": 1e-4},
        "mnist": {"g_lr": 1e-4},
        "digits32": {"g_lr": 1e-4},
    },
}


@dataclasses.dataclass(frozen=True)
class Run:
    """One run of a grid: a task's config trained with this loss, form, stabilizer and seed."""

    task: str
    loss: str
    form: str
    seed: int
    stabilizer: str = "defaults"

    @property
    def id(self):
        """The run's name in results.json and its workdir's: task-loss-row-s<seed>."""
        return f"{self.task}-{self.loss}-{self.row}-s{self.seed}"

    @property
    def row(self):
        """The table row's form label: the form, and its stabilizer unless the defaults."""
        return self.form if self.stabilizer == "defaults" else f"{self.form}+{self.stabilizer}"


def plan(tasks, forms, seeds, losses=("nonsaturating", "hinge"), stabilizers=("defaults",)):
    """The runs in seed-major order: every (task, loss, form, stabilizer) of seed 0, then of seed 1..."""
    runs = []
    for seed in range(max(seeds[t] for t in tasks)):
        for task in tasks:
            variants = [("nonsaturating", f) for f in FORMS if f in forms and "nonsaturating" in losses]
            if task == HINGE_TASK and "hinge" in losses:
                variants += [("hinge", f) for f in HINGE_FORMS if f in forms]
            runs += [
                Run(task, loss, form, seed, stabilizer)
                for loss, form in variants
                for stabilizer in stabilizers
                if seed < seeds[task]
            ]
    return runs


def define_stabilizer(text):
    """`(name, changes)` of `NAME:KEY=VALUE,KEY=VALUE`; raises ConfigError for another shape."""
    name, sep, body = text.partition(":")
    if not sep or not name or not body:
        raise ConfigError(f"--define_stabilizer takes NAME:KEY=VALUE,KEY=VALUE; received {text!r}.")
    return name, dict(_parse_override(item) for item in body.split(","))


def _parse_override(text):
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ConfigError(f"--override takes KEY=VALUE; received {text!r}.")
    try:
        value = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        pass  # a string
    return key, value


def make_config(run, quick=False, overrides=(), cache_dir=None, stabilizers=None):
    """`configs/<task>.py`'s config with the run's loss, form and seed, its stabilizer's changes
    (from `stabilizers`, default STABILIZERS), and --quick's sizes and the overrides; validated."""
    config = TASKS[run.task].config.get_config()
    config.loss, config.form, config.seed, config.cache_dir = run.loss, run.form, run.seed, cache_dir
    if quick:
        config.update(TASKS[run.task].quick)
    changes = (stabilizers or STABILIZERS).get(run.stabilizer)
    if changes is None:
        raise ConfigError(f"unknown stabilizer {run.stabilizer!r}; known: {', '.join(stabilizers or STABILIZERS)}.")
    if changes and set(changes) <= set(TASKS):  # per task
        changes = changes.get(run.task, {})
    _set_fields(config, [*changes.items(), *map(_parse_override, overrides)])
    validate(config)
    return config


def _set_fields(config, changes):
    """`config.<dotted key> = value` for each `(key, value)`; ConfigError for an unknown key or type."""
    for key, value in changes:
        *parents, last = key.split(".")
        node = config
        for parent in parents:
            node = node[parent]
        if last not in node:
            raise ConfigError(f"--override: unknown config key {key!r}.")
        try:
            node[last] = float(value) if isinstance(node[last], float) and isinstance(value, int) else value
        except TypeError as err:
            raise ConfigError(f"--override {key}={value!r}: {err}") from None


def distinct(runs):
    """`(runs, ids left out)`: a run whose config equals an earlier run's (a stabilizer that
    changes nothing for that form, e.g. one restricted to other forms) is the same run: left out."""
    seen, kept, left_out = set(), [], []
    for run, config in runs:
        key = repr(sorted(comparable(json_values(config)).items()))
        if key in seen:
            left_out.append(run.id)
        else:
            seen.add(key)
            kept.append((run, config))
    return kept, left_out


def comparable(config_values):
    """A config as JSON values, less what does not change training: where the cache is, how
    many steps one call runs (`steps_per_execution`: the periodic mixes set it to 1), the forms
    Lookahead applies to (kept as whether it applies to this run's form), and a warm start of
    alternating before alternating (with its change of G's rate: none without a warm start)."""
    values = {
        key: value
        for key, value in with_added_fields(config_values).items()
        if key not in ("cache_dir", "steps_per_execution")
    }
    values.update(training_plan.plan(values).fields)  # alternating ignores them; the scale, without a warm start
    return as_it_trains(values)


def estimate(run, config, trained_steps=0):
    """Seconds `run` will take here at `config`, of which `trained_steps` G updates are done
    (a lengthened run trains only the rest)."""
    fixed, per_step, per_eval = TASKS[run.task].cost
    epochs, steps_per_epoch = schedule(config)
    epochs_left = epochs - trained_steps // steps_per_epoch
    return fixed + per_step * (config.steps - trained_steps) + per_eval * math.ceil(epochs_left / config.eval_every)
