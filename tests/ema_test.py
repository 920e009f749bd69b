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

    def test_refusals(self):
        with self.assertRaisesRegex(ValueError, r"decay must be in \[0, 1\)"):
            EMA(decay=1.0)
        with self.assertRaisesRegex(ValueError, "start must be an integer >= 0. Received: start=-1"):
            EMA(decay=0.5, start=-1)
