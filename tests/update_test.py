"""update: one place after the gradients (apply, loss scale, non-finite skip, divergence record)."""

import keras
import numpy as np
import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop import forms, schedules, update


def models():
    keras.utils.set_random_seed(0)
    return {"discriminator": keras.layers.Dense(1), "generator": keras.layers.Dense(2)}


def built(models):
    models["discriminator"].build((None, 2))
    models["generator"].build((None, 3))
    return models


class DivergenceRecordTest(tu.TestCase):
    def test_only_the_first_non_finite_update_is_kept(self):
        record = update.DivergenceRecord()
        self.assertIsNone(record.read())
        record.record(3, {"discriminator": tf.constant(True), "generator": tf.constant(True)})
        self.assertIsNone(record.read())
        record.record(4, {"discriminator": tf.constant(False), "generator": tf.constant(True)})
        record.record(5, {"discriminator": tf.constant(False), "generator": tf.constant(False)})
        self.assertEqual(record.read(), {"step": 4, "players": ["discriminator"]})


class UpdaterTest(tu.TestCase):
    def test_apply_moves_each_player_by_its_own_optimizer(self):
        nets = built(models())
        updater = update.Updater(nets, update.DivergenceRecord())
        updater.compile(
            schedules.get(forms.Alternating()),
            {"discriminator": keras.optimizers.SGD(0.5), "generator": keras.optimizers.SGD(0.5)},
        )
        self.assertIsNone(updater.scale_loss(("discriminator",)))
        before = [v.numpy() for v in nets["discriminator"].trainable_variables]
        grads = [tf.ones_like(v) for v in nets["discriminator"].trainable_variables]
        updater.apply({"discriminator": grads}, {"d_loss": tf.constant(1.0)})
        for value, variable in zip(before, nets["discriminator"].trainable_variables):
            self.assertAllClose(variable, value - 0.5)
        self.assertEqual(int(updater.optimizers["generator"].iterations), 0)
        self.assertIsNone(updater.record.read())

    def test_a_non_finite_gradient_under_loss_scaling_skips_every_player(self):
        nets = built(models())
        updater = update.Updater(nets, update.DivergenceRecord())
        lso = lambda: keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.1), initial_scale=8.0)
        updater.compile(schedules.get("fused"), {"discriminator": lso(), "generator": lso()})
        self.assertAllClose(updater.scale_loss(("discriminator", "generator"))(tf.constant(2.0)), 16.0)
        before = [v.numpy() for m in nets.values() for v in m.trainable_variables]
        grads = {p: [tf.ones_like(v) for v in m.trainable_variables] for p, m in nets.items()}
        grads["generator"][0] = grads["generator"][0] * np.nan
        updater.apply(grads, {"d_loss": tf.constant(1.0), "g_loss": tf.constant(1.0)})
        for value, variable in zip(before, [v for m in nets.values() for v in m.trainable_variables]):
            self.assertAllEqual(variable, value)
        self.assertEqual([float(o.dynamic_scale) for o in updater.optimizers.values()], [4.0, 4.0])
        self.assertIsNone(updater.record.read())  # losses finite: loss scaling handles it

    def test_one_loss_scale_for_a_shared_backward_pass(self):
        lso = lambda scale=8.0: keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.1), initial_scale=scale)
        update.check_loss_scales(forms.Alternating(), lso(), keras.optimizers.SGD(0.1))  # two passes: fine
        with self.assertRaisesRegex(ValueError, "wrap both optimizers in keras.optimizers.LossScaleOptimizer"):
            update.check_loss_scales(forms.get("inverse"), lso(), keras.optimizers.SGD(0.1))
        with self.assertRaisesRegex(ValueError, r"same initial_scale.*Received: D \(8.0, 2000\), G \(4.0, 2000\)"):
            update.check_loss_scales(forms.get("simultaneous"), lso(), lso(4.0))


if __name__ == "__main__":
    tf.test.main()
