"""replicas: what a step asks tf.distribute, on one device and on two mirrored CPU replicas."""

import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop import replicas


class OneDeviceTest(tu.TestCase):
    def test_everything_is_the_identity_of_one_device(self):
        self.assertEqual(replicas.count(), 1)
        self.assertAllEqual(replicas.rows_of_global_batch(lambda n: tf.range(n), 3), [0, 1, 2])
        self.assertAllEqual(replicas.fold_in_replica(tf.constant([1, 2], tf.int64)), [1, 2])
        self.assertFalse(bool(replicas.all_agree(tf.constant(False))))
        self.assertEqual(replicas.cross_replica(lambda: 5), 5)
        self.assertFalse(replicas.multi_worker())


class TwoReplicasTest(tu.TestCase):
    def test_rows_of_the_global_batch_distinct_seeds_and_agreement(self):
        strategy = tu.two_cpu_strategy()

        @tf.function
        def step():
            rows = replicas.rows_of_global_batch(lambda n: tf.range(n), 3)
            seed = replicas.fold_in_replica(tf.constant([1, 2], tf.int64))
            agree = replicas.all_agree(tf.equal(tf.distribute.get_replica_context().replica_id_in_sync_group, 0))
            return rows, seed, agree, replicas.count()

        rows, seeds, agree, count = (strategy.experimental_local_results(v) for v in strategy.run(step))
        self.assertEqual([r.numpy().tolist() for r in rows], [[0, 1, 2], [3, 4, 5]])
        self.assertNotEqual(seeds[0].numpy().tolist(), seeds[1].numpy().tolist())
        self.assertEqual(([bool(a) for a in agree], int(count[0])), ([False, False], 2))
        with strategy.scope():
            self.assertFalse(replicas.multi_worker())


if __name__ == "__main__":
    tf.test.main()
