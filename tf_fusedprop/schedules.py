"""Schedules of training forms: which form (`tf_fusedprop.forms`) trains each G update of a run.

A form says what one train step does; a schedule says which form does it at G update `u`
(0-based), and `FusedPropGAN.fit` follows it by itself (`tf_fusedprop.train_functions`): it
compiles one train function per form of `forms` and, before each call, runs the one of
`form_at(G updates so far)`, so every switch must fall on a multiple of `steps_per_execution`
(`misaligned` says when one does not); a schedule that `repeats` a period from some update on
(`Periodic`) is instead traced a whole period at a time, and any `steps_per_execution` follows it.
A fixed schedule's switch depends only on the G update count, which checkpoints keep, so a run
resumed on either side of a switch trains as an uninterrupted one.

| schedule | G update `u` is trained by |
|---|---|
| `Constant(form)` | `form`, always (what a plain form means to `FusedPropGAN`) |
| `Warmup(form, updates, start)` | `start` (AltGD) while `u < updates`, then what `form` says |
| `Periodic(form, every, other)` | `other` (AltGD) when `(u + 1) % every == 0`, else `form` |
| `Auto(form, threshold, every, window, hold, peak, peak_windows, other, signal)` | `form`, and `other` (AltGD) for `hold` updates after each `window` readings whose mean says a stall (the stray probe's, G's spread or coverage below `threshold`, or D's logit gap above it), until `peak_windows` windows in a row have read `peak` (the other side) |

`Auto`'s switch depends on what the run measures (`tf_fusedprop.stray_probe`): its state (`attach`) is a few variables that the train
step updates (`observe`, `trained`) and `fit` reads between calls, saved with the model, so a
resumed run decides as an uninterrupted one.

`get` takes a schedule, a form, a form's name or a `get_config()` dict of either; a new schedule
is a class and an entry of `_REGISTRY`.
"""

import math

import keras
import tensorflow as tf

from tf_fusedprop import forms as fp_forms
from tf_fusedprop import replicas
from tf_fusedprop._checks import Registry, positive_int

__all__ = ["SIGNALS", "Auto", "Constant", "Periodic", "Schedule", "Warmup", "get", "simultaneous"]


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

    #: None, or `(first, period)`: from G update `first` on, update `u` is trained by
    #: `period[u % len(period)]` (a tuple of forms). `FusedPropGAN.fit` then traces a period as
    #: one function and a call covers whole periods (`tf_fusedprop.train_functions.periodic`).
    repeats = None

    #: G updates between the stray probe's measurements that the schedule follows; None: it
    #: follows none (`FusedPropGAN` then probes only if asked to).
    probe_every = None

    def attach(self):
        """Makes the schedule's state variables (call it where the model's variables live);
        returns them, for the model to track (and save). A fixed schedule has none."""
        return []

    def observe(self, stray, probed, update):
        """In the train step: the probe's `stray` of G update `update` (an int64 tensor),
        `probed` 1.0 where it measured (0.0 elsewhere). A fixed schedule ignores it."""
        del stray, probed, update  # a body AutoGraph can convert (a docstring alone it cannot)

    def observe_logs(self, form, logs, update):
        """In the train step, after `form` trained G update `update` (an int64 tensor): the
        step's logs (`d_loss`, `real_logit`, ...: this replica's). A fixed schedule ignores them."""
        del form, logs, update

    def trained(self, form, updates):
        """In the train step, after `form` trained it: `updates` (an int64 tensor), the G
        updates it made (0 where a loss-scaled step was skipped, else 1). Returns the schedule's
        logs (`{name: tensor}`; a fixed schedule has none)."""
        return {}

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


def simultaneous(form):
    """Whether a phase of `form` updates both players at once (what the stray probe measures)."""
    return any(len(phase.players) > 1 for phase in form.phases)


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
        """ "G update K: alternating -> fused" at the switch; then what `form` says (asked on
        every call from the switch on, so that an adaptive `form` knows the form it last ran)."""
        after = self.form.switch_note(update) if update >= self.updates else None
        if update == self.updates and self.updates:
            return f"G update {update}: {self.start.name} -> {self.form.name}"
        return after

    @property
    def repeats(self):
        """`form`'s period, from the switch on (None if `form` repeats none)."""
        if self.form.repeats is None:
            return None
        first, period = self.form.repeats
        return max(first, self.updates), period

    def misaligned(self, steps_per_execution):
        """The switch must start a call of the train function (unless `form` repeats a period:
        its train function follows any update)."""
        if self.updates % steps_per_execution and self.repeats is None:
            return (
                f"{self!r} switches forms at G update {self.updates}, which steps_per_execution="
                f"{steps_per_execution} does not divide: each call of the train function trains one form. "
                "Use a steps_per_execution that divides it."
            )
        return self.form.misaligned(steps_per_execution)

    @property
    def probe_every(self):
        """What `form` follows."""
        return self.form.probe_every

    def attach(self):
        """`form`'s state."""
        return self.form.attach()

    def observe(self, stray, probed, update):
        """Passed on to `form` (an alternating warm start is not probed)."""
        self.form.observe(stray, probed, update)

    def observe_logs(self, form, logs, update):
        """Passed on to `form`."""
        self.form.observe_logs(form, logs, update)

    def trained(self, form, updates):
        """`form`'s logs."""
        return self.form.trained(form, updates)

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

    @property
    def repeats(self):
        """`(0, period)`: `every - 1` updates of `form`, then one of `other`."""
        return 0, (self.form,) * (self.every - 1) + (self.other,)

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


class _Signal:
    """A reading `Auto` can follow: its words in the log, on which side of the threshold a stall
    reads, and `read(logs)`, the reading from a step's logs (None: it needs the stray probe)."""

    def __init__(self, words, stall_below, read=None):
        self.words, self.stall_below, self.read = words, stall_below, read

    @property
    def probe(self):
        """Whether the reading is the stray probe's (not in a step's logs)."""
        return self.read is None


def _logit_gap(logs):
    return tf.cast(logs["real_logit"], tf.float64) - tf.cast(logs["fake_logit"], tf.float64)


#: The readings `Auto` follows (`signal`), by name.
SIGNALS = {
    # ||g_alt - g_sim|| / ||g_sim|| (`tf_fusedprop.stray_probe`): D's update hardly moves G's
    # gradient in a stall.
    "stray": _Signal("stray", stall_below=True),
    # D's mean logit on the real samples minus on the generated ones, read from the step's
    # logs without a probe: D far ahead of G in ring8's stalls (docs/quality.md).
    "logit_gap": _Signal("logit gap", stall_below=False, read=_logit_gap),
    # G's samples' spread across the batch against the real batch's (`steps.spread_ratio`),
    # from the step's logs: near 0 where G draws one sample for every latent, as fused's
    # stalls at 64 px do (docs/quality.md).
    "spread": _Signal("spread", stall_below=True, read=lambda logs: tf.cast(logs["fake_spread"], tf.float64)),
    # The share of the real batch G's samples cover (`steps.coverage`), from the step's logs:
    # ~0.97 where G draws the data's modes, lower where it left some, which the spread does
    # not see (MNIST seed 2's plateau, docs/quality.md).
    "coverage": _Signal("coverage", stall_below=True, read=lambda logs: tf.cast(logs["fake_coverage"], tf.float64)),
}


class Auto(Schedule):
    """`form` (fused by default), alternating for a while whenever a reading of its updates
    says they stall.

    By default it follows the stray probe (`tf_fusedprop.stray_probe`, `every` G updates apart,
    on `form`'s updates): after each `window` probes, if their mean `stray` is below `threshold`,
    the next `hold` G updates are `other`'s (AltGD by default), after which `form` trains and is
    probed again; once `peak_windows` windows in a row have reached `peak` (>= it), it no longer
    alternates. Why: on the tracked runs a low stray marked the updates that made no progress,
    and a high one those that made the most (docs/quality.md, "The stray probe"); before the
    players have learned from each other a low stray is a stall, which alternating escapes;
    after, it is a plateau, where alternating only costs time.

    With `signal="logit_gap"` it reads instead, every `every` G updates (of either form), D's
    mean logit on the batch's real samples minus its mean on the generated ones (the step's own
    logs: no probe), and alternates where a window's mean is *above* `threshold` (D far
    ahead of G, ring8's stalls); alternating's updates are read too, so a stretch goes on while
    D stays ahead; `peak` is then a gap *below* `threshold` (<= it): D no longer ahead, after
    which a rising gap is D sharpening late in the run (grid25), not a stall. With
    `signal="spread"` it reads G's samples' spread across the batch against the real batch's
    (`fake_spread`, the step's own logs) the same way, and alternates where a window's mean is
    *below* `threshold` (G drawing nearly one sample for every latent); `peak` is then a spread
    at or above it.
    `signal="coverage"` reads, the same way, the share of the real batch's samples that G's
    cover (`fake_coverage`, `steps.coverage`: ~0.97 where G draws every mode of the batch), and
    alternates where a window's mean is below `threshold` (G has left modes).

    With `drop` (a reading whose stall is low: the stray, spread, coverage) a window also stalls
    where its mean has fallen by more than `drop` from the best window read since the last
    stretch was asked (`form`'s updates losing what the run had reached, a warm start's
    readings included), whatever `threshold` says; the stretch's asking window is the new best.

    `fit` reads the decision between calls of the train function, so an alternating stretch
    starts with the call after the probe that asked for it (update u: it ends before update
    u + 1 + hold) and the calls starting before its end alternate (`steps_per_execution`
    updates a call: with 100, a stretch of `hold` 100 asked at update 390 trains updates
    400-499); `hold` must be at least `steps_per_execution`, so that every stretch asked
    reaches the next call. Each change is one log line;
    `alternated` (G updates trained by a form of `other`'s name so far, a warm start's included)
    is logged with the metrics.

    Args:
      form: the form of most updates (a `Form`, a name of `forms.FORMS` or a `get_config()`
        dict); the probe measures its simultaneous updates (alternating alone is never probed,
        so it trains alone).
      threshold: the mean stray (spread, coverage) below which the run alternates (> 0); with
        "logit_gap", the mean gap above which it does (any finite number).
      every: G updates between probes.
      window: probes whose mean decides.
      hold: G updates of `other` after a decision to alternate.
      peak: the window mean from which on it no longer alternates (the stray, spread, coverage:
        >= peak, above `threshold`; the logit gap: <= peak, below it); None: it always may.
      peak_windows: the windows in a row at `peak` after which it no longer alternates (1: the
        first window at `peak`).
      other: the alternating form.
      signal: the reading it follows, a name of `SIGNALS`: "stray", "logit_gap", "spread" or
        "coverage".
      drop: the fall from the best window since the last stretch (a share of it, in (0, 1))
        from which on a window stalls too; None: `threshold` alone decides.
    """

    def __init__(
        self,
        form="fused",
        threshold=0.4,
        every=10,
        window=10,
        hold=100,
        peak=None,
        peak_windows=1,
        other="alternating",
        signal="stray",
        drop=None,
    ):
        self.form = _one_form("form", form, "Auto switches between two forms")
        self.other = _one_form("other", other, "Auto switches between two forms")
        if not simultaneous(self.form) or simultaneous(self.other):
            raise ValueError(
                "Auto alternates a simultaneous form (its updates are probed) with a form that updates one "
                f"player at a time. Received: form={self.form.name!r}, other={self.other.name!r}"
            )
        if signal not in SIGNALS:
            raise ValueError(f"Unknown signal for Auto; expected one of {sorted(SIGNALS)}. Received: signal={signal!r}")
        number = not isinstance(threshold, bool) and isinstance(threshold, (int, float)) and math.isfinite(threshold)
        if not number or (SIGNALS[signal].stall_below and not threshold > 0):
            kind = "a positive number" if SIGNALS[signal].stall_below else "a finite number"
            raise ValueError(f"threshold must be {kind}. Received: threshold={threshold!r}")
        self.threshold = float(threshold)
        below = SIGNALS[signal].stall_below
        if peak is not None and (
            isinstance(peak, bool)
            or not isinstance(peak, (int, float))
            or not (peak > threshold if below else peak < threshold)
        ):
            side = "above" if below else "below"
            raise ValueError(f"peak must be None or a number {side} threshold ({threshold!r}). Received: peak={peak!r}")
        self.peak = None if peak is None else float(peak)
        if drop is not None and (
            isinstance(drop, bool) or not isinstance(drop, (int, float)) or not 0 < drop < 1 or not below
        ):
            raise ValueError(
                "drop must be None or a number in (0, 1), for a reading whose stall is low (the stray, spread, "
                f"coverage). Received: drop={drop!r}, signal={signal!r}"
            )
        self.drop = None if drop is None else float(drop)
        self.signal = signal
        self._signal = SIGNALS[signal]
        self.every = positive_int("every", every)
        self.window = positive_int("window", window)
        self.hold = positive_int("hold", hold)
        self.peak_windows = positive_int("peak_windows", peak_windows)
        self._state = None
        self._last = None  # the form of the last call, for the switch's log line
        self._peaked = None  # whether the last call's state had stopped alternating, for its line
        super().__init__((self.form, self.other))

    @property
    def probe_every(self):
        """`every` where it follows the stray probe, else None."""
        return self.every if self._signal.probe else None

    def attach(self):
        """The state: the update at which the current alternating stretch ends, the probes'
        sum and count in the current window, the last window's mean, the one that last asked,
        the windows in a row at `peak` (kept once `peak_windows` is reached), and `alternated`."""
        if self._state is not None:
            raise ValueError("This Auto schedule already trains a GAN; pass a new schedules.Auto(...) for another.")

        def variable(name, dtype):
            return keras.Variable(0, dtype=dtype, trainable=False, aggregation="only_first_replica", name=name)

        self._state = {
            "until": variable("auto_until", "int64"),
            "sum": variable("auto_window_sum", "float64"),
            "count": variable("auto_window_count", "int64"),
            "mean": variable("auto_last_mean", "float64"),
            "asked": variable("auto_asking_mean", "float64"),
            "at_peak": variable("auto_windows_at_peak", "int64"),
            "alternated": variable("auto_alternated", "int64"),
        }
        if self.drop is not None:  # only then, so that workdirs of Auto without it resume
            self._state["best"] = variable("auto_best_since_stretch", "float64")
            self._state["asked_below"] = variable("auto_asked_below", "float64")
        return list(self._state.values())

    def observe(self, stray, probed, update):
        """Adds a probe to the window when it follows the probe (see `_read`)."""
        if self._signal.probe:
            self._read(stray, probed, update)

    def observe_logs(self, form, logs, update):
        """With a signal read from the step's logs ("logit_gap", "spread", "coverage"), every `every`-th G
        update, whichever form trained it: the reading, its mean over the replicas, to the
        window (see `_read`). Alternating's updates are read too, so a stretch goes on while
        the reading says the run still stalls."""
        del form  # every form's step logs D's logits and G's spread
        if self._signal.probe:
            return
        reading = replicas.summed(self._signal.read(logs)) / replicas.count()  # every replica decides alike
        self._read(reading, tf.cast(tf.equal(update % self.every, 0), tf.float32), update)

    def _read(self, value, counted, update):
        """Adds a reading to the window (`counted` 1.0; 0.0 leaves it out); when the window is
        full, decides (and starts a new window). A reading that is not a finite number (a
        loss-scaled step that overflowed) is left out."""
        state = self._state
        value = tf.cast(value, tf.float64)
        counted = tf.logical_and(counted > 0, tf.math.is_finite(value))
        total = state["sum"] + tf.where(counted, value, tf.constant(0.0, tf.float64))
        count = state["count"] + tf.cast(counted, tf.int64)
        full = count >= self.window
        mean = total / tf.cast(tf.maximum(count, 1), tf.float64)
        stalled = mean < self.threshold if self._signal.stall_below else mean > self.threshold
        if self.drop is not None:
            below = tf.maximum(tf.constant(self.threshold, tf.float64), state["best"] * (1.0 - self.drop))
            stalled = mean < below
        low = tf.logical_and(full, stalled)
        update = tf.cast(update, tf.int64)
        until = tf.where(low, update + 1 + self.hold, state["until"])
        if self.peak is not None:  # a stall's reading after a sustained `peak` is a plateau
            at_peak = state["at_peak"]
            peaked = at_peak >= self.peak_windows
            low = tf.logical_and(low, tf.logical_not(peaked))
            until = tf.where(peaked, state["until"], until)
            reached = mean >= self.peak if self._signal.stall_below else mean <= self.peak
            in_a_row = tf.where(reached, at_peak + 1, tf.zeros_like(at_peak))
            at_peak.assign(tf.where(tf.logical_and(full, tf.logical_not(peaked)), in_a_row, at_peak))
            # Read inside a stretch (the logit gap), a sustained `peak` also ends it.
            until = tf.where(at_peak >= self.peak_windows, tf.minimum(until, update + 1), until)
        state["until"].assign(until)
        if self.drop is not None:
            best = tf.where(low, mean, tf.maximum(state["best"], mean))
            state["best"].assign(tf.where(full, best, state["best"]))
            state["asked_below"].assign(tf.where(low, below, state["asked_below"]))
        state["asked"].assign(tf.where(low, mean, state["asked"]))
        state["mean"].assign(tf.where(full, mean, state["mean"]))
        state["sum"].assign(tf.where(full, tf.constant(0.0, tf.float64), total))
        state["count"].assign(tf.where(full, tf.constant(0, tf.int64), count))

    def trained(self, form, updates):
        """Counts the G updates of a form named as `other` (a warm start's too):
        `{"alternated": updates so far}`."""
        alternated = self._state["alternated"]
        if form.name == self.other.name:
            alternated.assign_add(tf.cast(updates, tf.int64))
        return {"alternated": tf.identity(alternated)}

    def form_at(self, update):
        """`other` before the end of a stretch the probes asked for, else `form` (before
        `attach`: `form`)."""
        if self._state is not None and update < int(self._state["until"].numpy()):
            return self.other
        return self.form

    def misaligned(self, steps_per_execution):
        """A stretch asked mid-call must reach the next call: `hold` >= `steps_per_execution`."""
        if self.hold < steps_per_execution:
            return (
                f"{self!r} alternates hold={self.hold} G updates after a decision, fewer than steps_per_execution="
                f"{steps_per_execution}: a stretch asked mid-call would end before the next call. Use a "
                "steps_per_execution of at most hold."
            )
        return None

    def counts(self, stop, start=0):
        """Unknown before the run: the run logs `alternated`."""
        raise ValueError(
            "An Auto schedule's counts depend on the run: read its `alternated` log instead of counting ahead."
        )

    def switch_note(self, update):
        """One line where the form changes from the last call's, or where `peak_windows` windows
        in a row at `peak` have stopped the alternating (not on the first call: a resumed run's
        state was said before)."""
        peaked = self.peak is not None and int(self._state["at_peak"].numpy()) >= self.peak_windows
        stopped, self._peaked = self._peaked is False and peaked, peaked
        form, last = self.form_at(update), self._last
        self._last = form
        if stopped:
            return (
                f"G update {update}: {self.form.name} from here on ({self.peak_windows} window"
                f"{'s' if self.peak_windows > 1 else ''} in a row of mean {self._signal.words} "
                f"{'>=' if self._signal.stall_below else '<='} {self.peak:g})"
            )
        if form is last or (last is None and form is self.form):
            return None
        if form is self.other:
            mean = float(self._state["asked"].numpy())
            until = int(self._state["until"].numpy())
            if last is None:  # resumed inside a stretch
                return f"G update {update}: {self.other.name} (resumed inside a stretch asked until G update {until})"
            side = "<" if self._signal.stall_below else ">"
            limit = f"{self.threshold:g}"
            if self.drop is not None and float(self._state["asked_below"].numpy()) > self.threshold:
                asked_below = float(self._state["asked_below"].numpy())
                limit = f"{asked_below:.3f}, {1 - self.drop:g} x the best window since the last stretch"
            readings = "probes" if self._signal.probe else "readings"
            return (
                f"G update {update}: {self.form.name} -> {self.other.name} (mean {self._signal.words} "
                f"{mean:.3f} {side} {limit} over the last {self.window} {readings})"
            )
        again = "probing again" if self._signal.probe else "reading on"
        return f"G update {update}: {self.other.name} -> {self.form.name} ({again})"

    def get_config(self):
        """The schedule as plain values (`get` rebuilds it)."""
        return {
            "name": "auto",
            "form": self.form.get_config(),
            "threshold": self.threshold,
            "every": self.every,
            "window": self.window,
            "hold": self.hold,
            "peak": self.peak,
            "peak_windows": self.peak_windows,
            "other": self.other.get_config(),
            "signal": self.signal,
            "drop": self.drop,
        }

    def __repr__(self):
        return (
            f"Auto({self.form!r}, threshold={self.threshold:g}, every={self.every}, window={self.window}, "
            f"hold={self.hold}, peak={self.peak}, peak_windows={self.peak_windows}, other={self.other!r}, "
            f"signal={self.signal!r}, drop={self.drop})"
        )


# Schedules by the names of their `get_config()` (they need arguments: no name alone).
_REGISTRY = Registry("schedule", {"warmup": Warmup, "periodic": Periodic, "auto": Auto})


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
