"""training_plan: a config's form fields read once into the schedule, G's rate and the fields
that change what a run trains."""

import tensorflow as tf

import tf_fusedprop as fp
from tests import testing_utils as tu
from tf_fusedprop.experiment import config as fp_config
from tf_fusedprop.experiment import training_plan


class PlanTest(tu.TestCase):
    def test_a_warm_start_and_a_periodic_mix_with_gs_rate_after_the_start(self):
        config = tu.tiny_config("ring8")
        config.update(warmup=4, alternate_every=3, n_dis=2, warmup_g_lr_scale=3.0)
        plan = training_plan.plan(config)
        alternating = fp.Alternating(n_dis=2)
        expected = fp.schedules.Warmup(
            fp.schedules.Periodic(fp.SinglePass("fused", n_dis=2), every=3, other=alternating), 4, alternating
        )
        self.assertEqual(repr(plan.form), repr(expected))
        rate = plan.g_learning_rate()
        self.assertAllClose([rate(0), rate(3), rate(4), rate(99)], [config.g_lr] * 2 + [3 * config.g_lr] * 2)
        off = training_plan.SCHEDULING_FIELDS["auto"]
        self.assertEqual(plan.fields, {"warmup": 4, "alternate_every": 3, "warmup_g_lr_scale": 3.0, "auto": off})
        self.assertEqual(plan.counts(12), {"alternating": 7, "fused": 5})  # 4 + updates 5, 8 and 11
        self.assertEqual(plan.fitted_steps_per_execution(steps_per_epoch=8, wanted=4), 4)  # a period follows any call

    def test_a_form_alone_and_the_rate_scale_without_a_warm_start(self):
        config = tu.tiny_config("ring8")
        config.warmup, config.warmup_g_lr_scale = 0, 3.0  # no warm start: nothing to scale after
        plan = training_plan.plan(config)
        self.assertEqual((repr(plan.form), plan.g_learning_rate()), (repr(fp.SinglePass("fused")), config.g_lr))
        self.assertEqual(plan.fields, training_plan.SCHEDULING_FIELDS)
        config.warmup = 6
        self.assertEqual(training_plan.plan(config).fitted_steps_per_execution(steps_per_epoch=12, wanted=4), 3)

    def test_alternating_mixed_with_alternating_is_alternating_but_its_fields_are_checked(self):
        config = tu.tiny_config("ring8")
        config.update(form="alternating", warmup=5, alternate_every=2, warmup_g_lr_scale=3.0)
        plan = training_plan.plan(config)
        self.assertEqual((repr(plan.form), plan.g_learning_rate()), ("Alternating(n_dis=1)", config.g_lr))
        self.assertEqual(plan.fields, training_plan.SCHEDULING_FIELDS)
        self.assertEqual(plan.fitted_steps_per_execution(steps_per_epoch=10, wanted=10), 10)  # nothing switches
        fp_config.validate(config.copy_and_resolve_references())  # no alignment asked of alternating
        config.alternate_every = 1
        with self.assertRaisesRegex(ValueError, "every must be at least 2"):
            training_plan.plan(config)

    def test_auto_alternates_where_the_probes_say_after_a_warm_start_and_is_no_periodic_mix(self):
        config = tu.tiny_config("ring8")
        config.update(warmup=4, steps_per_execution=5)
        config.auto.update(threshold=0.4, hold=50)
        plan = training_plan.plan(config)
        auto = {
            "threshold": 0.4,
            "every": 10,
            "window": 10,
            "hold": 50,
            "peak": None,
            "peak_windows": 1,
            "signal": "stray",
            "drop": None,
        }
        self.assertEqual(plan.fields["auto"], auto)
        self.assertEqual(plan.schedule.form.get_config(), fp.schedules.Auto("fused", **auto).get_config())
        self.assertEqual(plan.fitted_steps_per_execution(steps_per_epoch=20, wanted=5), 4)  # the warm start's
        config.alternate_every = 4
        with self.assertRaisesRegex(ValueError, "alternate_every and auto.threshold are two schedules"):
            training_plan.plan(config)
        config.alternate_every, config.auto.threshold = 0, -1.0
        with self.assertRaisesRegex(ValueError, "threshold must be a positive number"):
            training_plan.plan(config)

    def test_a_record_from_before_the_schedules_reads_as_none(self):
        plan = training_plan.plan({"form": "fused", "n_dis": 1, "g_lr": 2e-4})
        self.assertEqual((plan.warmup, plan.fields), (0, training_plan.SCHEDULING_FIELDS))
        # An Auto run recorded before `peak_windows` existed stopped at its first window at peak;
        # one before `drop` had none.
        auto = {"threshold": 0.45, "every": 10, "window": 10, "hold": 100, "peak": 0.7}
        plan = training_plan.plan({"form": "fused", "n_dis": 1, "g_lr": 2e-4, "auto": auto})
        self.assertEqual(plan.fields["auto"], {**auto, "peak_windows": 1, "signal": "stray", "drop": None})
        self.assertEqual(plan.schedule.peak_windows, 1)


if __name__ == "__main__":
    tf.test.main()
