"""The fused Adam: the same updates as Keras's Adam, in every setting the package trains with."""

import contextlib

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from tests import testing_utils as tu
from tf_fusedprop import optimizers


def model_and_data(dtype="float32", embedding=True):
    """A small model (an embedding, whose gradients are sparse, then two Dense) and its data."""
    keras.utils.set_random_seed(3)
    if embedding:
        inputs = keras.Input((2,), dtype="int32")
        x = keras.layers.Flatten(dtype=dtype)(keras.layers.Embedding(5, 3, dtype=dtype)(inputs))
        data = tf.constant(np.random.default_rng(0).integers(0, 5, (8, 2)), tf.int32)
    else:
        x = inputs = keras.Input((6,))
        data = tf.constant(np.random.default_rng(0).normal(size=(8, 6)), tf.float32)
    x = keras.layers.Dense(4, activation="tanh", dtype=dtype)(x)
    return keras.Model(inputs, keras.layers.Dense(1, dtype=dtype)(x)), data


def train(model, optimizer, data, steps=4, strategy=None):
    """`steps` updates of sum(model(data)^2) in one tf.function; under `strategy` each replica
    takes half the batch and the optimizer sums their gradients."""
    strategy = strategy or tf.distribute.get_strategy()

    def replica(rows):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.cast(model(rows), tf.float32) ** 2)
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))

    @tf.function
    def step():
        if strategy.num_replicas_in_sync == 1:
            replica(data)
        else:
            halves = strategy.experimental_distribute_values_from_function(
                lambda ctx: data[4 * ctx.replica_id_in_sync_group :][:4]
            )
            strategy.run(replica, (halves,))

    for _ in range(steps):
        step()
    return [v.numpy() for v in model.trainable_variables]


class AdamTest(tu.TestCase):
    @parameterized.parameters(
        {"beta_1": 0.5, "beta_2": 0.999},
        {"beta_1": 0.0, "beta_2": 0.9, "epsilon": 1e-3},
        {"amsgrad": True},
        {"weight_decay": 0.1, "clipnorm": 0.5},
        {"use_ema": True, "ema_overwrite_frequency": 2},
    )
    def test_same_updates_as_keras_adam(self, **options):
        results = []
        for cls in (optimizers.Adam, keras.optimizers.Adam):
            model, data = model_and_data()
            results.append(train(model, cls(0.05, **options), data))
        self.assertLess(tu.max_relative_difference(results[0], results[1]), 1e-5)
        self.assertGreater(np.max(np.abs(results[0][0] - model_and_data()[0].get_weights()[0])), 1e-2)

    def test_same_updates_under_mixed_precision_with_loss_scaling(self):
        results = []
        for cls in (optimizers.Adam, keras.optimizers.Adam):
            model, data = model_and_data("mixed_float16")
            results.append(train(model, keras.optimizers.LossScaleOptimizer(cls(0.05)), data))
        self.assertLess(tu.max_relative_difference(results[0], results[1]), 1e-5)

    def test_same_updates_under_a_two_replica_strategy_in_fit(self):
        strategy, results = tu.two_cpu_strategy(), []
        for cls, scope in ((optimizers.Adam, strategy.scope()), (keras.optimizers.Adam, contextlib.nullcontext())):
            with scope:
                model, data = model_and_data(embedding=False)
                model.compile(optimizer=cls(0.05), loss="mse")
            model.fit(data, tf.ones([8, 1]), batch_size=8, epochs=4, shuffle=False, verbose=0)
            results.append(model.get_weights())
        self.assertLess(tu.max_relative_difference(results[0], results[1]), 1e-5)

    def test_checkpoints_move_between_keras_adam_and_ours(self):
        model, data = model_and_data()
        theirs = keras.optimizers.Adam(0.05)
        train(model, theirs, data, steps=2)
        path = tf.train.Checkpoint(model=model, optimizer=theirs).save(self.get_temp_dir() + "/ckpt")
        continued = train(model, theirs, data, steps=2)

        model, data = model_and_data()
        ours = optimizers.Adam(0.05)
        ours.build(model.trainable_variables)
        tf.train.Checkpoint(model=model, optimizer=ours).restore(path).assert_consumed()
        self.assertEqual(int(ours.iterations), 2)
        self.assertLess(tu.max_relative_difference(train(model, ours, data, steps=2), continued), 1e-5)

    def test_saved_with_the_model_and_loaded_by_its_registered_name(self):
        model, _ = model_and_data()
        model.compile(optimizer=optimizers.Adam(0.01, beta_1=0.3), loss="mse")
        path = self.get_temp_dir() + "/m.keras"
        model.save(path)
        loaded = keras.models.load_model(path)
        self.assertIsInstance(loaded.optimizer, optimizers.Adam)
        self.assertAlmostEqual(float(loaded.optimizer.beta_1), 0.3)


if __name__ == "__main__":
    tf.test.main()
