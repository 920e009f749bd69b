"""Schedules of training forms: which form (`tf_fusedprop.forms`) trains each G update of a run.

A form says what one train step does; a schedule says which form does it at G update `u`
(0-based), and `FusedPropGAN.fit` follows it by itself: it compiles one train function per
form of `forms` and, before each call, runs the one of `form_at(G updates so far)`. So every
switch must fall on a multiple of `steps_per_execution` (`misaligned` says when one does not).
The switch depends only on the G update count, which checkpoints keep, so a run resumed on
either side of a switch trains as an uninterrupted one.

| schedule | G update `u` is trained by |
|---|---|
| `Constant(form)` | `form`, always (what a plain form means to `FusedPropGAN`) |
| `Warmup(form, updates, start)` | `start` (AltGD) while `u < updates`, then what `form` says |
| `Periodic(form, every, other)` | `other` (AltGD) when `(u + 1) % every == 0`, else `form` |

`get` takes a schedule, a form, a form's name or a `get_config()` dict of either; a new schedule
is a class and an entry of `_REGISTRY`.
"""

from tf_fusedprop import forms as fp_forms
from tf_fusedprop._checks import Registry, positive_int

__all__ = ["Constant", "Periodic", "Schedule", "Warmup", "get"]


class Schedule:
    """Which form trains each G update (see the module docstring).

    Subclasses set `forms` (the distinct forms, in order of first use) and define `form_at`
    and `counts`.
    """

    def __init__(self, forms):
        forms = tuple(forms)
        self.forms = tuple(f for i, f in enumerate(forms) if all(f is not g for g in forms[:i]))

    @property
    def name(self):
        """The forms' names, in order of first use, joined by "+"."""
        return "+".join(f.name for f in self.forms)

    def form_at(self, update):
        """The form that trains G update `update` (0-based)."""
        raise NotImplementedError

    def counts(self, stop, start=0):
        """`{form name: G updates it trains}` among updates `start` to `stop - 1` (closed form)."""
        raise NotImplementedError

    def switch_note(self, update):
        """The line to log when G update `update` starts another part of the schedule, or None."""
        return None

    def misaligned(self, steps_per_execution):
        """Why a train function of `steps_per_execution` steps cannot follow it, or None."""
        return None

    def check(self, loss, generator, discriminator, generator_inputs=None):
        """As `Form.check`, for every form of the schedule; returns the `GANLoss`."""
        for form in self.forms:
            loss = form.check(loss, generator, discriminator, generator_inputs)
        return loss

    def check_loss(self, loss):
        """As `Form.check_loss`, for every form of the schedule; returns the `GANLoss`."""
        for form in self.forms:
            loss = form.check_loss(loss)
        return loss


class Constant(Schedule):
    """One form for every update: a plain form, as `FusedPropGAN` follows it."""

    def __init__(self, form):
        super().__init__((fp_forms.get(form),))
        self.form = self.forms[0]

    def form_at(self, update):
        """`form`."""
        return self.form

    def counts(self, stop, start=0):
        """Every update is `form`'s."""
        return {self.form.name: max(stop - start, 0)}

    def get_config(self):
        """The form's own config (a constant schedule is its form)."""
        return self.form.get_config()

    def __repr__(self):
        return repr(self.form)


def _one_form(argument, value, refusal):
    """The form `value` names; `refusal` (the start of a one-line error) for a schedule."""
    value = get(value)
    if not isinstance(value, Constant):
        raise ValueError(f"{refusal}. Received: {argument}={value!r}")
    return value.form


def _non_negative_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer. Received: {name}={value!r}")
    return value


def _merged(*parts):
    total = {}
    for part in parts:
        for name, count in part.items():
            total[name] = total.get(name, 0) + count
    return {name: count for name, count in total.items() if count}


class Warmup(Schedule):
    """`start` (AltGD by default) for the first `updates` G updates, then `form`.

    Simultaneous updates progress less per update than alternating ones early in training; a
    short alternating start buys most of that back (docs/guide.md#a-schedule-of-forms). The
    switch is logged once: "G update 500: alternating -> fused".

    Args:
      form: the form after the warm start (a `Form`, a name of `forms.FORMS` or a
        `get_config()` dict; a `Periodic` schedule too).
      updates: G updates of `start`; 0: none.
      start: the warm start's form (default `Alternating()`, with its own `n_dis`).
    """

    def __init__(self, form="fused", updates=500, start="alternating"):
        self.form, self.start = get(form), _one_form("start", start, "A warm start is one form")
        self.updates = _non_negative_int("updates", updates)
        super().__init__((self.start, *self.form.forms) if updates else self.form.forms)

    def form_at(self, update):
        """`start` before update `updates`, then what `form` says."""
        return self.start if update < self.updates else self.form.form_at(update)

    def counts(self, stop, start=0):
        """`start`'s updates below `updates`, then `form`'s counts."""
        switch = min(max(self.updates, start), stop)
        return _merged({self.start.name: switch - start} if switch > start else {}, self.form.counts(stop, switch))

    def switch_note(self, update):
        """ "G update K: alternating -> fused" at the switch; then what `form` says."""
        if update == self.updates and self.updates:
            return f"G update {update}: {self.start.name} -> {self.form.name}"
        return self.form.switch_note(update) if update > self.updates else None

    def misaligned(self, steps_per_execution):
        """The switch must start a call of the train function."""
        if self.updates % steps_per_execution:
            return (
                f"{self!r} switches forms at G update {self.updates}, which steps_per_execution="
                f"{steps_per_execution} does not divide: each call of the train function trains one form. "
                "Use a steps_per_execution that divides it."
            )
        return self.form.misaligned(steps_per_execution)

    def get_config(self):
        """The schedule as plain values (`get` rebuilds it)."""
        return {
            "name": "warmup",
            "form": self.form.get_config(),
            "updates": self.updates,
            "start": self.start.get_config(),
        }

    def __repr__(self):
        return f"Warmup({self.form!r}, updates={self.updates}, start={self.start!r})"


class Periodic(Schedule):
    """`form`, with one update of `other` (AltGD by default) every `every` G updates: updates
    `every - 1`, `2 * every - 1`, ... are `other`'s.

    Args:
      form: the form of most updates (a `Form`, a name of `forms.FORMS` or a `get_config()` dict).
      every: the period, in G updates (>= 2).
      other: the form of one update in each period.
    """

    def __init__(self, form="fused", every=4, other="alternating"):
        self.form = _one_form("form", form, "Periodic mixes two forms")
        self.other = _one_form("other", other, "Periodic mixes two forms")
        self.every = positive_int("every", every)
        if self.every < 2:
            raise ValueError(f"every must be at least 2 (one update of each form). Received: every={every!r}")
        super().__init__((self.form, self.other))

    def form_at(self, update):
        """`other` on the last update of each period, else `form`."""
        return self.other if (update + 1) % self.every == 0 else self.form

    def counts(self, stop, start=0):
        """`other` trains the updates u with (u + 1) % every == 0."""
        if stop <= start:
            return {}
        others = stop // self.every - start // self.every
        return _merged({self.form.name: stop - start - others}, {self.other.name: others})

    def misaligned(self, steps_per_execution):
        """Every update may switch forms: one step per call."""
        if steps_per_execution != 1:
            return (
                f"{self!r} switches forms from one G update to the next: it needs steps_per_execution=1 "
                f"(received {steps_per_execution})."
            )
        return None

    def get_config(self):
        """The schedule as plain values (`get` rebuilds it)."""
        return {
            "name": "periodic",
            "form": self.form.get_config(),
            "every": self.every,
            "other": self.other.get_config(),
        }

    def __repr__(self):
        return f"Periodic({self.form!r}, every={self.every}, other={self.other!r})"


# Schedules by the names of their `get_config()` (they need arguments: no name alone).
_REGISTRY = Registry("schedule", {"warmup": Warmup, "periodic": Periodic})


def get(schedule):
    """The `Schedule` that `schedule` names: a schedule itself, a form (or its name, or its
    `get_config()` dict: a `Constant` schedule), or a schedule's `get_config()` dict.

    Raises:
      ValueError: an unknown name, or a schedule's name without its arguments.
    """
    if isinstance(schedule, Schedule):
        return schedule
    if isinstance(schedule, str) and schedule in _REGISTRY:
        raise ValueError(
            f"form={schedule!r} is a schedule of forms: construct it "
            f"(tf_fusedprop.schedules.{_REGISTRY.get(schedule).__name__}(...))."
        )
    if isinstance(schedule, dict) and schedule.get("name") in _REGISTRY:
        arguments = {key: value for key, value in schedule.items() if key != "name"}
        return _REGISTRY.get(schedule["name"])(**arguments)
    return Constant(schedule)
