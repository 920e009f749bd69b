"""EMA: a separate copy of a model following its weights."""

import keras
import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop.ema import EMA


class EMATest(tu.TestCase):
    def test_update_rule_start_and_statistics(self):
        model = tu.tiny_generator(batch_norm=True)
        ema = EMA(decay=0.9, start=1)
        ema.attach(model)
        self.assertIsNot(ema.model, model)
        expected = [w.numpy() for w in model.trainable_variables]
        for step in (1, 2, 3):
            for w in model.trainable_variables:
                w.assign(w + 1.0)
            model(tf.random.normal([4, tu.LATENT]), training=True)  # moves BatchNorm's statistics
            ema.update(tf.constant(step, tf.int64))
            decay = 0.0 if step <= 1 else 0.9
            expected = [decay * e + (1 - decay) * w.numpy() for e, w in zip(expected, model.trainable_variables)]
            for average, want in zip(ema.model.trainable_variables, expected):
                self.assertAllClose(average, want, rtol=1e-6)
            for copy, value in zip(ema.model.non_trainable_variables, model.non_trainable_variables):
                self.assertAllEqual(copy, value)
        self.assertNotAllClose(ema.model.trainable_variables[0], model.trainable_variables[0])

    def test_subclassed_model(self):
        class Square(keras.Model):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                self.dense = keras.layers.Dense(3)

            def call(self, x):
                return self.dense(x) ** 2

        model = Square()
        x = tf.ones([1, 2])
        model(x)
        ema = EMA(decay=0.5)
        ema.attach(model, x)
        self.assertAllClose(ema.model(x), model(x))

    def test_rampup_bounds_the_half_life_by_a_fraction_of_the_updates_since_start(self):
        ema = EMA(decay=0.999, start=100, rampup=0.05)
        self.assertAllClose(ema.half_life(), 692.80, atol=0.01)
        steps = tf.constant([50, 100, 101, 1100, 13_956, 20_000], tf.int64)
        # half-life min(692.8, 0.05 x (step - 100)): 0, 0, 0.05, 50, 692.8, 692.8 updates
        expected = [0.0, 0.0, 0.5**20, 0.5 ** (1 / 50), 0.999, 0.999]
        self.assertAllClose(ema.decay_at(steps), expected, rtol=1e-5, atol=1e-7)
        self.assertAllClose(EMA(decay=0.999, start=100).decay_at(steps), [0, 0, 0.999, 0.999, 0.999, 0.999])
        self.assertAllClose(EMA(decay=0.0, rampup=0.05).decay_at(steps), [0.0] * 6)
        again = EMA.from_config(ema.get_config())
        self.assertEqual((repr(again), again.rampup), ("EMA(decay=0.999, start=100, rampup=0.05)", 0.05))
        self.assertEqual(EMA(0.99).get_config(), {"decay": 0.99, "start": 0})  # as before the option

    def test_refusals(self):
        with self.assertRaisesRegex(ValueError, r"rampup must be None or in \(0, 1\]. Received: rampup=0"):
            EMA(rampup=0)
        with self.assertRaisesRegex(ValueError, r"decay must be in \[0, 1\)"):
            EMA(decay=1.0)
        with self.assertRaisesRegex(ValueError, "start must be an integer >= 0. Received: start=-1"):
            EMA(decay=0.5, start=-1)
