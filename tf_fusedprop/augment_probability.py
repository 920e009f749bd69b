"""Adaptive augmentation probability (ADA; Karras et al., NeurIPS 2020), in the graph.

D overfits a small dataset by growing confident on the real samples it has memorised: the
share of real samples it calls real, measured as `r_t = E[sign(D(real))]`, climbs towards 1.
`AdaptiveProbability` keeps the probability `p` with which `DiffAugment` applies each of its
operations, starting at 0, and moves it after every `interval` G updates by
`sign(r_t - target) * images / ramp_images`, where `images` are the real samples D saw in that
interval (over every D phase, micro-batch and replica): so `p` can go from 0 to 1 in
`ramp_images` real samples, and stays near 0 while D cannot tell the real ones apart.

The state (`p`, and the running sum of signs and count of the interval) lives in three
variables that `FusedPropGAN` tracks, so a checkpoint holds it and a resume continues it
exactly. Under `tf.distribute` the signs and counts are summed over the replicas before the
update, so every replica holds the same `p`.
"""

import numbers

import keras
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
      target: the `E[sign(D(real))]` to hold, in (0, 1] (ADA: 0.6).
      interval: G updates between adjustments (ADA: 4 batches).
      ramp_images: real samples over which `p` can go from 0 to 1 (ADA: 500,000).
    """

    def __init__(self, target=0.6, interval=4, ramp_images=500_000):
        self.target = _in_unit_interval("target", target, closed_below=False)
        if isinstance(interval, bool) or not isinstance(interval, numbers.Integral) or interval < 1:
            raise ValueError(f"DiffAugment's interval must be a positive integer. Received: interval={interval!r}")
        if isinstance(ramp_images, bool) or not isinstance(ramp_images, numbers.Real) or not ramp_images > 0:
            raise ValueError(
                f"DiffAugment's ramp_images must be a positive number. Received: ramp_images={ramp_images!r}"
            )
        self.interval, self.ramp_images = int(interval), ramp_images
        self.variables = None

    def attach(self):
        """Creates the state variables (`p`, sign sum, count; zeros) and returns them. Call it
        where they should live (inside a `tf.distribute` scope for mirrored ones).

        Raises:
          ValueError: this controller already has its variables (it belongs to another model).
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
        return self.variables

    @property
    def p(self):
        """The current probability: a float32 scalar tensor (0 before `attach`)."""
        return tf.constant(0.0) if self.variables is None else self.variables[0].value

    def observe(self, sign_sum, seen, step):
        """Adds this update's `sign_sum` (of `sign(D(real))`) over `seen` real samples on this
        replica, and after update `step` (G updates so far) when `interval` divides it moves `p`."""
        p, sign_sum_var, seen_var = self.variables
        totals = replicas.summed(tf.stack([tf.cast(sign_sum, tf.float32), tf.cast(seen, tf.float32)]))
        sign_sum, seen = sign_sum_var.value + totals[0], seen_var.value + totals[1]
        due = tf.equal(tf.cast(step, tf.int64) % self.interval, 0)
        rate = sign_sum / tf.maximum(seen, 1.0)
        moved = tf.clip_by_value(p.value + tf.sign(rate - self.target) * seen / float(self.ramp_images), 0.0, 1.0)
        p.assign(tf.where(due, moved, p.value))
        sign_sum_var.assign(tf.where(due, 0.0, sign_sum))
        seen_var.assign(tf.where(due, 0.0, seen))

    def get_config(self):
        """Constructor arguments."""
        return {"target": self.target, "interval": self.interval, "ramp_images": self.ramp_images}
