"""After the gradients: everything one update of `FusedPropGAN` does with them, in one place.

`Updater.apply` takes one phase's gradients (of D, of G, or of both from one backward pass)
and, in this order: checks that each player's loss and gradients are finite (all replicas
agree), records the first non-finite update (`DivergenceRecord`), makes a loss-scaled update
skip every player together when any gradient is not finite, averages over replicas, and applies
each player's optimizer. `Updater.start_step` and `finish_step` run what comes before and
after a whole step: the start and the joint jump of a Lookahead cycle
(`tf_fusedprop.lookahead`), then the EMA generator's update (`tf_fusedprop.ema`).

Loss scaling (mixed_float16) uses Keras's public `LossScaleOptimizer` API: `scale_loss`
multiplies the objective before the backward pass; the optimizer's `apply_gradients` unscales,
skips a non-finite update and adjusts its scale. A form that back-propagates both players'
losses together needs the two optimizers to carry one scale (`check_loss_scales`).
"""

import keras
import tensorflow as tf

from tf_fusedprop import replicas

__all__ = ["DivergenceRecord", "Updater", "check_loss_scales"]

_BITS = {"discriminator": 1, "generator": 2}
_LOSSES = {"discriminator": "d_loss", "generator": "g_loss"}


def _scaled(optimizer):
    return isinstance(optimizer, keras.optimizers.LossScaleOptimizer)


def _all_finite(tensors):
    return tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in tensors if t is not None])


def check_loss_scales(form, d_optimizer, g_optimizer):
    """Raises ValueError unless a form whose backward pass carries both players' losses gets
    two optimizers with one loss scale (both `LossScaleOptimizer`s with the same settings, or
    neither)."""
    if not form.shares_loss_scale:
        return
    d, g = d_optimizer, g_optimizer
    if _scaled(d) != _scaled(g):
        raise ValueError(
            f"form={form.name!r} back-propagates both players' losses together, so they share one loss "
            "scale: wrap both optimizers in keras.optimizers.LossScaleOptimizer, or neither. Received: "
            f"d_optimizer={type(d).__name__}, g_optimizer={type(g).__name__}."
        )
    if _scaled(d) and (d.initial_scale, d.dynamic_growth_steps) != (g.initial_scale, g.dynamic_growth_steps):
        raise ValueError(
            "The two LossScaleOptimizers must have the same initial_scale and dynamic_growth_steps (one loss "
            f"scale for the one backward pass). Received: D ({d.initial_scale}, {d.dynamic_growth_steps}), "
            f"G ({g.initial_scale}, {g.dynamic_growth_steps})."
        )


class DivergenceRecord:
    """The first update whose losses or gradients were not finite, as one int64 variable
    `4 * step + players` (bit 1: D, bit 2: G; -1 for none), so that it is written and read at
    once. Replicas agree on it (the flags are all-reduced), so the first replica's value is kept.
    """

    def __init__(self):
        self.variable = keras.Variable(
            -1, dtype="int64", trainable=False, aggregation="only_first_replica", name="first_nonfinite"
        )

    def record(self, step, finite):
        """Records `finite` (player -> boolean scalar) of update `step` (1-based G updates) if
        a player is not finite and nothing was recorded yet."""
        bits = tf.constant(0, tf.int64)
        for player, ok in finite.items():
            bits += tf.where(ok, tf.constant(0, tf.int64), _BITS[player])
        first = tf.logical_and(bits > 0, self.variable < 0)
        self.variable.assign(tf.where(first, 4 * tf.cast(step, tf.int64) + bits, self.variable))

    def read(self):
        """None, or `{"step": s, "players": [...]}` naming "discriminator" and/or "generator"."""
        value = int(self.variable.numpy())
        if value < 0:
            return None
        step, bits = divmod(value, 4)
        return {"step": step, "players": [name for name, bit in _BITS.items() if bits & bit]}


class Updater:
    """Applies the gradients of each phase and finishes each step (see the module docstring).

    Args:
      models: `{"discriminator": D, "generator": G}`.
      record: the `DivergenceRecord`.
      ema: an attached `tf_fusedprop.EMA` of G, or None.
      lookahead: an attached `tf_fusedprop.Lookahead`, or None.
    """

    def __init__(self, models, record, ema=None, lookahead=None):
        self.models, self.record, self.ema, self.lookahead = models, record, ema, lookahead
        self.optimizers = None

    def compile(self, schedule, optimizers):
        """Sets `{"discriminator": ..., "generator": ...}` optimizers (checked against every form
        of the `schedules.Schedule`, and built)."""
        for each in schedule.forms:
            check_loss_scales(each, optimizers["discriminator"], optimizers["generator"])
        self.optimizers = optimizers
        for player, optimizer in optimizers.items():
            optimizer.build(self.models[player].trainable_variables)

    @property
    def step(self):
        """G updates so far (an int64 variable): the step counter of the whole model."""
        return self.optimizers["generator"].iterations

    def scale_loss(self, players):
        """The function that loss-scales the objective of a phase updating `players` (the first
        player's `LossScaleOptimizer.scale_loss`), or None without loss scaling."""
        optimizer = self.optimizers[players[0]]
        return optimizer.scale_loss if _scaled(optimizer) else None

    def apply(self, grads, logs, between=None):
        """Applies one phase's `grads` (player -> gradients); `logs` holds its losses.

        `between`: None, or a function of the gradients to apply called after D's update and
        before G's (a `StrayProbe` measures G's gradient at the updated D there)."""
        scaled = _scaled(self.optimizers[next(iter(grads))])
        finite = {
            player: replicas.all_agree(_all_finite([logs[_LOSSES[player]]] + ([] if scaled else list(g))))
            for player, g in grads.items()
        }
        self.record.record(self.step + 1, finite)
        if scaled:
            # A non-finite gradient of any player poisons all: every LossScaleOptimizer skips
            # this update and halves its (equal) scale together.
            ok = replicas.all_agree(_all_finite([g for player_grads in grads.values() for g in player_grads]))
            poison = tf.where(ok, 0.0, float("nan"))
            grads = {player: [g + tf.cast(poison, g.dtype) for g in g_list] for player, g_list in grads.items()}
        count = replicas.count()
        for player, player_grads in grads.items():
            if between is not None and player == "generator":
                between(grads)
            if count > 1:  # the optimizer sums gradients over replicas; we want their mean
                player_grads = [g / count for g in player_grads]
            self.optimizers[player].apply_gradients(zip(player_grads, self.models[player].trainable_variables))

    def start_step(self):
        """Before the phases of a step: the start of a Lookahead cycle (when due)."""
        if self.lookahead is not None:
            self.lookahead.start(self.step)

    def finish_step(self):
        """After all phases of a step: the Lookahead jump (when due), then the EMA update."""
        if self.lookahead is not None:
            self.lookahead.update(self.step)
        if self.ema is not None:
            self.ema.update(self.step)
