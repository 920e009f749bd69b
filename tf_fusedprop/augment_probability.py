"""Adaptive augmentation probability (ADA; Karras et al., NeurIPS 2020), in the graph.

D overfits a small dataset by growing confident on the real samples it has memorised: the
share of real samples it calls real, measured as `r_t = E[sign(D(real))]`, climbs towards 1.
`AdaptiveProbability` keeps the probability `p` with which `DiffAugment` applies each of its
operations, starting at 0, and moves it after every `interval` G updates by
`sign(r_t - target) * images / ramp_images`, where `images` are the real samples D saw in that
interval (over every D phase, micro-batch and replica): so `p` can go from 0 to 1 in
`ramp_images` real samples, and stays near 0 while D cannot tell the real ones apart.

`r_t` reads D's confidence, not its memory: with a spectrally normalised D its level depends on
the task (on MNIST-5k it stayed at 0.35-0.42 while D overfitted; on the 16 px digits it sat at
0.53-0.63 with D at chance; docs/quality.md). With `held_out` images, real samples that D never
trains on, the signal is memorisation itself: the share of pairs (a real sample of the step, a
held-out one) that D scores in that order, `P(D(real) > D(held_out))` (ties count half; 0.5 when
D scores seen and unseen samples alike), measured on clean (unaugmented) samples at each
adjustment (benchmarks/overfitting_signals.py: on MNIST-1k it rose from 0.52 to 0.84 before FID
turned up, while `r_t` jumped between -1 and 0.99 from one measurement to the next).

The state (`p`, and the running sum of signs and count of the interval; the held-out images)
lives in variables that `FusedPropGAN` tracks, so a checkpoint holds it and a resume continues
it exactly. Under `tf.distribute` the sums and counts are summed over the replicas before the
update, so every replica holds the same `p`.
"""

import numbers

import keras
import numpy as np
import tensorflow as tf

from tf_fusedprop import replicas

__all__ = ["AdaptiveProbability"]


def _in_unit_interval(name, value, closed_below=True):
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    ok = ok and (0 <= value <= 1 if closed_below else 0 < value <= 1)
    if not ok:
        bounds = "[0, 1]" if closed_below else "(0, 1]"
        raise ValueError(f"DiffAugment's {name} must be a number in {bounds}. Received: {name}={value!r}")
    return float(value)


class AdaptiveProbability:
    """The controller of an adaptive `DiffAugment`'s probability (see the module docstring).

    Args:
      target: the signal to hold, in (0, 1]: `E[sign(D(real))]` (ADA: 0.6), or with
        `held_out` the share `P(D(real) > D(held_out))`.
      interval: G updates between adjustments (ADA: 4 batches).
      ramp_images: real samples over which `p` can go from 0 to 1 (ADA: 500,000).
      held_out: None (ADA's `r_t`), or real images D never trains on (an array `[n, ...]` of
        samples as D takes them), or their number `n` (the images then come with the saved
        weights, or `hold_out`).
    """

    def __init__(self, target=0.6, interval=4, ramp_images=500_000, held_out=None):
        self.target = _in_unit_interval("target", target, closed_below=False)
        if isinstance(interval, bool) or not isinstance(interval, numbers.Integral) or interval < 1:
            raise ValueError(f"DiffAugment's interval must be a positive integer. Received: interval={interval!r}")
        if isinstance(ramp_images, bool) or not isinstance(ramp_images, numbers.Real) or not ramp_images > 0:
            raise ValueError(
                f"DiffAugment's ramp_images must be a positive number. Received: ramp_images={ramp_images!r}"
            )
        self.interval, self.ramp_images = int(interval), ramp_images
        self._held_out_images = None
        if held_out is None or isinstance(held_out, numbers.Integral) and not isinstance(held_out, bool):
            self.held_out = held_out
        else:
            self._held_out_images = np.asarray(held_out, dtype=np.float32)
            self.held_out = len(self._held_out_images) if self._held_out_images.ndim >= 2 else 0
        if self.held_out is not None and self.held_out < 1:
            received = (
                f"an array of shape {np.shape(held_out)}" if self._held_out_images is not None else repr(held_out)
            )
            raise ValueError(
                "DiffAugment's held_out must be None, a positive number of images, or an array of images [n, ...]. "
                f"Received: {received}"
            )
        self.variables = None

    def attach(self, sample_shape=None):
        """Creates the state variables (`p`, sign sum, count: zeros; with `held_out` the images)
        and returns them. Call it where they should live (inside a `tf.distribute` scope for
        mirrored ones).

        Args:
          sample_shape: the shape of one sample as D takes it (needed with `held_out`).

        Raises:
          ValueError: this controller already has its variables (it belongs to another model),
            or held-out images of another shape than `sample_shape`.
        """
        if self.variables is not None:
            raise ValueError(
                "This adaptive DiffAugment already belongs to a model; pass a new DiffAugment(...) for another."
            )
        # Every replica computes the same values from all-reduced sums: the first one's is kept.
        self.variables = [
            keras.Variable(0.0, dtype="float32", trainable=False, aggregation="only_first_replica", name=name)
            for name in ("augment_p", "augment_sign_sum", "augment_seen")
        ]
        if self.held_out is not None:
            shape = (self.held_out, *sample_shape)
            images = self._held_out_images
            if images is not None and images.shape != shape:
                raise ValueError(
                    f"DiffAugment's held_out images must be samples as D takes them, {tuple(sample_shape)}; "
                    f"received an array of shape {images.shape}."
                )
            initial = images if images is not None else np.zeros(shape, np.float32)
            self.variables.append(
                keras.Variable(initial, trainable=False, aggregation="only_first_replica", name="augment_held_out")
            )
        return self.variables

    @property
    def p(self):
        """The current probability: a float32 scalar tensor (0 before `attach`)."""
        return tf.constant(0.0) if self.variables is None else self.variables[0].value

    def hold_out(self, images):
        """Sets the held-out images (after `attach`; e.g. a run that rebuilds its model)."""
        self.variables[3].assign(np.asarray(images, np.float32))

    def due(self, step):
        """Whether `p` moves after G update `step`: a boolean scalar tensor."""
        return tf.equal(tf.cast(step, tf.int64) % self.interval, 0)

    def observe(self, sign_sum, seen, step, discriminator=None, real=None):
        """Adds this update's `sign_sum` (of `sign(D(real))`) over `seen` real samples on this
        replica, and after update `step` (G updates so far) when `interval` divides it moves `p`.
        With `held_out`, the signal is measured then, on `real` (this replica's clean real
        samples) against the held-out images, by `discriminator`; returns it (a float32 scalar,
        0 where no adjustment is due), else None."""
        p, sign_sum_var, seen_var = self.variables[:3]
        due = self.due(step)
        if self.held_out is None:
            totals = replicas.summed(tf.stack([tf.cast(sign_sum, tf.float32), tf.cast(seen, tf.float32)]))
            sign_sum, seen = sign_sum_var.value + totals[0], seen_var.value + totals[1]
            rate, measured = sign_sum / tf.maximum(seen, 1.0), None
        else:
            seen = seen_var.value + replicas.summed(tf.cast(seen, tf.float32))
            pairs = tf.cond(
                due, lambda: _ordered_pairs(discriminator, real, self.variables[3].value), lambda: tf.zeros([2])
            )
            pairs = replicas.summed(pairs)
            rate = measured = pairs[0] / tf.maximum(pairs[1], 1.0)
            sign_sum = 0.0
        moved = tf.clip_by_value(p.value + tf.sign(rate - self.target) * seen / float(self.ramp_images), 0.0, 1.0)
        p.assign(tf.where(due, moved, p.value))
        sign_sum_var.assign(tf.where(due, 0.0, sign_sum))
        seen_var.assign(tf.where(due, 0.0, seen))
        return measured

    def get_config(self):
        """Constructor arguments (the held-out images by number: they are saved with the weights)."""
        config = {"target": self.target, "interval": self.interval, "ramp_images": self.ramp_images}
        return config if self.held_out is None else {**config, "held_out": self.held_out}


#: Held-out images D scores in one call.
_CHUNK = 64


def _ordered_pairs(discriminator, real, held_out):
    """`[pairs with D(real) > D(held_out) (ties half), pairs]` over every (real, held-out) pair,
    both scored by `discriminator` in inference mode (no power-iteration step), the held-out
    images `_CHUNK` at a time."""
    real_logits = tf.reshape(tf.cast(discriminator(real, training=False), tf.float32), [-1, 1])
    held_logits = tf.concat(
        [
            tf.reshape(tf.cast(discriminator(held_out[i : i + _CHUNK], training=False), tf.float32), [-1])
            for i in range(0, held_out.shape[0], _CHUNK)
        ],
        axis=0,
    )[None, :]
    above = tf.reduce_sum(tf.cast(real_logits > held_logits, tf.float32))
    ties = tf.reduce_sum(tf.cast(tf.equal(real_logits, held_logits), tf.float32))
    return tf.stack([above + 0.5 * ties, tf.cast(tf.size(real_logits) * tf.size(held_logits), tf.float32)])
