"""The train function that `FusedPropGAN.fit` calls under a schedule of forms.

Keras traces one train function and calls it once per `steps_per_execution` steps. A schedule
of several forms needs more, in one of two ways:

* `per_call`: the form changes only between calls (`schedules.Warmup`, `schedules.Auto`): one
  Keras train function per form, and each call runs the one of the form that trains the next G
  update (the host reads the update count before each call).
* `periodic`: the form changes from one update to the next in a fixed pattern (a schedule that
  `repeats` a period from some G update on: `schedules.Periodic`, also after a warm start): the
  period is traced as one function, its forms unrolled in order (each step a call of that form's
  traced step: no `tf.cond` chooses a form), and a call of `steps_per_execution` steps runs as
  many whole periods as it holds in that one function. The updates of a call before the next
  period's start (a warm start, or a call that does not start on one) and after its last whole
  period run one traced step per host call, each of the form `schedule.form_at` names, so any
  `steps_per_execution` trains the same updates as one step per call would. Under loss scaling a
  skipped update makes no G update and the step and update counts part; and on several replicas
  a loop of steps in one function fails (as Keras's own multi-step loop does,
  keras-team/keras#19246): every step is then its own call.
"""

import keras
import tensorflow as tf
from keras.src.backend.tensorflow.trainer import reduce_per_replica

__all__ = ["per_call", "periodic"]


def per_call(gan, keras_train_function):
    """The train function of a schedule whose form changes only between calls.

    Args:
      gan: the `FusedPropGAN` (its `schedule`, `updater.step` and `_active_form`, the form
        that a train step being traced trains).
      keras_train_function: makes a new Keras train function (traced on its first call, with
        the form active then).

    Returns:
      A function of Keras's iterator, as Keras's own train function.
    """
    forms = gan.schedule.forms
    compiled = [keras_train_function() for _ in forms]

    def train_function(iterator):
        update = int(gan.updater.step.numpy())
        note = gan.schedule.switch_note(update)
        if note is not None:
            print(note, flush=True)
        gan._active_form = gan.schedule.form_at(update)
        return compiled[forms.index(gan._active_form)](iterator)

    return train_function


def _traced_step(gan, form):
    """One step of `form` on one batch (a step of each replica, their results reduced as Keras
    reduces them), traced unless the model runs eagerly."""

    def on_replica(data):
        gan._active_form = form  # read while the step is traced
        return gan.train_step(data)

    def step(data):
        strategy = gan.distribute_strategy
        return reduce_per_replica(strategy.run(on_replica, args=(data,)), strategy, reduction="auto")

    return step if gan.run_eagerly else tf.function(step, reduce_retracing=True, jit_compile=gan.jit_compile)


def _periods_function(period, steps):
    """`run(iterator, count)`: `count` (a scalar tensor) whole periods, each step of its form's
    traced `steps[form]` on the iterator's next batch; an `Optional` of the last step's results
    (empty if the iterator held nothing). Once the iterator runs out the remaining steps are
    skipped, and no batch is taken beyond the last step."""

    def run(iterator, count):
        nothing = tf.experimental.Optional.empty(None)

        def one_step(form, results, batch):
            def trained():
                trained_results = tf.experimental.Optional.from_value(steps[form](batch.get_value()))
                nothing._element_spec = trained_results.element_spec  # known once a step is traced
                return trained_results

            def skipped():
                results._element_spec = nothing.element_spec
                return results

            return tf.cond(batch.has_value(), trained, skipped)

        def one_period(index, results, batch):
            for position, form in enumerate(period):
                results = one_step(form, results, batch)
                if position + 1 < len(period):
                    batch = iterator.get_next_as_optional()
            more = index + 1 < count
            batch = tf.cond(more, iterator.get_next_as_optional, lambda: batch)
            return index + 1, results, batch

        _, results, _ = tf.while_loop(
            lambda index, results, batch: tf.logical_and(index < count, batch.has_value()),
            one_period,
            [tf.constant(0), nothing, iterator.get_next_as_optional()],
        )
        results._element_spec = nothing.element_spec
        return results

    return tf.function(run, reduce_retracing=True)


def periodic(gan):
    """The train function of a schedule that `repeats` a period (see the module docstring).

    Args:
      gan: the `FusedPropGAN` (its `schedule`, `updater`, `steps_per_execution`).

    Returns:
      A function of Keras's iterator, as Keras's own train function.
    """
    first, period = gan.schedule.repeats
    steps = {form: _traced_step(gan, form) for form in gan.schedule.forms}
    optimizers = gan.updater.optimizers.values()
    whole_periods = (
        not gan.run_eagerly
        and not any(isinstance(o, keras.optimizers.LossScaleOptimizer) for o in optimizers)
        # A loop of steps fails on several replicas, as Keras's own does (keras-team/keras#19246).
        and gan.distribute_strategy.num_replicas_in_sync == 1
    )
    periods = _periods_function(period, steps) if whole_periods else None
    asked = [None]  # the last update whose switch note was asked for

    def update():
        """G updates so far; the schedule's line for the next one printed once, if it has one."""
        done = int(gan.updater.step.numpy())
        if done != asked[0]:
            asked[0] = done
            note = gan.schedule.switch_note(done)
            if note is not None:
                print(note, flush=True)
        return done

    def train_function(iterator):
        left, results = gan.steps_per_execution, None

        def one_by_one(limit):
            nonlocal left, results
            for _ in range(limit):
                batch = iterator.get_next_as_optional()
                if not batch.has_value():
                    left = 0
                    return
                results = steps[gan.schedule.form_at(update())](batch.get_value())
                left -= 1

        if periods is None:
            one_by_one(left)
        else:
            start = max(update(), first)
            one_by_one(min(left, start - update() + -start % len(period)))  # to a period's start
            count = left // len(period)
            if count:
                before = update()
                optional = periods(iterator, tf.constant(count))
                if optional.has_value():
                    results = optional.get_value()
                trained = int(gan.updater.step.numpy()) - before  # one G update a step here
                left = left - trained if trained == count * len(period) else 0  # the data ran out
            one_by_one(left)
        if results is None:
            raise StopIteration
        return results

    return train_function
