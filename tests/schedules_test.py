"""schedules: which form trains each G update, the switches' alignment, counts and `get`."""

import tensorflow as tf
from absl.testing import parameterized

from tests import testing_utils as tu
from tf_fusedprop import forms, schedules


class ScheduleTest(tu.TestCase):
    def test_warmup_trains_its_start_then_its_form_and_names_the_switch_once(self):
        schedule = schedules.Warmup("fused", updates=3, start=forms.Alternating(n_dis=2))
        self.assertEqual([schedule.form_at(u).name for u in range(5)], ["alternating"] * 3 + ["fused"] * 2)
        self.assertEqual(
            [schedule.switch_note(u) for u in range(5)], [None] * 3 + ["G update 3: alternating -> fused", None]
        )
        self.assertEqual([f.name for f in schedule.forms], ["alternating", "fused"])
        self.assertEqual(schedule.name, "alternating+fused")
        no_start = schedules.Warmup("inverse", updates=0)
        self.assertEqual(
            (no_start.forms, no_start.form_at(0), no_start.switch_note(0)),
            (no_start.form.forms, no_start.form.form, None),
        )
        self.assertIsNone(schedule.misaligned(3))
        self.assertRegex(schedule.misaligned(2), r"switches forms at G update 3, which steps_per_execution=2 does not")

    def test_periodic_trains_the_other_form_on_the_last_update_of_each_period(self):
        schedule = schedules.Periodic("adaptive", every=3)
        self.assertEqual([schedule.form_at(u).name for u in range(6)], ["adaptive", "adaptive", "alternating"] * 2)
        # It repeats a period from update 0, so a train function of any length follows it.
        self.assertEqual(schedule.repeats, (0, (schedule.form, schedule.form, schedule.other)))
        self.assertEqual([schedule.misaligned(n) for n in (1, 3, 5)], [None] * 3)
        nested = schedules.Warmup(schedule, updates=7)
        self.assertEqual([nested.form_at(u).name for u in (6, 7, 8)], ["alternating", "adaptive", "alternating"])
        self.assertEqual(nested.switch_note(7), "G update 7: alternating -> adaptive+alternating")
        self.assertEqual(nested.repeats, (7, schedule.repeats[1]))  # from the switch, by the update count
        self.assertIsNone(nested.misaligned(3))  # the switch need not start a call
        self.assertIsNone(schedules.Warmup("fused", updates=7).repeats)

    @parameterized.parameters(
        schedules.Constant("fused"),
        schedules.Warmup("fused", updates=5),
        schedules.Warmup("fused", updates=0),
        schedules.Periodic("fused", every=4, other="simultaneous"),
        schedules.Warmup(schedules.Periodic("adaptive", every=3), updates=7),
        schedules.Warmup(schedules.Periodic("adaptive", every=3), updates=6),
    )
    def test_counts_are_form_at_counted(self, schedule):
        for start, stop in ((0, 20), (0, 7), (5, 17), (9, 9), (6, 1000)):
            counted = {}
            for update in range(start, stop):
                name = schedule.form_at(update).name
                counted[name] = counted.get(name, 0) + 1
            self.assertEqual({k: v for k, v in schedule.counts(stop, start).items() if v}, counted, (start, stop))

    @parameterized.parameters(
        schedules.Warmup("fused", updates=500),
        schedules.Warmup(forms.SinglePass("inverse", n_dis=2), updates=10, start=forms.Alternating(n_dis=5)),
        schedules.Periodic("fused", every=4, other="simultaneous"),
        schedules.Warmup(schedules.Periodic("fused", every=2), updates=4),
        schedules.Auto("inverse", threshold=0.3, every=5, window=4, hold=50, other=forms.Alternating(n_dis=2)),
        schedules.Warmup(schedules.Auto("fused"), updates=100),
        schedules.Auto("fused", threshold=0.45, peak=0.7, peak_windows=3),
        schedules.Warmup(schedules.Auto("fused", threshold=4.0, signal="logit_gap"), updates=100),
        schedules.Warmup(schedules.Auto("fused", threshold=0.05, signal="coverage", drop=0.25), updates=100),
    )
    def test_configs_round_trip(self, schedule):
        again = schedules.get(schedule.get_config())
        self.assertEqual(
            (type(again), again.get_config(), repr(again)), (type(schedule), schedule.get_config(), repr(schedule))
        )
        self.assertIs(schedules.get(schedule), schedule)

    def test_auto_decides_on_full_windows_of_probes_and_not_after_a_window_at_peak(self):
        for peak, until in ((None, 42), (0.8, 12)):
            auto = schedules.Auto("fused", threshold=0.5, every=10, window=2, hold=10, peak=peak)
            auto.attach()
            state = auto._state
            probes = ((0, 0.4, 1), (5, 9.0, 0), (1, 0.4, 1), (9, float("nan"), 1), (20, 0.9, 1), (21, 0.9, 1))
            for update, stray, probed in probes:  # not probed, or no finite reading: left out
                auto.observe(tf.constant(stray), tf.constant(float(probed)), tf.constant(update, tf.int64))
            # Updates 0 and 1 (mean 0.4): updates 2-11 alternate; 20 and 21 (0.9): none.
            self.assertEqual(int(state["until"].numpy()), 12)
            self.assertEqual(int(state["at_peak"].numpy()), 0 if peak is None else 1)
            auto.observe(tf.constant(0.3), tf.constant(1.0), tf.constant(30, tf.int64))
            self.assertEqual((int(state["until"].numpy()), int(state["count"].numpy())), (12, 1))  # half a window
            auto.observe(tf.constant(0.3), tf.constant(1.0), tf.constant(31, tf.int64))
            self.assertEqual(int(state["until"].numpy()), until, peak)  # a plateau after a window at peak
            self.assertEqual((auto.form_at(until - 1).name, auto.form_at(until).name), ("alternating", "fused"))
            self.assertAllClose(state["asked"].numpy(), 0.3 if peak is None else 0.4)  # the mean that asked
            self.assertEqual(auto.trained(auto.other, tf.constant(1, tf.int64)), {"alternated": 1})
            self.assertEqual(auto.trained(auto.form, tf.constant(1, tf.int64)), {"alternated": 1})
            self.assertEqual(auto.trained(auto.other, tf.constant(0, tf.int64)), {"alternated": 1})  # skipped

    def test_auto_stops_alternating_after_peak_windows_in_a_row_at_peak_and_says_so_once(self):
        auto = schedules.Auto("fused", threshold=0.5, every=1, window=1, hold=10, peak=0.8, peak_windows=2)
        auto.attach()
        state = auto._state
        self.assertIsNone(auto.switch_note(0))
        # One window at peak, then a low one: a blip, so it still alternates.
        for update, stray in ((0, 0.9), (1, 0.3)):
            auto.observe(tf.constant(stray), tf.constant(1.0), tf.constant(update, tf.int64))
        self.assertEqual((int(state["until"].numpy()), int(state["at_peak"].numpy())), (12, 0))
        # Two in a row with one between them in [threshold, peak): the row starts again.
        for update, stray in ((20, 0.9), (21, 0.6), (22, 0.9)):
            auto.observe(tf.constant(stray), tf.constant(1.0), tf.constant(update, tf.int64))
        self.assertEqual(int(state["at_peak"].numpy()), 1)
        self.assertIsNone(auto.switch_note(23))
        auto.observe(tf.constant(0.85), tf.constant(1.0), tf.constant(23, tf.int64))
        self.assertEqual(
            auto.switch_note(24), "G update 24: fused from here on (2 windows in a row of mean stray >= 0.8)"
        )
        for update, stray in ((24, 0.1), (25, 0.6), (26, 0.1)):  # a plateau now: neither asks nor resets
            auto.observe(tf.constant(stray), tf.constant(1.0), tf.constant(update, tf.int64))
        self.assertEqual((int(state["until"].numpy()), int(state["at_peak"].numpy())), (12, 2))
        self.assertEqual((auto.switch_note(27), auto.form_at(27).name), (None, "fused"))
        resumed = schedules.get(auto.get_config())  # a resumed run does not say it again
        resumed.attach()
        resumed._state["at_peak"].assign(2)
        self.assertIsNone(resumed.switch_note(27))

    def test_auto_on_d_logit_gap_alternates_where_the_windows_mean_is_above_threshold(self):
        auto = schedules.Auto("fused", threshold=4.0, every=2, window=2, hold=10, signal="logit_gap")
        self.assertIsNone(auto.probe_every)  # no probe: the step's own logs
        auto.attach()
        self.assertIsNone(auto.switch_note(0))
        state = auto._state

        def logs(real, fake):
            return {"real_logit": tf.constant(real), "fake_logit": tf.constant(fake), "d_loss": tf.constant(1.0)}

        auto.observe(tf.constant(100.0), tf.constant(1.0), tf.constant(0, tf.int64))  # a user's probe: not read
        auto.observe_logs(auto.form, logs(2.0, -1.0), tf.constant(0, tf.int64))  # gap 3
        auto.observe_logs(auto.form, logs(9.0, -9.0), tf.constant(1, tf.int64))  # not every 2nd: not read
        self.assertEqual(int(state["count"].numpy()), 1)
        auto.observe_logs(auto.form, logs(4.0, -1.5), tf.constant(2, tf.int64))  # gap 5.5: mean 4.25 > 4
        self.assertEqual((int(state["until"].numpy()), int(state["count"].numpy())), (13, 0))
        self.assertEqual(
            auto.switch_note(3), "G update 3: fused -> alternating (mean logit gap 4.250 > 4 over the last 2 readings)"
        )
        for update in (4, 6):  # alternating's updates are read: D still far ahead, the stretch goes on
            auto.observe_logs(auto.other, logs(5.0, -1.0), tf.constant(update, tf.int64))
        self.assertEqual(int(state["until"].numpy()), 17)
        self.assertEqual(
            (auto.switch_note(16), auto.switch_note(17)), (None, "G update 17: alternating -> fused (reading on)")
        )
        for update, (real, fake) in ((14, (2.0, -1.0)), (16, (2.5, -1.0))):  # mean 3.25: not above
            auto.observe_logs(auto.form, logs(real, fake), tf.constant(update, tf.int64))
        self.assertEqual(int(state["until"].numpy()), 17)
        again = schedules.get(auto.get_config())
        self.assertEqual((again.signal, again.probe_every), ("logit_gap", None))

    def test_auto_on_d_logit_gap_stops_for_good_once_a_window_reads_peak_or_less(self):
        auto = schedules.Auto("fused", threshold=4.0, every=1, window=1, hold=10, peak=2.0, signal="logit_gap")
        auto.attach()
        self.assertIsNone(auto.switch_note(0))
        for update, gap in ((0, 5.0), (1, 3.0)):  # D far ahead: alternates; 3 is not settled yet
            auto.observe_logs(auto.form, {"real_logit": tf.constant(gap), "fake_logit": tf.constant(0.0)}, update)
        self.assertEqual((int(auto._state["until"].numpy()), int(auto._state["at_peak"].numpy())), (11, 0))
        auto.observe_logs(auto.other, {"real_logit": tf.constant(1.5), "fake_logit": tf.constant(0.0)}, 2)
        self.assertEqual(int(auto._state["until"].numpy()), 3)  # settled inside the stretch: it ends there
        self.assertEqual(
            auto.switch_note(3), "G update 3: fused from here on (1 window in a row of mean logit gap <= 2)"
        )
        auto.observe_logs(auto.form, {"real_logit": tf.constant(9.0), "fake_logit": tf.constant(0.0)}, 20)
        self.assertEqual(int(auto._state["until"].numpy()), 3)  # a late rise: D sharpening, not a stall

    def test_auto_on_g_spread_alternates_where_the_windows_mean_is_below_threshold(self):
        auto = schedules.Auto("fused", threshold=0.25, every=1, window=2, hold=10, peak=0.5, signal="spread")
        self.assertIsNone(auto.probe_every)  # no probe: the step's own logs
        auto.attach()
        self.assertIsNone(auto.switch_note(0))
        for update, spread in ((0, 0.375), (1, 0.0625)):  # mean 0.21875 < 0.25: G draws nearly one sample
            auto.observe_logs(auto.form, {"fake_spread": tf.constant(spread)}, tf.constant(update, tf.int64))
        self.assertEqual(int(auto._state["until"].numpy()), 12)
        self.assertEqual(
            auto.switch_note(2), "G update 2: fused -> alternating (mean spread 0.219 < 0.25 over the last 2 readings)"
        )
        for update in (2, 3):  # alternating spreads G out: a window at peak ends the stretch for good
            auto.observe_logs(auto.other, {"fake_spread": tf.constant(0.625)}, tf.constant(update, tf.int64))
        self.assertEqual(int(auto._state["until"].numpy()), 4)
        self.assertEqual(
            auto.switch_note(4), "G update 4: fused from here on (1 window in a row of mean spread >= 0.5)"
        )
        self.assertEqual(schedules.get(auto.get_config()).signal, "spread")

    def test_auto_on_g_coverage_follows_the_coverage_not_the_spread(self):
        auto = schedules.Auto("fused", threshold=0.85, every=1, window=2, hold=10, signal="coverage")
        self.assertIsNone(auto.probe_every)
        auto.attach()
        self.assertIsNone(auto.switch_note(0))
        for update, coverage in ((0, 0.75), (1, 0.875)):  # mean 0.8125 < 0.85: G left modes, drawing widely
            logs = {"fake_spread": tf.constant(0.625), "fake_coverage": tf.constant(coverage)}
            auto.observe_logs(auto.form, logs, tf.constant(update, tf.int64))
        self.assertEqual(int(auto._state["until"].numpy()), 12)
        self.assertEqual(
            auto.switch_note(2),
            "G update 2: fused -> alternating (mean coverage 0.812 < 0.85 over the last 2 readings)",
        )
        self.assertEqual(schedules.get(auto.get_config()).signal, "coverage")

    def test_auto_with_drop_alternates_where_a_window_falls_from_the_best_since_the_last_stretch(self):
        auto = schedules.Auto("fused", threshold=0.1, every=1, window=1, hold=10, signal="coverage", drop=0.25)
        self.assertEqual(len(auto.attach()), 9)  # the best window and the limit that asked, in the checkpoint
        self.assertEqual(len(schedules.Auto("fused").attach()), 7)  # without drop: as workdirs before it

        def read(update, coverage):
            logs = {"fake_spread": tf.constant(0.5), "fake_coverage": tf.constant(coverage)}
            auto.observe_logs(auto.form, logs, tf.constant(update, tf.int64))
            return int(auto._state["until"].numpy())

        self.assertIsNone(auto.switch_note(0))
        # Rising, then 0.65 (above 0.75 x 0.8 = 0.6): no stall, though far above threshold 0.1 either way.
        self.assertEqual([read(u, c) for u, c in enumerate((0.5, 0.8, 0.65))], [0, 0, 0])
        self.assertEqual(read(3, 0.55), 14)  # below 0.6: modes lost since the best
        self.assertEqual(
            auto.switch_note(4),
            "G update 4: fused -> alternating (mean coverage 0.550 < 0.600, 0.75 x the best window since the "
            "last stretch over the last 1 readings)",
        )
        self.assertEqual(read(4, 0.45), 14)  # the asking window is the new best: 0.45 > 0.75 x 0.55
        self.assertEqual(read(5, 0.4), 16)  # < 0.4125: still falling, the stretch goes on
        self.assertEqual(read(6, 0.05), 17)  # below threshold, whatever the best
        self.assertEqual(schedules.get(auto.get_config()).drop, 0.25)

    def test_auto_says_each_change_once_with_the_mean_that_asked_and_needs_hold_of_a_call(self):
        auto = schedules.Auto("fused", threshold=0.5, every=1, window=2, hold=10)
        auto.attach()
        self.assertIsNone(auto.switch_note(0))
        for update in (0, 1):
            auto.observe(tf.constant(0.4), tf.constant(1.0), tf.constant(update, tf.int64))
        self.assertEqual(
            [auto.switch_note(u) for u in (2, 3, 12, 13)],
            [
                "G update 2: fused -> alternating (mean stray 0.400 < 0.5 over the last 2 probes)",
                None,
                "G update 12: alternating -> fused (probing again)",
                None,
            ],
        )
        resumed = schedules.get(auto.get_config())
        resumed.attach()
        resumed._state["until"].assign(12)
        self.assertRegex(resumed.switch_note(10), r"^G update 10: alternating \(resumed inside a stretch")
        self.assertIsNone(auto.misaligned(10))
        self.assertRegex(auto.misaligned(20), r"hold=10 G updates after a decision, fewer than steps_per_execution=20")

    def test_a_form_is_a_constant_schedule(self):
        form = forms.SinglePass("inverse", n_dis=2)
        constant = schedules.get(form)
        self.assertIsInstance(constant, schedules.Constant)
        self.assertEqual((constant.forms, constant.form_at(7), constant.counts(10)), ((form,), form, {"inverse": 10}))
        self.assertEqual((constant.get_config(), repr(constant)), (form.get_config(), repr(form)))
        self.assertEqual(schedules.get("alternating").form.name, "alternating")
        self.assertEqual(schedules.get({"name": "fused", "n_dis": 3}).form.n_dis, 3)

    def test_every_form_of_a_schedule_is_checked(self):
        generator, discriminator = tu.tiny_pair()
        with self.assertRaisesRegex(ValueError, "hinge loss does not support form='fused'"):
            schedules.Warmup("fused", updates=2).check("hinge", generator, discriminator)
        with self.assertRaisesRegex(ValueError, "hinge loss does not support form='fused'"):
            schedules.Periodic("fused").check_loss("hinge")

    @parameterized.parameters(
        (lambda: schedules.Warmup("fused", updates=-1), "updates must be a non-negative integer"),
        (lambda: schedules.Warmup("fused", start=schedules.Periodic("fused")), "A warm start is one form"),
        (lambda: schedules.Periodic(schedules.Warmup("fused")), "Periodic mixes two forms"),
        (lambda: schedules.Periodic("fused", every=1), "every must be at least 2"),
        (lambda: schedules.get("warmup"), r"form='warmup' is a schedule of forms: construct it \(.*schedules.Warmup"),
        (lambda: schedules.Warmup("fast"), "Unknown training form. Received: form='fast'"),
        (lambda: schedules.Auto("fused", threshold=0), "threshold must be a positive number. Received: threshold=0"),
        (lambda: schedules.Auto("fused", hold=0), "hold must be a positive integer"),
        (lambda: schedules.Auto("fused", peak=0.7, peak_windows=0), "peak_windows must be a positive integer"),
        (lambda: schedules.Auto("fused", signal="loss"), r"Unknown signal for Auto; .* Received: signal='loss'"),
        (lambda: schedules.Auto("fused", threshold=4.0, peak=5.0, signal="logit_gap"), "peak must be .* below thresh"),
        (lambda: schedules.Auto("fused", threshold=float("nan"), signal="logit_gap"), "threshold must be a finite"),
        (lambda: schedules.Auto("fused", threshold=0.5, peak=0.5), r"peak must be None or a number above threshold"),
        (lambda: schedules.Auto("fused", threshold=-0.1, signal="spread"), "threshold must be a positive number"),
        (lambda: schedules.Auto("alternating"), "Auto alternates a simultaneous form .* Received: form='alternating'"),
        (lambda: schedules.Auto("fused", other="inverse"), "updates one player at a time. Received: .*other='inverse'"),
        (lambda: schedules.Auto(schedules.Periodic("fused")), "Auto switches between two forms"),
        (lambda: schedules.Auto("fused").counts(10), "depend on the run: read its `alternated` log"),
        (lambda: schedules.Auto("fused", drop=1.0), r"drop must be None or a number in \(0, 1\).* drop=1.0"),
        (lambda: schedules.Auto("fused", threshold=4.0, drop=0.2, signal="logit_gap"), "whose stall is low"),
    )
    def test_refusals_are_one_line(self, make, message):
        with self.assertRaisesRegex(ValueError, message):
            make()


if __name__ == "__main__":
    tf.test.main()
