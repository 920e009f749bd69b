"""One batch type for a training step, the sampler that completes it, and its micro-batches.

A `Batch` is everything a step's passes read: the real samples and their labels, the latents
and the fake samples' labels (labels are None for an unconditional GAN). `Sampler.batch` builds
one from what `fit` yields; `Batch.rows` cuts the micro-batches of gradient accumulation.
"""

import collections

import tensorflow as tf

from tf_fusedprop import replicas
from tf_fusedprop.seeds import SeedStream

__all__ = ["Batch", "Sampler", "micro_batch_bounds", "unpack"]


class Batch(collections.namedtuple("Batch", ["real", "z", "real_labels", "fake_labels"], defaults=(None, None))):
    """The inputs of one step: `real` samples, latents `z` (same batch size), and for a
    class-conditional GAN `[batch]` int labels of the real samples and of the fake ones (G is
    called on `[z, fake_labels]`, D on `[samples, labels]`)."""

    def rows(self, start, stop):
        """The micro-batch of rows `[start, stop)` of every field."""
        return Batch(*(None if field is None else field[start:stop] for field in self))


def micro_batch_bounds(n, parts):
    """`parts + 1` row bounds that split `n` rows into `parts` micro-batches whose sizes differ
    by at most one (fewer parts if `n < parts`)."""
    parts = tf.minimum(parts, n)
    return tf.range(parts + 1) * n // parts


def unpack(data, num_classes):
    """`(real, labels)` from what `fit` yields: samples, or `(samples, labels)`.

    Labels are kept (int32, `[batch]`) only for a conditional GAN (`num_classes` set).

    Raises:
      ValueError: a conditional GAN fit on samples without labels.
    """
    if isinstance(data, (tuple, list)):
        real, labels = data[0], (data[1] if len(data) > 1 else None)
    else:
        real, labels = data, None
    if num_classes is None:
        return real, None
    if labels is None:
        raise ValueError(f"A conditional FusedPropGAN (num_classes={num_classes}) is fit on (samples, labels) pairs.")
    return real, tf.cast(tf.reshape(labels, [-1]), tf.int32)


class Sampler:
    """Draws what a step adds to the real samples: latents (normal) and, for a conditional GAN,
    fake labels (uniform in [0, num_classes)).

    Under a `tf.distribute` strategy each draw is made for the global batch and this replica
    takes its own rows (`replicas.rows_of_global_batch`), so replicas differ and N replicas
    draw what one device would.

    Args:
      latent_dim: the size of z.
      num_classes: the classes of a conditional GAN, or None.
      seed: the model's seed; the draws come from the `SeedStream` named "latents".
      dtype: the dtype of z.
    """

    def __init__(self, latent_dim, num_classes=None, seed=None, dtype="float32"):
        self.latent_dim, self.num_classes, self.dtype = latent_dim, num_classes, dtype
        self.stream = SeedStream(seed, "latents")

    def latents(self, n):
        """`n` latents (this replica's rows of the global batch)."""
        seed = self.stream.next()
        return replicas.rows_of_global_batch(
            lambda rows: tf.random.stateless_normal([rows, self.latent_dim], seed=seed, dtype=self.dtype), n
        )

    def labels(self, n):
        """`n` uniform class labels, int32 (this replica's rows of the global batch).

        Raises:
          ValueError: the GAN is not conditional.
        """
        if self.num_classes is None:
            raise ValueError("Fake labels need a conditional GAN: pass FusedPropGAN(..., num_classes=K).")
        seed = self.stream.next()
        return replicas.rows_of_global_batch(
            lambda rows: tf.random.stateless_uniform([rows], seed=seed, maxval=self.num_classes, dtype=tf.int32), n
        )

    def batch(self, real, real_labels=None):
        """A `Batch` of `real` (and its labels) with fresh latents and fake labels."""
        n = tf.shape(real)[0]
        z = self.latents(n)
        return Batch(real, z, real_labels, None if self.num_classes is None else self.labels(n))

    def example_inputs(self, n=4):
        """G's inputs for `n` fixed latents (labels 0 when conditional), eager; for probing and
        building copies of G."""
        with tf.init_scope():
            z = tf.random.stateless_normal([n, self.latent_dim], seed=[3, 5], dtype=self.dtype)
            return z if self.num_classes is None else [z, tf.zeros([n], tf.int32)]
