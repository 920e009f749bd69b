"""forms: the forms as objects, their phases, their checks, and `get`."""

import keras
import tensorflow as tf
from absl.testing import parameterized

import tf_fusedprop as fp
from configs import base
from tests import testing_utils as tu
from tf_fusedprop import forms, losses, steps


class GetTest(tu.TestCase):
    @parameterized.parameters(
        ("alternating", forms.Alternating), ("simultaneous", forms.Simultaneous), ("adaptive", forms.SinglePass)
    )
    def test_names_give_forms_and_configs_round_trip(self, name, kind):
        form = forms.get(name)
        self.assertIsInstance(form, kind)
        self.assertEqual(form.name, name)
        again = forms.get(form.get_config())
        self.assertEqual((type(again), again.get_config()), (kind, form.get_config()))
        self.assertIs(forms.get(form), form)

    def test_refusals(self):
        with self.assertRaisesRegex(ValueError, "Unknown training form. Received: form='fast'. Valid forms: fused"):
            forms.get("fast")
        with self.assertRaisesRegex(ValueError, "Unknown single-pass rule. Received: rule='alternating'"):
            forms.SinglePass("alternating")
        with self.assertRaisesRegex(ValueError, "n_dis must be a positive integer. Received: n_dis=0"):
            forms.Alternating(n_dis=0)
        with self.assertRaisesRegex(ValueError, "Pass the arguments to the form's constructor"):
            forms.get(forms.Alternating(), n_dis=2)


class PhasesTest(tu.TestCase):
    def test_what_each_form_updates_phase_by_phase(self):
        players = {
            "alternating": [("discriminator",)] * 3 + [("generator",)],
            "fused": [("discriminator", "generator")],
            "simultaneous": [("discriminator", "generator")],
        }
        for name, expected in players.items():
            form = forms.get(name, n_dis=3) if name == "alternating" else forms.get(name)
            self.assertEqual([phase.players for phase in form.phases], expected)
        self.assertEqual(forms.Alternating().phases[-1].logs, ("g_loss",))
        self.assertEqual(
            set(forms.get("inverse").phases[0].logs),
            {"d_loss", "g_loss", "real_logit", "fake_logit", "fake_spread", "fake_coverage", "real_sign"},
        )
        self.assertFalse(forms.Alternating().shares_loss_scale)
        self.assertTrue(forms.get("fused").shares_loss_scale)

    def test_a_phase_returns_gradients_of_whom_it_updates(self):
        generator, discriminator = tu.tiny_pair()
        real, z = tu.tiny_batch()
        phase = forms.get("fused").phases[0]
        grads, logs = phase.gradients(generator, discriminator, fp.Batch(real, z), fp.losses.get("least_squares"), None)
        self.assertEqual(set(grads), {"discriminator", "generator"})
        self.assertLen(grads["generator"], len(generator.trainable_variables))
        self.assertEqual(set(logs), set(phase.logs))


class NameCheckTest(tu.TestCase):
    def test_hinge_refuses_fused(self):
        hinge = losses.get("hinge")
        self.assertFalse(forms.supports(hinge, "fused"))
        self.assertTrue(forms.supports(hinge, "inverse"))
        with self.assertRaisesRegex(ValueError, "hinge loss does not support form='fused'. Use one of: inverse"):
            forms.check_form("hinge", "fused")

    def test_unknown_form(self):
        with self.assertRaisesRegex(ValueError, "Received: form='fast'"):
            forms.check_form("minimax", "fast")
        self.assertFalse(forms.supports("minimax", "fast"))

    def test_one_table_names_every_form(self):
        self.assertEqual(forms.FORMS, ("fused", "inverse", "adaptive", "simultaneous", "alternating"))
        self.assertEqual(fp.FORMS, forms.FORMS)
        self.assertEqual([forms.get(name).name for name in forms.FORMS], list(forms.FORMS))
        self.assertEqual(forms.SINGLE_PASS_FORMS, tuple(rule.name for rule in steps.SINGLE_PASS_RULES))
        self.assertEqual(forms.SIMULTANEOUS_FORMS, ("fused", "inverse", "adaptive", "simultaneous"))
        self.assertEqual(base.ALL_FORMS, forms.FORMS)

    def test_a_form_keeps_its_rule_and_builds_its_phases_once(self):
        form = forms.SinglePass("adaptive", n_dis=2)
        self.assertIs(form.rule, steps.ADAPTIVE)
        self.assertIs(form.phases[-1], form.phases[-1])
        self.assertIs(steps.ADAPTIVE.for_loss(losses.get("hinge")), steps.INVERSE)
        self.assertIs(steps.FUSED.for_loss(losses.get("hinge")), steps.FUSED)  # refused before it is asked
        self.assertIs(steps.ADAPTIVE.for_loss(losses.get("minimax")), steps.ADAPTIVE)


class CheckTest(tu.TestCase):
    def test_check_returns_the_loss_and_refuses_what_the_form_cannot_train(self):
        generator, discriminator = tu.tiny_pair()
        inputs = tf.random.normal([4, tu.LATENT])
        self.assertEqual(forms.get("adaptive").check("hinge", generator, discriminator, inputs).name, "hinge")
        coupled = tu.tiny_discriminator(extra=[keras.layers.Lambda(lambda x: x - tf.reduce_mean(x, axis=0))])
        with self.assertRaisesRegex(ValueError, "mixes them"):
            forms.get("inverse").check("nonsaturating", generator, coupled, inputs)
        forms.SinglePass("inverse", check_independence=False).check("nonsaturating", generator, coupled, inputs)
        self.assertEqual(repr(forms.SinglePass("inverse")), "SinglePass('inverse', n_dis=1, check_independence=True)")
        self.assertEqual(repr(forms.Alternating(n_dis=2)), "Alternating(n_dis=2)")


if __name__ == "__main__":
    tf.test.main()
