"""Time-to-quality: sample quality against training seconds and G updates, per form, over seeds.

    python benchmarks/quality.py                 # the full grid (80 runs, ~1 h on 2 CPU cores)
    python benchmarks/quality.py --quick         # a reduced grid (QUICK, QUICK_SEEDS): ~4 min
    python benchmarks/quality.py --report_only   # rewrite results.md and quality.png from results.json
    python benchmarks/quality.py --tasks=ring8 --losses=nonsaturating --forms=fused --seeds=5 \\
        --override=g_lr=5e-4 --out=runs/quality_glr  # an investigation: any config field changed
    python benchmarks/quality.py --tasks=digits32 --forms=alternating,fused --seeds=3 \\
        --out=benchmarks/results/quality_plateau --seconds_per_update=alternating=0.35,fused=0.27
        # image GANs at SNGAN widths: ~30-40 min a run; the finished runs are kept in the repository

Every run is `train_lib.train(config, workdir)` on the config of `configs/<task>.py` with only
`loss`, `form` and `seed` changed (`--quick`: also the steps and evaluation sizes of `QUICK`;
`--override`: what it says), so every form makes the config's number of G updates. Grid:

* ring8, grid25 (modes covered, high-quality samples) and digits (FID, KID under the package's
  digits classifier), nonsaturating loss, forms alternating (n_dis 1), fused, inverse,
  adaptive and simultaneous; ring8 also with the hinge loss (alternating, inverse, adaptive);
* 5 seeds (0-4) on the 2-D tasks, 3 on digits;
* on request (`--tasks`), the image GANs at SNGAN's widths (issue 30): mnist (`configs/mnist.py`)
  and digits32 (`configs/digits32.py`), 3 seeds, trained until alternating's FID plateaus.

Runs go one after another in this process (the Keras session cleared between them; a
subprocess each would pay TensorFlow's import, ~4 s, 80 times), after an untimed warm-up run
per task (first tracing, the digits classifier), in seed-major order: every form of seed 0,
then of seed 1..., so machine noise hits all forms alike. Per run, `results.json` keeps the metrics after every evaluation with their G update
and training seconds (epoch time, evaluation, sample grids and checkpoints excluded; the first
epoch includes tracing) from the run's `summary.json` `history`, and whether and where the run
diverged: a run whose losses become non-finite is counted (`diverged`), its metrics from then
on are null. Under `--out` (default `runs/quality/`, `runs/quality_quick/` with `--quick`):

| path | what |
|---|---|
| `results.json` | `environment`, `grid`, and `runs`: one record per run, rewritten after every run |
| `results.md` | per (task, loss, form): final metrics (mean +- std), divergences, time to threshold; on mnist and digits32 also the best evaluation, where it came, how far the mean moved over the last fifth (the plateau test), and where the mean curve over seeds meets the threshold |
| `quality.png` | per task: metric vs training seconds (top; modelled ones with `--seconds_per_update`) and vs G updates (bottom), mean +- std |
| `runs/<task>-<loss>-<form>-s<seed>/` | each run's workdir (`train.py`'s layout); `train.log` its output |

Resumable: a rerun skips the runs that `results.json` holds with the same config (done or
diverged; a run that failed otherwise is retried), and restarts an unfinished run from
scratch (a resumed run would retrace, and its training seconds would restart: its time would
not compare), except on mnist and digits32, whose unfinished run resumes from its last
checkpoint (time there is modelled, below). A `results.json` that holds a run of another config
(e.g. `configs/` changed) is refused: pass another `--out`. Seeds of one grid may be trained
across sessions and machines: each record names its machine (results.md counts the runs per
machine when there is more than one), and `benchmarks/results/` keeps issue 30's finished runs
in the repository (results.json, results.md, quality.png; the workdirs, cache and warm-up under
it are not tracked): `quality_plateau/` digits32 at its shipped 6,000 updates, so the command
above, rerun on a fresh checkout, trains only the runs still missing; `quality_augment_long/`
mnist as shipped (DiffAugment, 12,000 updates; `--tasks=mnist` and that `--out`), trained on
from `quality_augment8k/`'s 8,000 (`--override=steps=8000`; its seed 0 trained on from
`quality_augment/`'s 4,000, one seed); `quality_scale/` mnist and digits32 at 3,000 (their
former schedules: rerun it with `--override=steps=3000 --override=augment=`). On mnist and
digits32 a grid's schedule can be lengthened without retraining: rerun with a larger
`--override=steps=N` and the same `--out`, and each finished run trains on from its last
checkpoint (`lengthened`; `train.py`'s longer schedule).

Stabilizers (`--stabilizers`, `--define_stabilizer`): named changes of the shipped config
(`STABILIZERS`), each a row per form, alternating included; the ratio "vs alternating" is
always against alternating at the shipped defaults. E.g.
`--stabilizers=defaults,lookahead10 --define_stabilizer=la20:lookahead.every=20,lookahead.alpha=0.5`.

Thresholds (time to reach; the first evaluation that meets it): ring8, 8/8 modes with >= 80%
high-quality samples; grid25, >= 24/25 modes; digits, FID <= 8 (about twice the final FID of
a 3,600-step run; reached in the first third of a run); mnist and digits32, near the plateau:
FID <= 1.1x alternating's mean final FID in the same results.

Modelled time (`--seconds_per_update=FORM=S,...`, or `TASK/FORM=S`): a loaded machine changes
the wall-clock, not the G updates, so the report also gives, per row, time = G updates x the
form's seconds per update as a quiet `benchmarks/speed.py --config=configs/<task>.py` run
measured them side by side, to the threshold and for the whole schedule, each against
alternating's. The values are kept in `results.json` for `--report_only`.
"""

import ast
import collections
import contextlib
import dataclasses
import gc
import glob
import math
import os
import platform
import shutil
import statistics
import sys
import time
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# As train.py: oneDNN on (TensorFlow enables it only on CPUs with AVX512-VNNI/BF16/AMX).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tf_fusedprop  # noqa: E402, F401  (first: it loads TensorFlow without its start-up lines)

# isort: split
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import flags, logging  # noqa: E402

from configs import digits, digits32, grid25, mnist, ring8  # noqa: E402
from tf_fusedprop.experiment import divergence, files, train_lib  # noqa: E402
from tf_fusedprop.experiment import workdir as fp_workdir  # noqa: E402
from tf_fusedprop.experiment.config import (  # noqa: E402
    ConfigError,
    json_values,
    lookahead_applies,
    schedule,
    validate,
    with_added_fields,
)

FORMS = ("alternating", "fused", "inverse", "adaptive", "simultaneous")
#: The hinge loss has no lambda (no `fused`): its single-pass forms against AltGD, on one task.
HINGE_TASK, HINGE_FORMS = "ring8", ("alternating", "inverse", "adaptive")
CONFIGS = {"ring8": ring8, "grid25": grid25, "digits": digits, "mnist": mnist, "digits32": digits32}
#: The default --tasks: the small ones. A run of the image GANs at SNGAN's widths (mnist,
#: digits32) takes hours here: ask for them with --tasks.
DEFAULT_TASKS = ("ring8", "grid25", "digits")
SEEDS = {"ring8": 5, "grid25": 5, "digits": 3, "mnist": 3, "digits32": 3}
#: --quick: fewer G updates and seeds, smaller digits evaluations.
QUICK = {
    "ring8": {"steps": 1_000, "steps_per_epoch": 250},
    "grid25": {"steps": 1_000, "steps_per_epoch": 250},
    "digits": {"steps": 300, "steps_per_epoch": 100, "eval_samples": 1_000},
    "mnist": {"steps": 1_000, "steps_per_epoch": 250, "eval_samples": 1_000},
    "digits32": {"steps": 1_000, "steps_per_epoch": 250, "eval_samples": 1_000},
}
QUICK_SEEDS = {"ring8": 2, "grid25": 1, "digits": 1, "mnist": 1, "digits32": 1}
#: Seconds of one run here (2 CPU cores): fixed + per G update + per evaluation (for the ETA).
COST = {
    "ring8": (4.0, 0.0035, 0.2),
    "grid25": (4.0, 0.0037, 0.2),
    "digits": (8.0, 0.020, 1.5),
    "mnist": (20.0, 0.33, 8.0),
    "digits32": (20.0, 0.33, 4.0),
}
_TRAINING_SCALARS = {"d_loss", "g_loss", "real_logit", "fake_logit", "steps_per_second"}


@dataclasses.dataclass(frozen=True)
class Task:
    """How a task is scored: the table's two metrics, the threshold and the plotted metric.

    A task with `relative` has a near-plateau threshold instead of a fixed one: the plotted
    metric (lower is better) at most `relative` x alternating's mean final value, over the
    alternating runs (shipped defaults) of the same results (`thresholds`).
    """

    columns: tuple  # ((metric, label, scale, format), ...): final-step columns of the table
    reached: object  # metrics -> bool: the threshold (None: `relative`)
    threshold: str
    plot: tuple  # (metric, axis label, scale, threshold line (None: `relative`), (low, high), log axis)
    relative: float = None


def _plateau_task(classifier):
    """An image task scored by FID under a digits classifier, with the near-plateau threshold."""
    return Task(
        columns=(("fid", "FID", 1, "{:.2f}"), ("kid", "KID", 1, "{:.3f}")),
        reached=None,
        threshold="FID <= 1.1x alternating's mean final FID",
        plot=("fid", f"FID ({classifier} classifier)", 1, None, (0.5, None), True),
        relative=1.1,
    )


TASKS = {
    "ring8": Task(
        columns=(("modes_covered", "modes", 1, "{:.1f}"), ("high_quality", "% HQ", 100, "{:.0f}")),
        reached=lambda m: m["modes_covered"] >= 8 and m["high_quality"] >= 0.8,
        threshold="8/8 modes, >= 80% high-quality",
        plot=("high_quality", "high-quality samples (%)", 100, 80, (0, 100), False),
    ),
    "grid25": Task(
        columns=(("modes_covered", "modes", 1, "{:.1f}"), ("high_quality", "% HQ", 100, "{:.0f}")),
        reached=lambda m: m["modes_covered"] >= 24,
        threshold=">= 24/25 modes",
        plot=("modes_covered", "modes covered (of 25)", 1, 24, (0, 25), False),
    ),
    "digits": Task(
        columns=(("fid", "FID", 1, "{:.2f}"), ("kid", "KID", 1, "{:.3f}")),
        reached=lambda m: m["fid"] <= 8.0,
        threshold="FID <= 8",
        plot=("fid", "FID (digits classifier)", 1, 8, (0.5, None), True),
    ),
    "mnist": _plateau_task("MNIST-5k"),
    "digits32": _plateau_task("digits"),
}
COLORS = {
    "alternating": "black",
    "fused": "tab:blue",
    "inverse": "tab:orange",
    "adaptive": "tab:green",
    "simultaneous": "tab:red",
}


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
    "lookahead_everywhere": {"lookahead.forms": "fused,inverse,adaptive,simultaneous,alternating"},
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
    # ... and one alternating update every k (one step per call of the train function).
    **{f"alternate_every{k}": {"alternate_every": k, "steps_per_execution": 1} for k in (2, 4)},
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
    task: str
    loss: str
    form: str
    seed: int
    stabilizer: str = "defaults"

    @property
    def id(self):
        return f"{self.task}-{self.loss}-{self.row}-s{self.seed}"

    @property
    def row(self):
        """The table row's form label: the form, and its stabilizer unless the defaults."""
        return self.form if self.stabilizer == "defaults" else f"{self.form}+{self.stabilizer}"


def _define_flags():
    values = flags.FlagValues()
    flags.DEFINE_string(
        "out", None, "output directory (default runs/quality, runs/quality_quick with --quick)", flag_values=values
    )
    flags.DEFINE_bool("quick", False, "the reduced grid of QUICK / QUICK_SEEDS", flag_values=values)
    flags.DEFINE_list(
        "tasks",
        list(DEFAULT_TASKS),
        f"tasks to run, of {', '.join(CONFIGS)} (hours a run: mnist, digits32)",
        flag_values=values,
    )
    flags.DEFINE_list(
        "forms", list(FORMS), "forms to run (the hinge runs: those of HINGE_FORMS among them)", flag_values=values
    )
    flags.DEFINE_list(
        "losses", ["nonsaturating", "hinge"], "losses to run (hinge: on HINGE_TASK only)", flag_values=values
    )
    flags.DEFINE_integer("seeds", 0, "seeds per task (0: SEEDS, or QUICK_SEEDS with --quick)", flag_values=values)
    flags.DEFINE_multi_string("override", [], "KEY=VALUE set in every run's config (dotted keys)", flag_values=values)
    flags.DEFINE_list(
        "stabilizers", ["defaults"], "rows per form: names of STABILIZERS (or --define_stabilizer)", flag_values=values
    )
    flags.DEFINE_multi_string(
        "define_stabilizer",
        [],
        "NAME:KEY=VALUE,KEY=VALUE... a stabilizer for this invocation, e.g. la20:lookahead.every=20",
        flag_values=values,
    )
    flags.DEFINE_bool(
        "report_only", False, "only rewrite results.md and quality.png from results.json", flag_values=values
    )
    flags.DEFINE_bool("dry_run", False, "print the plan and its estimated time, train nothing", flag_values=values)
    flags.DEFINE_multi_string(
        "reference",
        [],
        "DIR of another grid whose finished runs of these tasks and seeds are reported beside these "
        "(cut at this grid's schedule), not trained again; kept in results.json",
        flag_values=values,
    )
    flags.DEFINE_list(
        "seconds_per_update",
        [],
        "FORM=S or TASK/FORM=S: a form's seconds per G update from a quiet `benchmarks/speed.py --config` run; "
        "the report adds time = G updates x S beside the wall-clock (kept in results.json)",
        flag_values=values,
    )
    return values


# --------------------------------------------------------------------------------------------
# The plan: which runs, with which configs
# --------------------------------------------------------------------------------------------


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
    config = CONFIGS[run.task].get_config()
    config.loss, config.form, config.seed, config.cache_dir = run.loss, run.form, run.seed, cache_dir
    if quick:
        config.update(QUICK[run.task])
    changes = (stabilizers or STABILIZERS).get(run.stabilizer)
    if changes is None:
        raise ConfigError(f"unknown stabilizer {run.stabilizer!r}; known: {', '.join(stabilizers or STABILIZERS)}.")
    if changes and set(changes) <= set(CONFIGS):  # per task
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
        key = repr(sorted(_comparable(json_values(config)).items()))
        if key in seen:
            left_out.append(run.id)
        else:
            seen.add(key)
            kept.append((run, config))
    return kept, left_out


def _comparable(config_values):
    """A config as JSON values, less what does not change training: where the cache is, and
    the forms Lookahead applies to (kept as whether it applies to this run's form), and a warm
    start of alternating before alternating."""
    values = {key: value for key, value in with_added_fields(config_values).items() if key != "cache_dir"}
    if values.get("form") == "alternating":  # alternating mixed with alternating is alternating
        values["warmup"] = values["alternate_every"] = 0
    lookahead = values.get("lookahead")
    if isinstance(lookahead, dict) and "forms" in lookahead:
        applies = lookahead_applies(values.get("form"), lookahead)
        values["lookahead"] = {**lookahead, "forms": None, "every": lookahead["every"] if applies else 0}
    return values


def lengthened(task, old_values, new_values):
    """Whether a finished run of `old_values` is trained on to `new_values`: the same config but
    for a longer schedule, on a task whose runs resume from their checkpoints (mnist, digits32:
    `train.py` trains a finished run on to a longer `steps`)."""
    old_steps, new_steps = old_values["steps"], new_values["steps"]
    if TASKS[task].relative is None or new_steps <= old_steps:
        return False
    if fp_workdir.schedule_change_refused(old_steps, new_steps, new_values["steps_per_epoch"], finished=True):
        return False
    return _comparable({**old_values, "steps": new_steps}) == _comparable(new_values)


def newer_record(old, new):
    """The record to keep of a run trained again: `new`, unless it failed where `old` had
    finished (a lengthening that failed: the finished run stays)."""
    return old if new["status"] == "error" and old is not None and old["status"] == "done" else new


def estimate(run, config, trained_steps=0):
    """Seconds `run` will take here at `config`, of which `trained_steps` G updates are done
    (a lengthened run trains only the rest)."""
    fixed, per_step, per_eval = COST[run.task]
    epochs, steps_per_epoch = schedule(config)
    epochs_left = epochs - trained_steps // steps_per_epoch
    return fixed + per_step * (config.steps - trained_steps) + per_eval * math.ceil(epochs_left / config.eval_every)


# --------------------------------------------------------------------------------------------
# One run: train, then its record
# --------------------------------------------------------------------------------------------


def _finite_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _history_from_events(workdir):
    """The history of a run that left no summary.json, from its TensorBoard scalars: metrics
    per epoch, training seconds from steps/s, finite while d_loss and g_loss were written
    (`callbacks.Scalars` skips non-finite values)."""
    scalars = {}
    for path in sorted(glob.glob(os.path.join(workdir, "logs", "events.out.tfevents.*"))):
        for raw in tf.data.TFRecordDataset(path):
            event = tf.compat.v1.Event.FromString(raw.numpy())
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name == "scalars":
                    scalars.setdefault(value.tag, {})[event.step] = float(tf.make_ndarray(value.tensor))
    history, seconds, previous, finite = [], 0.0, 0, True
    for step in sorted(scalars.get("steps_per_second", {})):
        seconds += (step - previous) / scalars["steps_per_second"][step]
        previous = step
        finite = finite and all(step in scalars.get(key, {}) for key in ("d_loss", "g_loss"))
        metrics = {
            tag: values[step] for tag, values in scalars.items() if tag not in _TRAINING_SCALARS and step in values
        }
        if metrics:
            history.append(
                {"epoch": None, "step": step, "train_seconds": seconds, "metrics": metrics, "finite": finite}
            )
    return history


def record(run, config, summary, history, wall_seconds, error=None, workdir=None):
    """The run's entry of results.json: its history with the metrics from the first non-finite
    update on nulled, `diverged` and its step, the final metrics (None if it diverged)."""
    divergence = (summary or {}).get("divergence")  # the exact step, where the harness records it
    diverged_at = divergence.get("step") if isinstance(divergence, dict) else None
    for entry in history:  # else the first evaluation after it
        metrics = (entry.get("metrics") or {}).values()
        if diverged_at is None and not (entry.get("finite", True) and all(_finite_number(v) for v in metrics)):
            diverged_at = entry["step"]
    entries = []
    for entry in history:
        finite = diverged_at is None or entry["step"] < diverged_at
        metrics = dict(entry.get("metrics") or {})
        entries.append(
            {
                "epoch": entry.get("epoch"),
                "step": entry["step"],
                "train_seconds": entry.get("train_seconds"),
                "metrics": metrics if finite else dict.fromkeys(metrics),
                "finite": finite,
            }
        )
    summary = summary or {}
    last = entries[-1] if entries else {}
    steps = summary.get("steps", last.get("step", 0))
    complete = bool(entries) and steps >= config.steps and entries[-1]["step"] >= config.steps
    status = "diverged" if diverged_at is not None else ("error" if error else ("done" if complete else "stopped"))
    return {
        "id": run.id,
        "task": run.task,
        "loss": run.loss,
        "form": run.form,
        "stabilizer": run.stabilizer,
        "row": run.row,
        "seed": run.seed,
        "status": status,
        "diverged": diverged_at is not None,
        "diverged_at_step": diverged_at,
        "steps": steps,
        "train_seconds": summary.get("train_seconds", last.get("train_seconds")),
        "wall_seconds": wall_seconds,
        "final": entries[-1]["metrics"] if status == "done" else None,
        "history": entries,
        "error": error,
        "load_average": os.getloadavg()[0],
        "workdir": workdir,
        "config": json_values(config),
    }


def warm_up(runs, directory):
    """Trains one short run per task in `directory`, untimed, so that the process's one-time
    costs (first tracing, the digits classifier) do not land in the first timed run."""
    shutil.rmtree(directory, ignore_errors=True)
    for task in dict.fromkeys(r.task for r, _ in runs):
        run, config = next((r, c) for r, c in runs if r.task == task)
        config = config.copy_and_resolve_references()
        config.update(
            steps=2 * config.steps_per_execution,
            steps_per_epoch=config.steps_per_execution,
            eval_samples=min(config.eval_samples, 100),
        )
        train_run(run, config, os.path.join(directory, task))


def train_run(run, config, workdir):
    """Trains one run in `workdir` (its output to `train.log`); returns its record. Exceptions
    of the run are recorded, not raised (a harness that stops a diverged run by raising).

    An unfinished run in `workdir` is restarted from scratch, so that its training seconds
    compare, except on a task whose time is modelled (`Task.relative`: hours a run, read as G
    updates x seconds per update), which resumes from its last checkpoint; its history then
    comes from its TensorBoard events, all processes together."""
    resumable = TASKS[run.task].relative is not None
    try:
        if not resumable and fp_workdir.completed_run(workdir, config) is None and os.path.exists(workdir):
            shutil.rmtree(workdir)
    except ConfigError:
        shutil.rmtree(workdir)
    os.makedirs(workdir, exist_ok=True)
    keras.backend.clear_session()
    gc.collect()
    summary, error, start = None, None, time.perf_counter()
    with (
        open(os.path.join(workdir, "train.log"), "a") as log,
        contextlib.redirect_stdout(log),
        contextlib.redirect_stderr(log),
    ):
        try:
            summary = train_lib.train(config, workdir=workdir, verbose=2)
        except divergence.TrainingDivergedError as err:  # the harness stops a diverged run: counted
            summary = {"divergence": {"step": err.step, "players": err.players}, "steps": err.step}
        except Exception as err:  # noqa: BLE001 -- counted in the results; KeyboardInterrupt stops
            traceback.print_exc()
            error = f"{type(err).__name__}: {' '.join(str(err).split())}"[:500]
            summary_path = os.path.join(workdir, "summary.json")
            summary = files.read_json(summary_path) if os.path.exists(summary_path) else None
    wall = time.perf_counter() - start
    resumed = bool(summary and summary.get("resumed_from_epoch"))
    if summary and summary.get("history") is not None and not resumed:
        history = summary["history"]
    else:
        history = _history_from_events(workdir)
        if resumed and history:  # the summary's seconds are the last process's only
            summary = {**summary, "train_seconds": history[-1]["train_seconds"]}
    return record(run, config, summary, history, wall, error, workdir)


# --------------------------------------------------------------------------------------------
# Results: JSON, table, figure
# --------------------------------------------------------------------------------------------


def _json_safe(value):
    """NaN and infinities as null (strict JSON)."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def environment():
    """What the timings depend on: versions, CPU model and flags, threads, oneDNN, load."""
    model, cpu_flags = platform.processor(), []
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                present = set(value.split())
                cpu_flags = [
                    f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile") if f in present
                ]
                break
    return {
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "python": platform.python_version(),
        "cpu": model,
        "cpu_flags": cpu_flags,
        "cpus": os.cpu_count(),
        "onednn": os.environ.get("TF_ENABLE_ONEDNN_OPTS"),
        "load_average": round(os.getloadavg()[0], 2),
    }


def _row(record):
    return record.get("row", record["form"])


def _groups(records):
    """`{(task, loss): {row: [records]}}` in the table's order: forms in FORMS' order, each with
    its stabilizers in the order they first appear (a row is a form and its stabilizer)."""
    order = [(t, "nonsaturating") for t in CONFIGS] + [(HINGE_TASK, "hinge")]
    groups = {}
    for task, loss in order + sorted({(r["task"], r["loss"]) for r in records} - set(order)):
        matching = [r for r in records if (r["task"], r["loss"]) == (task, loss)]
        first = {}
        for index, r in enumerate(matching):
            first.setdefault(_row(r), (FORMS.index(r["form"]), index))
        rows = {row: [r for r in matching if _row(r) == row] for row in sorted(first, key=first.get)}
        if rows:
            groups[task, loss] = rows
    return groups


def thresholds(records):
    """`{(task, loss): (reached(metrics) -> bool, description)}` of each group of `records`: the
    task's fixed threshold, or for a `relative` task the plotted metric at most `relative` x the
    mean final value of its alternating runs at the shipped defaults (None before any of them
    finished)."""
    result = {}
    for (task, loss), forms in _groups(records).items():
        info = TASKS[task]
        if info.relative is None:
            result[task, loss] = (info.reached, info.threshold)
            continue
        metric, value = info.plot[0], _threshold_value(info, forms)
        if value is None:
            result[task, loss] = (None, f"{info.threshold} (none finished yet)")
            continue
        result[task, loss] = (
            lambda m, metric=metric, value=value: _finite_number(m.get(metric)) and m[metric] <= value,
            f"{metric.upper()} <= {value:.4g} ({info.relative}x alternating's mean final {metric.upper()})",
        )
    return result


def _threshold_value(info, forms):
    """A relative task's threshold: `relative` x the mean final plotted metric of the
    alternating runs among `forms` (`{row: records}`), or None before one finished."""
    metric = info.plot[0]
    finals = [r["final"].get(metric) for r in forms.get("alternating", []) if r["final"]]
    finals = [value for value in finals if _finite_number(value)]
    return info.relative * statistics.mean(finals) if finals else None


def time_to_threshold(rec, reached=None):
    """`(train_seconds, step)` of the run's first evaluation that meets `reached` (default: its
    task's fixed threshold), or None (also when the task's threshold is not known yet)."""
    reached = reached or TASKS[rec["task"]].reached
    if reached is None:
        return None
    for entry in rec["history"]:
        if entry["finite"] and all(_finite_number(v) for v in entry["metrics"].values()) and reached(entry["metrics"]):
            return entry["train_seconds"], entry["step"]
    return None


def best_evaluation(rec, metric):
    """`(value, step)` of the run's lowest finite `metric` over its evaluations (what keeping
    its best checkpoint gives), or None when no evaluation had one."""
    scored = [
        (entry["metrics"][metric], entry["step"])
        for entry in rec["history"]
        if entry["finite"] and _finite_number(entry["metrics"].get(metric))
    ]
    return min(scored) if scored else None


def last_fifth_change(runs, metric):
    """`(step, mean there, mean final, relative change)` of the runs' mean `metric` from their
    last evaluation at or before four fifths of the schedule to the end (issue 30's plateau:
    alternating's FID moves < 5% over the last fifth), or None without a finite mean at both."""
    steps = statistics.median([r["config"]["steps"] for r in runs])
    evaluated = sorted({e["step"] for r in runs for e in r["history"]})
    earlier = [step for step in evaluated if step <= 0.8 * steps]
    if not earlier:
        return None
    start, end = _mean_at(runs, metric, earlier[-1]), _mean_at(runs, metric, evaluated[-1])
    if start is None or end is None:
        return None
    return earlier[-1], start, end, (end - start) / start


def _mean_at(runs, metric, step):
    """The mean `metric` of `runs` at G update `step`, or None unless every run has a finite one."""
    values = [
        entry["metrics"].get(metric)
        for r in runs
        for entry in r["history"]
        if entry["step"] == step and entry["finite"]
    ]
    values = [v for v in values if _finite_number(v)]
    return statistics.mean(values) if len(values) == len(runs) else None


def mean_curve_reaches(runs, metric, reached):
    """The first G update at which the runs' mean `metric` meets `reached` (a threshold on a
    metrics dict), or None. Beside the median over runs of each run's first update there: near
    a plateau, where the curves are flat and the threshold lies within the seeds' spread, which
    seeds cross first is seed noise, and the mean curve is the steadier reading."""
    for step in sorted({e["step"] for r in runs for e in r["history"]}):
        mean = _mean_at(runs, metric, step)
        if mean is not None and reached({metric: mean}):
            return step
    return None


def _best_rows(records, seconds_per_update):
    """results.md lines: per row of a `relative` task, the best plotted metric over the schedule
    (mean +- std over runs), the median G update where it came, (with the form's seconds per
    update) that update's modelled time, how far the mean moved over the last fifth, and where
    the mean curve meets the threshold (`mean_curve_reaches`)."""
    lines, limits = [], thresholds(records)
    for (task, loss), forms in _groups(records).items():
        info = TASKS[task]
        if info.relative is None:
            continue
        metric, (_, label, scale, fmt) = info.plot[0], info.columns[0]
        reached, reference = limits[task, loss][0], None
        for form, runs in forms.items():
            crossing = reached and mean_curve_reaches(runs, metric, reached)
            crossing_model = _modelled(task, runs[0]["form"], crossing, runs, seconds_per_update)
            crossing_seconds = crossing_model and crossing_model["threshold_seconds"]
            if form == "alternating":
                reference = crossing_seconds
            mean_curve = _number(crossing, "{:.0f}")
            if crossing_seconds:
                mean_curve += f", {crossing_seconds:.0f} s"
                if reference and form != "alternating":
                    mean_curve += f", {crossing_seconds / reference:.2f}x"
            best = [b for b in (best_evaluation(r, metric) for r in runs) if b]
            if not best:
                continue
            step = statistics.median([b[1] for b in best])
            modelled = _modelled(task, runs[0]["form"], step, runs, seconds_per_update)
            change = last_fifth_change(runs, metric)
            moved = (
                "—"
                if change is None
                else f"{fmt.format(scale * change[1])} at {change[0]} to {fmt.format(scale * change[2])}: "
                f"{100 * change[3]:+.0f}%"
            )
            lines.append(
                f"| {task} | {loss} | {form} | {_mean_std([b[0] for b in best], scale, fmt)} "
                f"| {', '.join(str(b[1]) for b in best)} | {step:.0f} "
                f"| {_number(modelled and modelled['threshold_seconds'], '{:.0f}')} | {moved} | {mean_curve} |"
            )
    if not lines:
        return []
    return [
        "",
        "Best over the schedule (what keeping each run's best checkpoint gives; the G update of the best "
        "evaluation per run, their median, and that median x the form's seconds per update), the mean "
        f"{label} over the last fifth of the schedule (from the last evaluation at or before four fifths; a "
        "plateau moves < 5%), and where the mean curve over the runs first meets the threshold (G update; "
        "with seconds per update, x them and against alternating's: near a plateau a steadier reading than "
        "the median run's first crossing):",
        "",
        f"| task | loss | form (+ stabilizer) | best {label} | at G update, per run | median | x s per update "
        f"| mean {label} over the last fifth | mean curve to threshold |",
        "|---|---|---|---|---|---|---|---|---|",
        *lines,
    ]


def _median_or_none(values):
    """The median, a run that never reached counting as infinitely slow; None when fewer than
    half reached."""
    median = statistics.median([math.inf if v is None else v for v in values])
    return None if math.isinf(median) else median


def _mean_std(values, scale, fmt):
    values = [scale * v for v in values if _finite_number(v)]
    if not values:
        return "—"
    if len(values) == 1:
        return fmt.format(values[0])
    return f"{fmt.format(statistics.mean(values))} ± {fmt.format(statistics.stdev(values))}"


def summarize(records, seconds_per_update=None):
    """Rows of the table: one per (task, loss, form). With `seconds_per_update` (`{form or
    task/form: seconds}`, `parse_seconds_per_update`), each row also has `modelled`: its
    seconds per update and the time it would take at that speed (updates x seconds) to the
    threshold and for the schedule, each against alternating's."""
    rows, limits = [], thresholds(records)
    for (task, loss), forms in _groups(records).items():
        info = TASKS[task]
        reached, _ = limits[task, loss]
        reference, reference_model = None, None
        for form, runs in forms.items():
            reach = [time_to_threshold(r, reached) for r in runs]
            seconds = _median_or_none([None if x is None else x[0] for x in reach])
            steps = _median_or_none([None if x is None else x[1] for x in reach])
            if form == "alternating":  # the reference: alternating at the shipped defaults
                reference = seconds
            finals = [r["final"] for r in runs if r["final"]]
            train = [r["train_seconds"] for r in runs if r["status"] == "done" and r["train_seconds"]]
            modelled = _modelled(task, runs[0]["form"], steps, runs, seconds_per_update)
            if form == "alternating":
                reference_model = modelled
            if modelled and reference_model and form != "alternating":
                for key in ("threshold", "schedule"):
                    ours, theirs = modelled[f"{key}_seconds"], reference_model[f"{key}_seconds"]
                    modelled[f"{key}_vs_alternating"] = ours / theirs if ours and theirs else None
            rows.append(
                {
                    "task": task,
                    "loss": loss,
                    "form": form,
                    "modelled": modelled,
                    "runs": len(runs),
                    "diverged": sum(r["diverged"] for r in runs),
                    "errors": sum(r["status"] in ("error", "stopped") for r in runs),
                    "final": [_mean_std([f.get(k) for f in finals], scale, fmt) for k, _, scale, fmt in info.columns],
                    "reached": sum(x is not None for x in reach),
                    "seconds": seconds,
                    "steps": steps,
                    "speedup": reference / seconds if reference and seconds and form != "alternating" else None,
                    "train_seconds": statistics.median(train) if train else None,
                }
            )
    return rows


def parse_seconds_per_update(items):
    """`{form or task/form: seconds}` of `--seconds_per_update` items `FORM=S` or `TASK/FORM=S`.

    Raises:
      ConfigError: another shape, or seconds that are not a positive number.
    """
    parsed = {}
    for item in items:
        key, sep, value = item.partition("=")
        try:
            seconds = float(value)
        except ValueError:
            seconds = None
        if not sep or not key or seconds is None or not seconds > 0:
            raise ConfigError(f"--seconds_per_update takes FORM=S or TASK/FORM=S with S > 0; received {item!r}.")
        parsed[key] = seconds
    return parsed


def _per_update(task, form, seconds_per_update):
    """The form's seconds per update on `task` (`TASK/FORM` before `FORM`), or None."""
    table = seconds_per_update or {}
    return table.get(f"{task}/{form}", table.get(form))


def seconds_model(task, runs, seconds_per_update):
    """`G updates -> modelled seconds` of a row's runs: the updates x the form's seconds per
    update, those of a warm start (`config.warmup`) and of the alternating updates mixed in
    (`config.alternate_every`) at alternating's; None without them."""
    form, config = runs[0]["form"], with_added_fields(runs[0]["config"])
    warmup, every = (0, 0) if form == "alternating" else (config["warmup"], config["alternate_every"])
    per_form = _per_update(task, form, seconds_per_update)
    per_alternating = _per_update(task, "alternating", seconds_per_update) if warmup or every else 0.0
    if per_form is None or per_alternating is None:
        return None

    def seconds_at(steps):  # forms.Periodic's alternating updates: those u with (u + 1) % every == 0
        mixed = max(steps // every - warmup // every, 0) if every else 0
        alternating = min(steps, warmup) + mixed
        return alternating * per_alternating + (steps - alternating) * per_form

    return seconds_at


def _modelled(task, form, steps_to_threshold, runs, seconds_per_update):
    """A row's modelled times (see `summarize`), or None without its forms' seconds per update."""
    seconds_at = seconds_model(task, runs, seconds_per_update)
    if seconds_at is None:
        return None
    schedule = statistics.median([r["config"]["steps"] for r in runs])
    return {
        "seconds_per_update": _per_update(task, form, seconds_per_update),
        "threshold_seconds": None if steps_to_threshold is None else seconds_at(steps_to_threshold),
        "schedule_steps": schedule,
        "schedule_seconds": seconds_at(schedule),
    }


def _number(value, fmt):
    return "—" if value is None else fmt.format(value)


def machine_of(environment_):
    """One line naming the CPU a run trained on (kept in its record: seeds of one grid may be
    trained across sessions, on different machines)."""
    return f"{environment_['cpu']} ({' '.join(environment_['cpu_flags'])}, {environment_['cpus']} CPUs)"


def _machines(records):
    """The results.md line counting runs per machine, or None when they all ran on one."""
    counts = collections.Counter(r.get("machine") or "not recorded" for r in records)
    if len(counts) < 2:
        return None
    return (
        "Runs per machine (their wall-clock seconds do not compare): "
        + "; ".join(f"{name}: {n}" for name, n in counts.items())
        + "."
    )


def _references(records):
    """A line naming the rows that come from other grids (`reference_records`), or ""."""
    taken = collections.defaultdict(set)
    for r in records:
        if r.get("reference"):
            taken[r["reference"]].add(_row(r))
    return "".join(
        f"Rows {', '.join(sorted(rows))}: the runs of {directory} (these seeds, cut at this schedule), not "
        "trained in this grid. "
        for directory, rows in taken.items()
    ).strip()


def markdown(records, environment_, grid, seconds_per_update=None):
    """results.md: the table, the thresholds, how it was measured (and, with
    `seconds_per_update`, the modelled times: `summarize`)."""
    rows, limits = summarize(records, seconds_per_update), thresholds(records)
    lines = [
        "# Time to quality",
        "",
        f"{len(records)} runs; {grid}. {environment_['cpu']} ({environment_['cpus']} CPUs, "
        f"{' '.join(environment_['cpu_flags'])}), TF {environment_['tensorflow']}, Keras {environment_['keras']}, "
        f"oneDNN {environment_['onednn']}.",
        *(["", machines] if (machines := _machines(records)) else []),
        *(["", references] if (references := _references(records)) else []),
        "",
        "| task | loss | form (+ stabilizer) | runs | diverged | final metric | second metric | reached threshold "
        "| median s to threshold | vs alternating | median G updates to threshold | training s per run |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        info = TASKS[row["task"]]
        labels = [f"{label} {value}" for (_, label, _, _), value in zip(info.columns, row["final"])]
        lines.append(
            f"| {row['task']} | {row['loss']} | {row['form']} | {row['runs']} | {row['diverged']} | {labels[0]} "
            f"| {labels[1]} | {row['reached']}/{row['runs']} ({limits[row['task'], row['loss']][1]}) "
            f"| {_number(row['seconds'], '{:.1f}')} | {_number(row['speedup'], '{:.2f}x')} "
            f"| {_number(row['steps'], '{:.0f}')} | {_number(row['train_seconds'], '{:.1f}')} |"
        )
    failed = [r for r in records if r["status"] in ("diverged", "error", "stopped")]
    lines += [
        "",
        "Final metrics: mean ± std over the runs that did not diverge, at the last G update. "
        "Time to threshold: training seconds (epoch time: evaluation, sample grids and checkpoints "
        "excluded; the first epoch includes tracing) at the first evaluation meeting it; the median "
        "counts a run that never reached it as infinitely slow (— when fewer than half reached). "
        "vs alternating: the alternating median over this form's (> 1: this form is faster).",
    ]
    modelled = [row for row in rows if row["modelled"]]
    if modelled:
        lines += [
            "",
            "Time modelled as G updates x seconds per update (the seconds per update measured side by side "
            "on a quiet machine by `benchmarks/speed.py --config`; the G updates above do not depend on the "
            "machine's load, the wall-clock does; a warm start's updates, `warmup`, at alternating's seconds; "
            "time / alternating's < 1: this form is faster):",
            "",
            "| task | loss | form (+ stabilizer) | s per update | median G updates to threshold | x s per update "
            "| time / alternating's | schedule (G updates) | x s per update | time / alternating's |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in modelled:
            m = row["modelled"]
            lines.append(
                f"| {row['task']} | {row['loss']} | {row['form']} | {m['seconds_per_update']:.4g} "
                f"| {_number(row['steps'], '{:.0f}')} | {_number(m['threshold_seconds'], '{:.0f}')} "
                f"| {_number(m.get('threshold_vs_alternating'), '{:.2f}x')} | {m['schedule_steps']:.0f} "
                f"| {m['schedule_seconds']:.0f} | {_number(m.get('schedule_vs_alternating'), '{:.2f}x')} |"
            )
    lines += _best_rows(records, seconds_per_update)
    if failed:
        lines += ["", "Runs that diverged or failed:", ""]
        lines += [
            f"- {r['id']}: {r['status']}"
            + (f" at G update {r['diverged_at_step']}" if r["diverged"] else "")
            + (f" ({r['error']})" if r["error"] else "")
            for r in failed
        ]
    return "\n".join(lines) + "\n"


def _curve(runs, metric, scale, seconds_at=None):
    """Per evaluation step: median training seconds (with `seconds_at`, the modelled ones:
    `seconds_model`'s), and mean and std of `metric` over the runs finite there."""
    steps = sorted({e["step"] for r in runs for e in r["history"]})
    rows = []
    for step in steps:
        entries = [e for r in runs for e in r["history"] if e["step"] == step]
        values = [scale * e["metrics"][metric] for e in entries if _finite_number(e["metrics"].get(metric))]
        seconds = [e["train_seconds"] for e in entries if e["train_seconds"] is not None]
        if values and seconds:
            elapsed = statistics.median(seconds) if seconds_at is None else seconds_at(step)
            rows.append((step, elapsed, np.mean(values), np.std(values)))
    return np.array(rows, dtype=np.float64).reshape(-1, 4).T


def figure(records, path, seconds_per_update=None):
    """quality.png: per (task, loss), the plotted metric against training seconds (top row) and
    G updates (bottom row), a line per form (mean over seeds) with a +-1 std band. Where every
    form of a task has its seconds per update (`seconds_per_update`), the top row is modelled
    time (G updates x seconds per update): a loaded machine's wall-clock would mislead."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups, limits = _groups(records), thresholds(records)
    fig, axes = plt.subplots(2, len(groups), figsize=(max(4.3 * len(groups), 6.0), 7.4), squeeze=False)
    for column, ((task, loss), forms) in enumerate(groups.items()):
        metric, ylabel, scale, line, (low, high), log = TASKS[task].plot
        stabilizers = list(dict.fromkeys(r.get("stabilizer", "defaults") for runs in forms.values() for r in runs))
        models = {form: seconds_model(task, runs, seconds_per_update) for form, runs in forms.items()}
        modelled = None not in models.values()
        for form, runs in forms.items():
            steps, seconds, mean, std = _curve(runs, metric, scale, models[form] if modelled else None)
            diverged = sum(r["diverged"] for r in runs)
            base, stabilizer = runs[0]["form"], runs[0].get("stabilizer", "defaults")
            style = ("-", "--", ":", "-.")[stabilizers.index(stabilizer) % 4]
            label = (
                f"{form} ({len(runs)} seed{'s' if len(runs) > 1 else ''}{f', {diverged} diverged' if diverged else ''})"
            )
            for row, x in enumerate((seconds, steps)):
                ax = axes[row, column]
                ax.plot(
                    x,
                    mean,
                    color=COLORS[base],
                    label=label,
                    linewidth=1.6,
                    marker="o",
                    markersize=2.5,
                    linestyle=style,
                )
                ax.fill_between(
                    x,
                    np.clip(mean - std, low, high),
                    np.clip(mean + std, low, high),
                    color=COLORS[base],
                    alpha=0.15,
                    linewidth=0,
                )
        for row in range(2):
            ax = axes[row, column]
            if line is None:  # a relative threshold: known once alternating's runs finished
                line = _threshold_value(TASKS[task], forms)
            if line is not None:
                ax.axhline(line, color="grey", linestyle=":", linewidth=1)
            if log:
                ax.set_yscale("log")
            ax.set_ylabel(ylabel)
            seconds_label = "modelled seconds (G updates x s per update)" if modelled else "training seconds"
            ax.set_xlabel(seconds_label if row == 0 else "G updates")
            ax.grid(alpha=0.3)
            ax.set_xlim(left=0)
            if not log:
                ax.set_ylim(low, high * 1.04)
        axes[0, column].set_title(f"{task}, {loss} loss\nthreshold: {limits[task, loss][1]}", fontsize=9)
        axes[0, column].legend(fontsize=7, loc="best")
    fig.suptitle(
        "Sample quality against seconds and G updates\nmean over seeds, band +-1 std, dotted: threshold",
        fontsize=10,
    )
    fig.tight_layout()
    files.atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=100, format="png"))
    plt.close(fig)


def reference_records(directory, own):
    """The finished runs of another grid (`directory`'s results.json) on the tasks, losses and
    seeds of the records `own`, each cut at the G updates of `own`'s schedule on its task where
    its own is longer: rows to compare with that are not trained again (e.g. the pure forms of a
    tracked 12,000-update grid beside a 4,000-update screen of schedules). Marked `reference`.

    Raises:
      ConfigError: `directory` holds no results.json.
    """
    path = os.path.join(directory, "results.json")
    if not os.path.exists(path):
        raise ConfigError(f"--reference={directory} holds no results.json.")
    wanted = {(r["task"], r["loss"], r["seed"]) for r in own}
    steps = {}
    for r in own:
        steps[r["task"]] = max(steps.get(r["task"], 0), r["config"]["steps"])
    kept = []
    for r in files.read_json(path)["runs"]:
        if (r["task"], r["loss"], r["seed"]) not in wanted or r["status"] != "done":
            continue
        history = [e for e in r["history"] if e["step"] <= steps[r["task"]]]
        if not history or history[-1]["step"] < steps[r["task"]]:
            continue  # shorter than the schedule compared with
        kept.append(
            {
                **r,
                "config": {**r["config"], "steps": steps[r["task"]]},
                "history": history,
                "final": history[-1]["metrics"],
                "train_seconds": history[-1]["train_seconds"],
                "reference": directory,
            }
        )
    return kept


def write_results(out, records, environment_, grid, plot=True, seconds_per_update=None, references=()):
    """results.json, results.md and (with `plot`) quality.png of `records` (and the modelled
    times of `seconds_per_update`, and the rows of the `references` directories, both kept in
    results.json; the references' runs are reported, not stored)."""
    records = _json_safe(records)
    files.write_json(
        os.path.join(out, "results.json"),
        {
            "environment": environment_,
            "grid": grid,
            "seconds_per_update": seconds_per_update or {},
            "references": list(references),
            "runs": records,
        },
    )
    records = records + _json_safe([r for directory in references for r in reference_records(directory, records)])
    text = markdown(records, environment_, grid, seconds_per_update)

    def write(tmp_path):
        with open(tmp_path, "w") as f:
            f.write(text)

    files.atomic_write(os.path.join(out, "results.md"), write)
    if records and plot:
        figure(records, os.path.join(out, "quality.png"), seconds_per_update)


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def _clock(seconds):
    seconds = int(round(seconds))
    return (
        f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"
    )


class Progress:
    """A progress bar over runs, one line per finished run, with an ETA from the runs' estimated
    costs scaled by how long the finished ones took against theirs."""

    def __init__(self, estimates, done):
        self.estimates, self.done, self.total = list(estimates), done, done + len(estimates)
        self.start, self.spent, self.estimated = time.perf_counter(), 0.0, 0.0

    def update(self, index, wall, text):
        self.spent += wall
        self.estimated += self.estimates[index]
        left = sum(self.estimates[index + 1 :]) * self.spent / max(self.estimated, 1e-9)
        finished = self.done + index + 1
        bar = "#" * round(24 * finished / self.total)
        print(
            f"[{bar:<24}] {finished}/{self.total} {_clock(time.perf_counter() - self.start)} elapsed, "
            f"~{_clock(left)} left | {text}",
            flush=True,
        )


def _describe(rec):
    if rec["status"] != "done":
        return (
            rec["status"]
            + (f" at G update {rec['diverged_at_step']}" if rec["diverged"] else "")
            + (f" ({rec['error'][:120]})" if rec["error"] else "")
        )
    final = rec["final"]
    text = ", ".join(f"{label} {fmt.format(scale * final[k])}" for k, label, scale, fmt in TASKS[rec["task"]].columns)
    return f"{text}; {rec['train_seconds']:.0f} s training"


def run(argv):
    """Parses `argv` (program name first), runs the grid, writes the results; the exit status."""
    values = _define_flags()
    try:
        values(argv)
        unknown = sorted(set(values.tasks) - set(CONFIGS)) + sorted(set(values.forms) - set(FORMS))
        if unknown:
            raise flags.Error(
                f"unknown tasks or forms {unknown}; tasks: {', '.join(CONFIGS)}, forms: {', '.join(FORMS)}"
            )
    except flags.Error as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        import matplotlib  # noqa: F401 -- fail before an hour of training, not after
    except ImportError:
        print("error: quality.png needs matplotlib: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    logging.set_verbosity(logging.ERROR)
    out = values.out or os.path.join("runs", "quality_quick" if values.quick else "quality")
    os.makedirs(out, exist_ok=True)
    results_path = os.path.join(out, "results.json")
    stored = files.read_json(results_path) if os.path.exists(results_path) else {"runs": []}
    records = {r["id"]: r for r in stored["runs"]}
    env = environment()
    seeds = {t: values.seeds or (QUICK_SEEDS if values.quick else SEEDS)[t] for t in values.tasks}
    grid = (
        f"{'quick grid' if values.quick else 'grid'}: tasks {', '.join(values.tasks)}; seeds "
        + ", ".join(f"{t} {seeds[t]}" for t in values.tasks)
        + (f"; overrides {', '.join(values.override)}" if values.override else "")
    )
    try:
        stabilizers = {**STABILIZERS, **dict(map(define_stabilizer, values.define_stabilizer))}
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        # The flag's values win over those kept in results.json (from an earlier invocation).
        seconds_per_update = {
            **stored.get("seconds_per_update", {}),
            **parse_seconds_per_update(values.seconds_per_update),
        }
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    references = list(dict.fromkeys([*stored.get("references", []), *values.reference]))
    for directory in references:
        if not os.path.exists(os.path.join(directory, "results.json")):
            print(f"error: --reference={directory} holds no results.json.", file=sys.stderr)
            return 2
    if values.stabilizers != ["defaults"]:
        grid += "; stabilizers " + ", ".join(
            f"{name} ({', '.join(f'{k}={v}' for k, v in stabilizers.get(name, {}).items()) or 'the shipped config'})"
            for name in values.stabilizers
        )
    if values.report_only:
        write_results(
            out,
            list(records.values()),
            stored.get("environment", env),
            stored.get("grid", grid),
            seconds_per_update=seconds_per_update,
            references=references,
        )
        print(f"Rewrote {out}/results.md and quality.png from {len(records)} runs.")
        return 0

    try:
        runs = [
            (r, make_config(r, values.quick, values.override, os.path.join(out, "cache"), stabilizers))
            for r in plan(values.tasks, values.forms, seeds, values.losses, values.stabilizers)
        ]
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    runs, duplicates = distinct(runs)
    if duplicates:
        print(f"{len(duplicates)} runs left out: the same config as another row's ({', '.join(duplicates[:4])}...)")
    todo, trained = [], {}
    for r, config in runs:
        old = records.get(r.id)
        if old is None or old["status"] not in ("done", "diverged"):  # never run, or failed: (re)run
            todo.append((r, config))
        elif old["status"] == "done" and lengthened(r.task, old["config"], json_values(config)):
            print(f"{r.id}: trained on from {old['config']['steps']} to {config.steps} G updates", flush=True)
            todo.append((r, config))
            trained[r.id] = old["config"]["steps"]
        elif _comparable(old["config"]) != _comparable(json_values(config)):
            print(
                f"error: {results_path} holds run {r.id} with another config; pass another --out "
                "(or delete it to rerun).",
                file=sys.stderr,
            )
            return 2
    estimates = [estimate(r, c, trained.get(r.id, 0)) for r, c in todo]
    print(
        f"quality: tensorflow {env['tensorflow']}, keras {env['keras']}, python {env['python']}; {env['cpu']}, "
        f"{env['cpus']} CPUs, flags {' '.join(env['cpu_flags']) or '-'}; oneDNN {env['onednn']}; "
        f"load {env['load_average']}",
        flush=True,
    )
    print(
        f"{grid}; {len(runs)} runs, {len(runs) - len(todo)} done in {out}, {len(todo)} to run "
        f"(~{_clock(sum(estimates))} estimated here)",
        flush=True,
    )
    if values.dry_run:
        return 0
    if todo:
        warm_up(todo, os.path.join(out, "warm_up"))
    progress = Progress(estimates, len(runs) - len(todo))
    for index, (r, config) in enumerate(todo):
        rec = train_run(r, config, os.path.join(out, "runs", r.id))
        rec["machine"] = machine_of(env)
        records[r.id] = newer_record(records.get(r.id), rec)
        if records[r.id] is not rec:
            print(f"{r.id}: not trained on ({rec['error']}); its record kept", flush=True)
        write_results(
            out,
            list(records.values()),
            env,
            grid,
            plot=False,
            seconds_per_update=seconds_per_update,
            references=references,
        )
        progress.update(index, rec["wall_seconds"], f"{r.id}: {_describe(rec)}")
    write_results(
        out,
        list(records.values()),
        env if todo else stored.get("environment", env),
        grid,
        seconds_per_update=seconds_per_update,
        references=references,
    )
    print(f"Wrote {results_path}, results.md and quality.png.\n")
    with open(os.path.join(out, "results.md")) as f:
        print(f.read())
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv))
