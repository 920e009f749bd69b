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
  many whole periods as it holds in that one function; a stretch of one form before the period
  (a warm start) runs the same way, as a period of one form. The few updates of a call between a
  period's start and its own (a call that starts mid-period, one whose length is not a multiple
  of the period) run one traced step per host call, each of the form `schedule.form_at` names, so
  any `steps_per_execution` trains the same updates as one step per call would. Under loss
  scaling a skipped update makes no G update and the step and update counts part; and on several
  replicas a loop of steps in one function fails (as Keras's own multi-step loop does,
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

    @tf.autograph.experimental.do_not_convert  # as Keras's own step: the step is plain graph code
    def step(data):
        strategy = gan.distribute_strategy
        return reduce_per_replica(strategy.run(on_replica, args=(data,)), strategy, reduction="auto")

    return step if gan.run_eagerly else tf.function(step, reduce_retracing=True, jit_compile=gan.jit_compile)


def _periods_function(period, steps):
    """`run(iterator, count)`: `count` (a scalar tensor) times the forms of `period` in order,
    each step of its form's traced `steps[form]` on the iterator's next batch; an `Optional` of
    the last step's results (empty if the iterator held nothing). Once the iterator runs out the
    remaining steps are skipped, and no batch is taken beyond the last step."""

    @tf.autograph.experimental.do_not_convert
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
    loops = {}  # a sequence of forms -> its loop traced as one function
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
        if not isinstance(iterator, (tf.data.Iterator, tf.distribute.DistributedIterator)):
            results = None  # batches in a Python iterable (`train_on_batch`), as Keras takes them
            for _, data in zip(range(gan.steps_per_execution), iterator):
                results = steps[gan.schedule.form_at(update())](data)
            return results
        left, results = gan.steps_per_execution, None

        def in_one_call(forms, count):
            """`count` times `forms`, in one call of their traced loop; the steps trained."""
            nonlocal results
            if len(forms) * count == 1:  # (always, without whole periods: see the loop below)
                batch = iterator.get_next_as_optional()
                if not batch.has_value():
                    return 0
                results = steps[forms[0]](batch.get_value())
                return 1
            if forms not in loops:
                loops[forms] = _periods_function(forms, steps)
            loop = loops[forms]
            before = update()
            optional = loop(iterator, tf.constant(count))
            if optional.has_value():
                results = optional.get_value()
            return int(gan.updater.step.numpy()) - before  # one G update a step here

        while left:
            done = update()
            form = gan.schedule.form_at(done)
            if done >= first and done % len(period) == 0 and left >= len(period) and whole_periods:
                forms, count = period, left // len(period)
            elif done < first and whole_periods:  # a stretch of one form before the period (a warm start)
                count = 1
                while count < min(left, first - done) and gan.schedule.form_at(done + count) is form:
                    count += 1
                forms = (form,)
            else:  # one step: to a period's start, after the last whole one, or every step
                forms, count = (form,), 1
            trained = in_one_call(forms, count)
            if trained < len(forms) * count:  # the data ran out
                break
            left -= trained
        if results is None:
            raise StopIteration
        return results

    return train_function
