"""How far a simultaneous update strays from an alternating one, measured inside a run.

SimGD (the single-pass forms, `simultaneous`) and AltGD differ in one thing: G's gradient is
taken at D's weights before this step's D update (simultaneous) or after it (alternating).
`StrayProbe(every=k)` measures that difference on every k-th G update that a simultaneous phase
trains: `FusedPropGAN` applies D's update first, the probe forms G's gradient again at the
updated D on the same batch (the same latents, the same augmentation of the same rows), and G's
simultaneous gradient is then applied as always. The probe only observes: its forward passes
leave both players' non-trainable state (spectral-norm vectors, batch statistics) as they found
it and draw no random numbers, so a probed run trains exactly as an unprobed one.

Two numbers per probed update, over all of G's weights, with `g_sim` the gradient G is trained
with and `g_alt` the probe's:

* `stray = ||g_alt - g_sim|| / ||g_sim||`: 0 when D's update does not change G's gradient;
* `stray_cosine = <g_alt, g_sim> / (||g_alt|| ||g_sim||)`.

Under `tf.distribute` each replica measures its own rows and the squared norms and the dot
product are summed over the replicas (so they agree; on one replica, one device's numbers).
Cost of a probed update: one more forward pass of G and of D on the fake rows and the backward
pass to G's weights (an alternating G step's work); the other updates pay nothing.
"""

import keras
import tensorflow as tf

from tf_fusedprop import replicas, steps
from tf_fusedprop._checks import positive_int
from tf_fusedprop.accumulation import accumulate, accumulators

__all__ = ["LOGS", "StrayProbe", "alternating_gradients"]

#: The metrics a probed `FusedPropGAN` logs (epoch means over the probed updates).
LOGS = ("stray", "stray_cosine")
G = "generator"


def alternating_gradients(generator, discriminator, batch, loss, options):
    """G's gradients of G's loss on `batch` at D's current weights, with D seeing the fake rows
    as a simultaneous step's one D call sees them (`options.augment` applied to `concat(real,
    fake)`, the fake rows kept); `options.scale_loss` applies, regularizers do not (G's loss has
    none). Returns `({"generator": grads}, {})`, as a `forms.Phase` computes them."""
    z, labels = batch.z, batch.fake_labels
    with tf.GradientTape() as tape:
        fake = tf.cast(generator(z if labels is None else [z, labels], training=True), batch.real.dtype)
        seen = fake
        if options.augment is not None:
            n = tf.shape(batch.real)[0]
            seen = options.augment(tf.concat([batch.real, fake], axis=0))[n:]
        logits = steps.discriminator_logits(discriminator, seen if labels is None else [seen, labels])
        g_loss = tf.reduce_mean(loss.g(logits))
        objective = g_loss if options.scale_loss is None else options.scale_loss(g_loss)
    grads = tape.gradient(objective, generator.trainable_variables)
    return {G: [tf.convert_to_tensor(g) for g in grads]}, {}


def _squared_sums(g_alt, g_sim):
    """`[||g_alt - g_sim||^2, ||g_sim||^2, ||g_alt||^2, <g_alt, g_sim>]` in float64 (the
    difference of two close gradients loses digits in narrower sums)."""
    sums = tf.zeros([4], tf.float64)
    for a, s in zip(g_alt, g_sim):
        a, s = tf.cast(a, tf.float64), tf.cast(s, tf.float64)
        sums += tf.stack(
            [
                tf.reduce_sum(tf.square(a - s)),
                tf.reduce_sum(tf.square(s)),
                tf.reduce_sum(tf.square(a)),
                tf.reduce_sum(a * s),
            ]
        )
    return sums


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class StrayProbe:
    """Measures, every `every` G updates, how far the simultaneous update strays from an
    alternating one (see the module docstring). Pass it as `FusedPropGAN(probe=...)`.

    Args:
      every: G updates between probes (the probe runs on updates 0, every, 2 * every, ...
        that a simultaneous phase trains).
    """

    def __init__(self, every=10):
        self.every = positive_int("every", every)
        self._accumulators = None
        self._models = None

    def attach(self, generator, discriminator, iter_size):
        """Binds the probe to the players; with `iter_size` > 1 makes the shadow variables of
        its own gradient (formed over the micro-batches like the step's). Call it where the
        model's variables live.

        Raises:
          ValueError: this probe already measures another pair of players.
        """
        if self._models is not None and self._models != (generator, discriminator):
            raise ValueError(
                "This StrayProbe already measures another GAN's players; pass a new StrayProbe(...) for another GAN."
            )
        self._models = (generator, discriminator)
        self._accumulators = accumulators({G: generator}, iter_size)
        self.iter_size = iter_size

    def due(self, step):
        """Whether G update `step` (0-based, an int64 tensor) is probed."""
        return tf.equal(step % self.every, 0)

    def measure(self, step, batch, loss, options, g_sim):
        """Call after D's update is applied and before G's: the summed squared norms of the
        update `step` (zeros when it is not probed), summed over the replicas, and a 0/1 weight
        saying whether it was probed. `g_sim`: the gradients G is about to be trained with."""
        generator, discriminator = self._models

        def probed():
            state = [
                (v, tf.identity(v)) for v in generator.non_trainable_variables + discriminator.non_trainable_variables
            ]

            def compute(micro):
                return alternating_gradients(generator, discriminator, micro, loss, options)

            grads, _ = accumulate(compute, batch, self.iter_size, self._accumulators, ())
            sums = _squared_sums(grads[G], g_sim)
            with tf.control_dependencies([sums]):
                for variable, value in state:
                    variable.assign(value)
            return tf.identity(sums)

        due = self.due(step)
        sums = tf.cond(due, probed, lambda: tf.zeros([4], tf.float64))
        return replicas.summed(sums), tf.cast(due, tf.float32)

    @staticmethod
    def statistics(sums):
        """`{"stray": ..., "stray_cosine": ...}` from `measure`'s sums (0 where nothing was probed)."""
        diff, sim, alt, dot = tf.unstack(sums)
        return {
            "stray": tf.math.divide_no_nan(tf.sqrt(diff), tf.sqrt(sim)),
            "stray_cosine": tf.math.divide_no_nan(dot, tf.sqrt(sim * alt)),
        }

    def get_config(self):
        """Constructor arguments."""
        return {"every": self.every}

    @classmethod
    def from_config(cls, config):
        """Inverse of `get_config`."""
        return cls(**config)

    def __repr__(self):
        return f"StrayProbe(every={self.every})"
