"""Seed streams: every source of randomness of a training step draws from a stream of its own.

The latents, DiffAugment's transformations and WGAN-GP's interpolation weights each have a
`SeedStream`, so switching one of them on or off leaves the others' draws unchanged (turning
GP on does not shift G's latents). A stream is a `keras.random.SeedGenerator` whose `[2]`
state advances by one per draw; its state is saved with the model (`FusedPropGAN`), so a
resumed run continues every stream where it stopped.
"""

import zlib

import keras
import tensorflow as tf

from tf_fusedprop import replicas

__all__ = ["SeedStream", "load_states", "save_states"]


class SeedStream:
    """A named stream of per-step `[2]` int64 seeds.

    Args:
      seed: the model's seed (an int) or None for a random stream.
      name: the stream's name; with an int seed, distinct names give distinct streams. The
        stream named "latents" starts from `seed` itself.
    """

    def __init__(self, seed, name):
        self.name = name
        if seed is not None and name != "latents":
            seed = int(seed) * 1_000_003 + zlib.crc32(name.encode())
            seed %= 2**31
        self.generator = keras.random.SeedGenerator(seed, name=f"{name}_seed")

    @property
    def state(self):
        """The stream's state variable (what a checkpoint saves)."""
        return self.generator.state

    def next(self):
        """The next seed, the same on every replica."""
        return tf.cast(self.generator.next(), tf.int64)

    def next_per_replica(self):
        """The next seed, folded with the replica id (distinct per replica)."""
        return replicas.fold_in_replica(self.next())


def save_states(streams, store):
    """Writes the state of each of `streams` (name -> `SeedStream`) into a Keras weights store."""
    for name, stream in streams.items():
        store[f"{name}_seed_state"] = stream.state


def load_states(streams, store):
    """Restores what `save_states` wrote; returns the store's other entries as a dict."""
    keys = {f"{name}_seed_state": stream for name, stream in streams.items()}
    for key, stream in keys.items():
        stream.state.assign(store[key])
    return {key: store[key] for key in store.keys() if key not in keys}
