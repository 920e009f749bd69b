"""seeds: one stream per source of randomness, distinct by name, saved and restored."""

import numpy as np
import tensorflow as tf

from tests import testing_utils as tu
from tf_fusedprop import seeds


class SeedStreamTest(tu.TestCase):
    def test_streams_are_distinct_by_name_and_repeat_by_seed(self):
        latents, augment = seeds.SeedStream(7, "latents"), seeds.SeedStream(7, "augment")
        self.assertAllEqual(latents.next(), [7, 0])  # the latents' stream starts from the seed itself
        self.assertAllEqual(latents.next(), [7, 1])
        first = augment.next().numpy()
        self.assertNotAllEqual(first, [7, 0])
        self.assertAllEqual(seeds.SeedStream(7, "augment").next(), first)
        self.assertNotAllEqual(seeds.SeedStream(8, "augment").next(), first)
        self.assertEqual(latents.next_per_replica().dtype, tf.int64)  # one replica: the same seed

    def test_states_are_saved_and_restored(self):
        streams = {"latents": seeds.SeedStream(1, "latents"), "augment": seeds.SeedStream(1, "augment")}
        for stream in streams.values():
            stream.next()
        store = {"0": "other"}
        seeds.save_states(streams, store)
        store = {key: value if key == "0" else np.array(value) for key, value in store.items()}  # as a file holds it
        self.assertEqual(sorted(store), ["0", "augment_seed_state", "latents_seed_state"])
        expected = {name: stream.next().numpy() for name, stream in streams.items()}
        fresh = {"latents": seeds.SeedStream(1, "latents"), "augment": seeds.SeedStream(1, "augment")}
        rest = seeds.load_states(fresh, store)
        self.assertEqual(rest, {"0": "other"})
        for name, stream in fresh.items():
            self.assertAllEqual(stream.next(), expected[name])


if __name__ == "__main__":
    tf.test.main()
