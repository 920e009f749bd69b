"""replicas: what a step asks tf.distribute, on one device and on two mirrored CPU replicas."""

import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop import replicas

TWO_REPLICAS = """
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from tf_fusedprop import replicas
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

@tf.function
def step():
    rows = replicas.rows_of_global_batch(lambda n: tf.range(n), 3)
    seed = replicas.fold_in_replica(tf.constant([1, 2], tf.int64))
    agree = replicas.all_agree(tf.equal(tf.distribute.get_replica_context().replica_id_in_sync_group, 0))
    return rows, seed, agree, replicas.count()

rows, seeds, agree, count = (strategy.experimental_local_results(v) for v in strategy.run(step))
print("ROWS", [r.numpy().tolist() for r in rows])
print("SEEDS_DIFFER", seeds[0].numpy().tolist() != seeds[1].numpy().tolist())
print("AGREE", [bool(a) for a in agree], "COUNT", int(count[0]), "MULTI_WORKER", replicas.multi_worker())
"""


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
        result = tu.run_script(TWO_REPLICAS)
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        lines = tu.marked_lines(result.stdout)
        self.assertEqual(lines["ROWS"], "[[0, 1, 2], [3, 4, 5]]")
        self.assertEqual(lines["SEEDS_DIFFER"], "True")
        self.assertEqual(lines["AGREE"], "[False, False] COUNT 2 MULTI_WORKER False")


if __name__ == "__main__":
    tf.test.main()
