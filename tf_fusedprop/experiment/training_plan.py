"""The training plan of a config, in one place: which form trains each G update, and G's rate.

A config names its form (`form`, `n_dis`) and may schedule it (`warmup`: G updates of
alternating first; `alternate_every`: one alternating update in every k; `auto.threshold`:
alternating where the stray probe finds the form's updates close to alternating ones,
`schedules.Auto`; `warmup_g_lr_scale`: G's rate after the warm start). `plan(config)` reads those fields once into a `TrainingPlan`,
and everything that depends on them asks it: the GAN's form (`config.gan_arguments`), the
alignment of `steps_per_execution` with the switches (`config.validate`,
`config.fit_steps_per_execution`), G's learning rate (`train_lib`), which fields change what a
run trains (the benchmarks' comparison of runs), and how many updates each form trains (the
benchmarks' modelled time). Alternating mixed with alternating is alternating: with
`form="alternating"` the scheduling fields are checked but change nothing, G's rate included.
"""

import copy
import dataclasses

import keras

from tf_fusedprop import forms as fp_forms
from tf_fusedprop import schedules

__all__ = ["SCHEDULING_FIELDS", "TrainingPlan", "auto_on", "plan"]

#: The config fields that schedule the form, with the values that schedule nothing.
SCHEDULING_FIELDS = {
    "warmup": 0,
    "alternate_every": 0,
    "warmup_g_lr_scale": 1.0,
    "auto": {
        "threshold": 0.0,
        "every": 10,
        "window": 10,
        "hold": 100,
        "peak": None,
        "peak_windows": 1,
        "signal": "stray",
        "drop": None,
    },
}


@dataclasses.dataclass(frozen=True)
class TrainingPlan:
    """What a config's form fields mean (see the module docstring).

    Attributes:
      schedule: the `tf_fusedprop.schedules.Schedule` of the run (a `Constant` one for a form
        alone).
      g_lr: G's learning rate before the warm start ends.
      g_lr_after_warmup: G's rate from the warm start's end on (`g_lr` without one).
      fields: the scheduling fields (`SCHEDULING_FIELDS`) as they act: those that change
        nothing (all of them for alternating, the rate's scale without a warm start) at the
        values that schedule nothing, so two configs that train alike have equal fields.
    """

    schedule: schedules.Schedule
    g_lr: float
    g_lr_after_warmup: float
    fields: dict

    @property
    def form(self):
        """What `FusedPropGAN(form=...)` takes: the schedule, or the form itself when it is one."""
        return self.schedule.form if isinstance(self.schedule, schedules.Constant) else self.schedule

    @property
    def warmup(self):
        """G updates of the warm start (0: none)."""
        return self.schedule.updates if isinstance(self.schedule, schedules.Warmup) else 0

    def g_learning_rate(self):
        """G's rate as its optimizer takes it: a number, or a schedule of G updates (a function of
        the optimizer's update count, so a resumed run follows it exactly)."""
        if not self.warmup or self.g_lr_after_warmup == self.g_lr:
            return self.g_lr
        return keras.optimizers.schedules.PiecewiseConstantDecay(
            [self.warmup - 1], [float(self.g_lr), float(self.g_lr_after_warmup)]
        )

    def misaligned(self, steps_per_execution):
        """Why a train function of `steps_per_execution` steps cannot follow the schedule, or None."""
        return self.schedule.misaligned(steps_per_execution)

    def fitted_steps_per_execution(self, steps_per_epoch, wanted):
        """The largest `steps_per_execution` up to `wanted` that divides the epoch and that the
        schedule's switches allow."""
        return max(
            d
            for d in range(1, min(wanted, steps_per_epoch) + 1)
            if steps_per_epoch % d == 0 and self.misaligned(d) is None
        )

    def counts(self, steps):
        """`{form name: G updates it trains}` in the first `steps` updates."""
        return self.schedule.counts(steps)


def _value(config, key):
    value = config[key] if key in config else SCHEDULING_FIELDS.get(key)
    # A record written before an `auto` field existed reads it at its default.
    return {**SCHEDULING_FIELDS["auto"], **dict(value)} if key == "auto" else value


def auto_on(auto):
    """Whether an `auto` sub-dict schedules `Auto`: threshold 0 is off; anything else is on (and
    checked by `schedules.Auto`)."""
    return bool(auto["threshold"]) or not isinstance(auto["threshold"], (int, float))


def plan(config):
    """The `TrainingPlan` of a config (a `ConfigDict` or its JSON values; a scheduling field it
    lacks reads as scheduling nothing).

    Raises:
      ValueError: an unknown form, or a scheduling field out of range (also for alternating,
        which they do not change).
    """
    form = fp_forms.get(_value(config, "form"), n_dis=_value(config, "n_dis"))
    warmup, every = _value(config, "warmup"), _value(config, "alternate_every")
    alternating = fp_forms.Alternating(n_dis=form.n_dis)
    auto = _value(config, "auto")
    schedule = schedules.Constant(form)
    if every:
        schedule = schedules.Periodic(form, every=every, other=alternating)
    if auto_on(auto):
        if every:
            raise ValueError("alternate_every and auto.threshold are two schedules of alternating updates: set one.")
        # Checked as for a simultaneous form; alternating (returned below) ignores it.
        probed = fp_forms.get("fused") if isinstance(form, fp_forms.Alternating) else form
        schedule = schedules.Auto(probed, other=alternating, **auto)
    if warmup or not isinstance(warmup, int):  # 0 is none; anything else is checked
        schedule = schedules.Warmup(schedule, updates=warmup, start=alternating)
    g_lr = _value(config, "g_lr")
    if isinstance(form, fp_forms.Alternating):  # alternating mixed with alternating is alternating
        return TrainingPlan(schedules.Constant(form), g_lr, g_lr, copy.deepcopy(SCHEDULING_FIELDS))
    scale = _value(config, "warmup_g_lr_scale") if warmup else SCHEDULING_FIELDS["warmup_g_lr_scale"]
    auto = auto if auto_on(auto) else dict(SCHEDULING_FIELDS["auto"])
    fields = {"warmup": warmup, "alternate_every": every, "warmup_g_lr_scale": scale, "auto": auto}
    return TrainingPlan(schedule, g_lr, g_lr * scale, fields)
