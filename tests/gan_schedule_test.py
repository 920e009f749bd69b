"""FusedPropGAN under a schedule of forms (`schedules.Warmup`, `schedules.Periodic`, `schedules.Auto`):
`fit` switches by itself, as a hand-made switch would, with every step plugin, across a save and
reload, and under `tf.distribute`."""

import contextlib
import io
import os
from unittest import mock

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

import tf_fusedprop as fp
from tests import testing_utils as tu
from tests.gan_test import mixed_float16_pair

PLUGINS = {
    "plain": {},
    "ema_lookahead": {"ema": lambda: fp.EMA(0.9, rampup=0.5), "lookahead": lambda: fp.Lookahead(every=3, alpha=0.5)},
    "r1_augment": {"regularizers": lambda: [fp.R1(0.1, every=2)], "augment": lambda: fp.DiffAugment("translation")},
    "conditional": {"num_classes": lambda: 3},
}
PLUGINS["every_plugin"] = {**PLUGINS["ema_lookahead"], **PLUGINS["r1_augment"]}


def build(form, plugins="plain", iter_size=1, steps_per_execution=1, batch_norm=True):
    """A tiny GAN (the conditional digits pair for "conditional") with the named plugins,
    compiled with train.py's optimizer (`fp.optimizers.Adam`: one op a variable, so each traced
    step is smaller than with Keras's Adam, which gan_test's own cases cover)."""
    arguments = {name: make() for name, make in PLUGINS[plugins].items()}
    if plugins == "conditional":
        generator, discriminator = tu.tiny_conditional_pair(num_classes=3, seed=0)
    else:
        keras.utils.set_random_seed(0)
        generator, discriminator = tu.tiny_generator(batch_norm=batch_norm), tu.tiny_discriminator()
    gan = fp.FusedPropGAN(generator, discriminator, form=form, iter_size=iter_size, seed=7, **arguments)
    gan.compile(
        d_optimizer=fp.optimizers.Adam(1e-2),
        g_optimizer=fp.optimizers.Adam(1e-2),
        steps_per_execution=steps_per_execution,
    )
    return gan


def data(plugins="plain", n=16):
    rng = np.random.default_rng(0)
    if plugins == "conditional":
        return rng.uniform(-1, 1, (n, 8, 8, 1)).astype("float32"), rng.integers(0, 3, n).astype("int32")
    return rng.uniform(-1, 1, (n,) + tu.IMAGE).astype("float32"), None


def fit(gan, x, y, epochs, initial_epoch=0):
    """Fits 2 steps per epoch (batch 8 of 16), unshuffled; returns what it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        gan.fit(x, y, batch_size=8, epochs=epochs, initial_epoch=initial_epoch, shuffle=False, verbose=0)
    return printed.getvalue()


def weights(gan):
    return [v.numpy() for v in gan.variables]


def switch_by_hand(gan, form):
    """What a user could do without a schedule: another form, and Keras's train function rebuilt."""
    gan.schedule = fp.schedules.get(form)
    gan.form = gan._active_form = gan.schedule.form
    gan.train_function = None


class WarmupTest(tu.TestCase):
    @parameterized.parameters("every_plugin", "conditional")  # every plugin at once: one trace per form, not four
    def test_fit_switches_as_a_hand_made_switch_and_says_so_once(self, plugins):
        x, y = data(plugins)
        scheduled = build(fp.schedules.Warmup("fused", updates=4), plugins)
        printed = fit(scheduled, x, y, epochs=4)
        self.assertEqual(printed, "G update 4: alternating -> fused\n")

        by_hand = build("alternating", plugins)
        fit(by_hand, x, y, epochs=2)
        switch_by_hand(by_hand, "fused")
        fit(by_hand, x, y, epochs=4, initial_epoch=2)
        self.assertEqual(int(scheduled.updater.step.numpy()), 8)
        for a, b in zip(weights(scheduled), weights(by_hand), strict=True):
            self.assertAllEqual(a, b)

    def test_a_run_saved_before_or_after_the_switch_resumes_as_an_uninterrupted_one(self):
        x, y = data()
        schedule = fp.schedules.Warmup("fused", updates=4, start=fp.Alternating(n_dis=2))
        straight = build(schedule, "ema_lookahead", iter_size=2)  # the EMA's ramp-up resumes too
        fit(straight, x, y, epochs=4)
        first, trained = build(fp.schedules.get(schedule.get_config()), "ema_lookahead", iter_size=2), 0
        for saved_after in (1, 3):  # epochs: before the switch at update 4, and after it
            fit(first, x, y, epochs=saved_after, initial_epoch=trained)  # one run, saved twice
            trained = saved_after
            path = os.path.join(self.get_temp_dir(), f"gan{saved_after}.keras")
            first.save(path)
            resumed = keras.models.load_model(path)
            self.assertEqual(resumed.form.get_config(), straight.form.get_config())
            printed = fit(resumed, x, y, epochs=4, initial_epoch=saved_after)
            self.assertEqual(printed, "G update 4: alternating -> fused\n" if saved_after == 1 else "")
            for a, b in zip(weights(resumed), weights(straight), strict=True):
                self.assertAllEqual(a, b)

    def test_under_a_two_replica_strategy_as_on_one_device(self):
        x, _ = data(n=32)
        one = build(fp.schedules.Warmup("inverse", updates=2), batch_norm=False)  # no batch statistics per replica
        one.fit(x, batch_size=16, epochs=2, shuffle=False, verbose=0)
        with tu.two_cpu_strategy().scope():
            two = build(fp.schedules.Warmup("inverse", updates=2), batch_norm=False)
        two.fit(x, batch_size=16, epochs=2, shuffle=False, verbose=0)
        self.assertEqual(int(two.d_optimizer.iterations.numpy()), 4)
        self.assertLess(tu.max_relative_difference(two.trainable_weights, one.trainable_weights), 1e-5)

    def test_steps_per_execution_must_not_straddle_a_switch(self):
        x, y = data(n=24)
        gan = build(fp.schedules.Warmup("fused", updates=4), steps_per_execution=3)
        with self.assertRaisesRegex(ValueError, r"switches forms at G update 4, which steps_per_execution=3 does not"):
            fit(gan, x, y, epochs=1)
        gan = build(fp.schedules.Warmup("fused", updates=6), steps_per_execution=3)
        fit(gan, x, y, epochs=3)
        self.assertEqual(int(gan.updater.step.numpy()), 9)


class PeriodicTest(tu.TestCase):
    def test_one_update_of_the_other_form_every_k(self):
        x, y = data()
        gan = build(fp.schedules.Periodic("fused", every=4, other=fp.Alternating(n_dis=2)))
        self.assertEqual(fit(gan, x, y, epochs=4), "")
        # 8 G updates, updates 3 and 7 alternating with 2 D updates each: 10 D updates.
        self.assertEqual(int(gan.d_optimizer.iterations.numpy()), 10)

    def test_any_steps_per_execution_trains_as_one_step_a_call_across_a_warm_start_and_a_resume(self):
        """Epochs of 6 steps; a warm start of 2 updates, then one alternating update in every 4.
        Calls of 8: the warm start as one traced loop of its form, 2 steps to the period's start,
        a period traced as one function whose data runs out, then whole periods and the steps
        between them; a run saved mid-period and resumed in calls of 5; `train_on_batch`: the
        weights of one step a call, and the traced loops ran."""
        x, y = data(n=48)  # 6 steps an epoch
        schedule = fp.schedules.Warmup(fp.schedules.Periodic("fused", every=4, other=fp.Alternating(n_dis=2)), 2)
        loops, traced = [], fp.train_functions._periods_function

        def counted(period, steps):
            loop = traced(period, steps)

            def counting(iterator, count):
                loops.append((len(period), int(count)))
                return loop(iterator, count)

            return counting

        one_a_call = build(fp.schedules.get(schedule.get_config()), iter_size=2)
        self.assertEqual(fit(one_a_call, x, y, epochs=3), "G update 2: alternating -> fused+alternating\n")
        # 18 G updates: 0-1 the warm start's, then 3, 7, 11 and 15 alternating with 2 D updates.
        self.assertEqual(int(one_a_call.d_optimizer.iterations.numpy()), 18 + 4)
        path = os.path.join(self.get_temp_dir(), "periodic.keras")
        with mock.patch.object(fp.train_functions, "_periods_function", counted):
            eight_a_call = build(fp.schedules.get(schedule.get_config()), iter_size=2, steps_per_execution=8)
            printed = fit(eight_a_call, x, y, epochs=1)
            eight_a_call.save(path)  # after 6 updates: mid-period
            printed += fit(eight_a_call, x, y, epochs=3, initial_epoch=1)
        self.assertEqual(printed, "G update 2: alternating -> fused+alternating\n")
        # Epoch 1: the warm start (2), updates 2-3 alone, a period of which 2 steps have data;
        # epoch 2: updates 6-7 alone, a period, no data left; epoch 3: two periods, 6 with data.
        self.assertEqual(loops, [(1, 2), (4, 1), (4, 1), (4, 2)])
        resumed = keras.models.load_model(path)
        resumed.steps_per_execution = 5
        self.assertEqual(fit(resumed, x, y, epochs=3, initial_epoch=1), "")
        for gan in (eight_a_call, resumed):
            for a, b in zip(weights(gan), weights(one_a_call), strict=True):
                self.assertAllEqual(a, b)
        resumed.train_on_batch(x[:8])  # Keras passes it a Python iterable of batches
        self.assertEqual(int(resumed.updater.step.numpy()), 19)

    def test_a_skipped_loss_scaled_update_keeps_the_period_of_the_update_count(self):
        """Under loss scaling a non-finite step makes no G update (its form trains the next
        step again): calls of whole periods then train as one step a call does."""
        x, y = data(n=32)
        runs = []
        for steps_per_execution in (1, 4):
            gan = fp.FusedPropGAN(*mixed_float16_pair(0.0), form=fp.schedules.Periodic("fused", every=2), seed=7)
            scaled = [keras.optimizers.LossScaleOptimizer(fp.optimizers.Adam(1e-2), initial_scale=2.0**24)]
            scaled.append(keras.optimizers.LossScaleOptimizer(fp.optimizers.Adam(1e-2), initial_scale=2.0**24))
            gan.compile(d_optimizer=scaled[0], g_optimizer=scaled[1], steps_per_execution=steps_per_execution)
            fit(gan, x, y, epochs=2)
            runs.append(gan)
        skipped = 8 - int(runs[0].updater.step.numpy())
        self.assertBetween(skipped, 1, 7)  # float16 gradients at a scale of 2^24 overflow
        self.assertEqual(int(runs[1].updater.step.numpy()), 8 - skipped)
        for a, b in zip(weights(runs[1]), weights(runs[0]), strict=True):
            self.assertAllEqual(a, b)

    def test_under_two_replicas_each_step_is_a_call_of_its_own_as_keras_loop_fails_there(self):
        x, _ = data(n=64)
        runs = []
        for steps_per_execution in (1, 2):
            with tu.two_cpu_strategy().scope():
                gan = build(fp.schedules.Periodic("inverse", every=2), batch_norm=False)
                gan.compile(
                    d_optimizer=fp.optimizers.Adam(1e-2),
                    g_optimizer=fp.optimizers.Adam(1e-2),
                    steps_per_execution=steps_per_execution,
                )
            gan.fit(x, batch_size=16, epochs=1, shuffle=False, verbose=0)
            runs.append(gan)
        self.assertEqual(int(runs[1].d_optimizer.iterations.numpy()), 4)
        for a, b in zip(weights(runs[1]), weights(runs[0]), strict=True):
            self.assertAllEqual(a, b)


def auto(threshold=100.0, window=2):
    """Probes every update; after each `window` probes whose mean stray is below `threshold`
    (100: always), alternates 2 updates. With window 2, 2 steps an epoch: fused, alternating, ..."""
    return fp.schedules.Auto("fused", threshold=threshold, every=1, window=window, hold=2)


class AutoTest(tu.TestCase):
    def test_fit_alternates_where_the_probes_ask_as_a_hand_made_switch_would_and_says_so_once_each(self):
        x, y = data()
        scheduled = build(auto(), "r1_augment", iter_size=2)
        printed = fit(scheduled, x, y, epochs=3)
        self.assertEqual(
            [line.split(" (")[0] for line in printed.splitlines()],
            ["G update 2: fused -> alternating", "G update 4: alternating -> fused"],
        )
        self.assertEqual(scheduled.history.history["alternated"], [0, 2, 2])
        by_hand = build("fused", "r1_augment", iter_size=2)
        for epoch, form in enumerate(["fused", "alternating", "fused"]):
            switch_by_hand(by_hand, form)
            fit(by_hand, x, y, epochs=epoch + 1, initial_epoch=epoch)
        state = {id(v) for v in scheduled.schedule_state}  # what the hand-made run has no need of
        trained = [v.numpy() for v in scheduled.variables if id(v) not in state]
        for a, b in zip(trained, weights(by_hand), strict=True):
            self.assertAllEqual(a, b)

    def test_it_decides_on_the_mean_stray_of_the_window(self):
        x, _ = data(n=8)  # one step an epoch: the logged stray is the update's
        keras.utils.set_random_seed(0)
        probed = fp.FusedPropGAN(tu.tiny_generator(), tu.tiny_discriminator(), seed=7, probe=fp.StrayProbe(every=1))
        probed.compile(d_optimizer=fp.optimizers.Adam(1e-2), g_optimizer=fp.optimizers.Adam(1e-2))
        measured = probed.fit(x, batch_size=8, epochs=2, shuffle=False, verbose=0).history["stray"]
        mean = (measured[0] + measured[1]) / 2
        for threshold, alternated in ((mean * 1.001, 1), (mean * 0.999, 0)):
            gan = build(auto(threshold))
            gan.fit(x, batch_size=8, epochs=3, shuffle=False, verbose=0)
            self.assertEqual(gan.history.history["alternated"][-1], alternated, (threshold, measured))
            self.assertAllClose(float(gan.schedule._state["mean"].numpy()), mean, rtol=1e-5)

    def test_a_run_saved_before_or_after_a_decision_resumes_as_an_uninterrupted_one(self):
        x, y = data()
        straight = build(auto(window=3), "ema_lookahead")
        fit(straight, x, y, epochs=5)  # decides at update 2 (alternates 3-4), then at 7 (8-9)
        first = build(fp.schedules.get(straight.schedule.get_config()), "ema_lookahead")
        for saved_after in (1, 2):  # mid-window; inside a stretch: one run, saved twice
            fit(first, x, y, epochs=saved_after, initial_epoch=saved_after - 1)
            path = os.path.join(self.get_temp_dir(), f"auto{saved_after}.keras")
            first.save(path)
            resumed = keras.models.load_model(path)
            fit(resumed, x, y, epochs=5, initial_epoch=saved_after)
            self.assertEqual(resumed.history.history["alternated"][-1], 4)
            for a, b in zip(weights(resumed), weights(straight), strict=True):
                self.assertAllEqual(a, b)

    def test_a_run_saved_with_a_best_window_resumes_its_drop_as_an_uninterrupted_one(self):
        # The best window since the last stretch is state: read afresh after a resume, a fall
        # from it would go unseen (best 0) and the run would train on fused.
        x, y = data()

        def schedule():
            return fp.schedules.Auto("fused", threshold=1e-6, every=1, window=1, hold=2, signal="spread", drop=0.01)

        straight = build(schedule())
        fit(straight, x, y, epochs=3)
        first = build(schedule())
        fit(first, x, y, epochs=1)
        path = os.path.join(self.get_temp_dir(), "drop.keras")
        first.save(path)
        resumed = keras.models.load_model(path)
        self.assertGreater(float(resumed.schedule._state["best"].numpy()), 0.0)
        fit(resumed, x, y, epochs=3, initial_epoch=1)
        self.assertEqual(straight.history.history["alternated"], [0, 1, 3])  # falls after the save
        self.assertEqual(resumed.history.history["alternated"], [1, 3])
        for a, b in zip(weights(resumed), weights(straight), strict=True):
            self.assertAllEqual(a, b)

    def test_after_a_warm_start_with_two_steps_a_call(self):
        x, y = data()
        schedule = fp.schedules.Warmup(fp.schedules.Auto("fused", threshold=100.0, every=1, window=2, hold=2), 2)
        gan = build(schedule, steps_per_execution=2)  # one call an epoch
        printed = fit(gan, x, y, epochs=4)
        self.assertEqual(
            [line.split(" (")[0] for line in printed.splitlines()],
            [
                "G update 2: alternating -> fused+alternating",  # the warm start ends: Auto's two forms follow
                "G update 4: fused -> alternating",
                "G update 6: alternating -> fused",
            ],
        )
        self.assertEqual(gan.history.history["alternated"], [2, 2, 4, 4])  # the warm start's are alternating's

    def test_a_warm_start_read_as_stalled_goes_on_alternating_on_g_spread(self):
        # Read from the step's logs, the warm start's updates fill Auto's window: a spread below
        # the threshold there asks for a stretch that starts where the warm start ends.
        x, y = data()
        auto_spread = fp.schedules.Auto("fused", threshold=100.0, every=1, window=2, hold=2, signal="spread")
        gan = build(fp.schedules.Warmup(auto_spread, 2), steps_per_execution=2)
        printed = fit(gan, x, y, epochs=3)
        self.assertEqual(printed.splitlines()[0].split(" (")[0], "G update 2: alternating -> fused+alternating")
        self.assertEqual(gan.history.history["alternated"], [2, 4, 6])  # never fused: every window stalls
        self.assertEqual(int(auto_spread._state["until"].numpy()), 8)

    def test_under_two_replicas_every_replica_decides_on_the_summed_probe(self):
        x, _ = data(n=16)  # one step an epoch
        with tu.two_cpu_strategy().scope():
            keras.utils.set_random_seed(0)
            probed = fp.FusedPropGAN(
                tu.tiny_generator(batch_norm=False), tu.tiny_discriminator(), seed=7, probe=fp.StrayProbe(every=1)
            )
            probed.compile(d_optimizer=fp.optimizers.Adam(1e-2), g_optimizer=fp.optimizers.Adam(1e-2))
        measured = probed.fit(x, batch_size=16, epochs=2, shuffle=False, verbose=0).history["stray"]
        mean = (measured[0] + measured[1]) / 2
        with tu.two_cpu_strategy().scope():
            two = build(auto(mean * 1.001), batch_norm=False)
        two.fit(x, batch_size=16, epochs=3, shuffle=False, verbose=0)
        self.assertEqual(two.history.history["alternated"], [0, 0, 1])
        self.assertAllClose(float(two.schedule._state["asked"].numpy()), mean, rtol=1e-5)

    def test_on_d_logit_gap_under_two_replicas_every_replica_decides_on_the_mean_gap_without_a_probe(self):
        x, _ = data(n=16)  # one step an epoch: the logged logits are the update's, averaged over replicas
        with tu.two_cpu_strategy().scope():
            fused = build("fused", batch_norm=False)
        logs = fused.fit(x, batch_size=16, epochs=2, shuffle=False, verbose=0).history
        gaps = [real - fake for real, fake in zip(logs["real_logit"], logs["fake_logit"])]
        mean = (gaps[0] + gaps[1]) / 2
        for threshold, alternated in ((mean - 1e-3 * abs(mean), [0, 0, 1]), (mean + 1e-3 * abs(mean), [0, 0, 0])):
            schedule = fp.schedules.Auto("fused", threshold=threshold, every=1, window=2, hold=2, signal="logit_gap")
            with tu.two_cpu_strategy().scope():
                two = build(schedule, batch_norm=False)
            self.assertIsNone(two.probe)  # the logits are the step's own
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                two.fit(x, batch_size=16, epochs=3, shuffle=False, verbose=0)
            self.assertEqual(two.history.history["alternated"], alternated, (threshold, gaps))
            self.assertAllClose(float(two.schedule._state["mean"].numpy()), mean, rtol=1e-5)
        self.assertRegex(printed.getvalue(), "^$")  # the second: no decision, no line
        self.assertEqual(two.history.history["real_logit"][:2], logs["real_logit"])  # the same two fused updates

    def test_on_g_spread_under_two_replicas_every_replica_decides_on_the_mean_spread(self):
        x, _ = data(n=16)  # one step an epoch: the logged spread is the update's, averaged over replicas
        with tu.two_cpu_strategy().scope():
            fused = build("fused", batch_norm=False)
        spreads = fused.fit(x, batch_size=16, epochs=2, shuffle=False, verbose=0).history["fake_spread"]
        mean = (spreads[0] + spreads[1]) / 2
        schedule = fp.schedules.Auto("fused", threshold=mean * 1.001, every=1, window=2, hold=2, signal="spread")
        with tu.two_cpu_strategy().scope():
            two = build(schedule, batch_norm=False)
        two.fit(x, batch_size=16, epochs=3, shuffle=False, verbose=0)
        self.assertEqual(two.history.history["alternated"], [0, 0, 1], spreads)
        self.assertAllClose(float(two.schedule._state["asked"].numpy()), mean, rtol=1e-5)


if __name__ == "__main__":
    tf.test.main()
