"""Differentiable Augmentation (DiffAugment; Zhao et al., NeurIPS 2020) for D's inputs.

`DiffAugment(policy)` transforms a batch of NHWC images, every sample with its own random
parameters, by differentiable operations, so G is trained through them. Applied to the real
and the fake samples of D's one call (`tf_fusedprop.steps.StepOptions.augment`), it keeps D
a per-sample function of its input, so the single-pass forms stay exact.

Policies (comma-separated, applied in this order):

* `color`: brightness (add U[-0.5, 0.5)), saturation (scale the deviation from the channel
  mean by U[0, 2)), contrast (scale the deviation from the image mean by U[0.5, 1.5)).
* `translation`: shift by whole pixels, up to 1/8 of the size per axis, zero padded.
* `cutout`: zero a square of half the size at a random position (clipped at the border).

Each operation is applied to every sample (`p=1`, the default: DiffAugment as published), to
each sample with a fixed probability `p`, or with a probability that adapts to D (`p="auto"`,
ADA's mechanism: `tf_fusedprop.augment_probability`): 0 at first, raised while D grows
confident on the real samples (or, given `held_out` images, while D scores the real samples it
trains on above those it never saw), lowered when it is not. Whether an operation applies to a sample
is drawn per sample and operation, so D stays a per-sample function of its input.

Randomness is stateless: the same `[2]` seed (and `p`) gives the same transformation, which
`FusedPropGAN` draws per step from the augmentation's own seed stream (`tf_fusedprop.seeds`)
and folds with the replica id.
"""

import numbers

import keras
import tensorflow as tf

from tf_fusedprop.augment_probability import AdaptiveProbability

__all__ = ["DiffAugment", "POLICIES"]

POLICIES = ("color", "translation", "cutout")


def _uniform(seed, x, minval=0.0, maxval=1.0):
    """One U[minval, maxval) value per sample, shaped to broadcast over `x`'s other axes."""
    shape = tf.concat([tf.shape(x)[:1], tf.ones([tf.rank(x) - 1], tf.int32)], axis=0)
    return tf.random.stateless_uniform(shape, seed=seed, minval=minval, maxval=maxval, dtype=x.dtype)


def _color(x, seed):
    seeds = tf.random.experimental.stateless_split(seed, 3)
    x = x + _uniform(seeds[0], x, -0.5, 0.5)
    channel_mean = tf.reduce_mean(x, axis=-1, keepdims=True)
    x = (x - channel_mean) * _uniform(seeds[1], x, 0.0, 2.0) + channel_mean
    image_mean = tf.reduce_mean(x, axis=[1, 2, 3], keepdims=True)
    return (x - image_mean) * _uniform(seeds[2], x, 0.5, 1.5) + image_mean


def _shifted_indices(size, pad, seed, n):
    """Per-sample source indices `[n, size]` into an axis padded by `pad` on both sides."""
    shift = tf.random.stateless_uniform([n, 1], seed=seed, minval=-pad, maxval=pad + 1, dtype=tf.int32)
    return tf.range(size)[None, :] + pad - shift


def _translation(x, seed, ratio=0.125):
    height, width = x.shape[1], x.shape[2]
    pad_h, pad_w = int(height * ratio + 0.5), int(width * ratio + 0.5)
    n = tf.shape(x)[0]
    seeds = tf.random.experimental.stateless_split(seed, 2)
    padded = tf.pad(x, [[0, 0], [pad_h, pad_h], [pad_w, pad_w], [0, 0]])
    rows = tf.gather(padded, _shifted_indices(height, pad_h, seeds[0], n), axis=1, batch_dims=1)
    return tf.gather(rows, _shifted_indices(width, pad_w, seeds[1], n), axis=2, batch_dims=1)


def _band(size, cut, seed, n):
    """`[n, size]` 1 inside a band of `cut` positions at a random center (clipped), else 0."""
    center = tf.random.stateless_uniform([n, 1], seed=seed, minval=0, maxval=size, dtype=tf.int32)
    position = tf.range(size)[None, :] - (center - cut // 2)
    return tf.cast((position >= 0) & (position < cut), tf.float32)


def _cutout(x, seed, ratio=0.5):
    height, width = x.shape[1], x.shape[2]
    n = tf.shape(x)[0]
    seeds = tf.random.experimental.stateless_split(seed, 2)
    rows = _band(height, int(height * ratio + 0.5), seeds[0], n)
    cols = _band(width, int(width * ratio + 0.5), seeds[1], n)
    mask = 1.0 - rows[:, :, None] * cols[:, None, :]
    return x * tf.cast(mask[..., None], x.dtype)


_OPERATIONS = {"color": _color, "translation": _translation, "cutout": _cutout}


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class DiffAugment:
    """A DiffAugment policy: `augment(images, seed)` transforms each sample independently.

    Args:
      policy: comma-separated names from `POLICIES`, e.g. "translation,cutout,color" (the
        order given is irrelevant: color, translation, cutout always run in that order, as in
        the authors' code); "" for none.
      p: the probability, per sample and operation, that the operation applies: a number in
        [0, 1], or "auto" for an adaptive one (`FusedPropGAN` adjusts it from D's outputs on
        the real samples; `p` then reads its current value).
      target: with `p="auto"`, the `E[sign(D(real))]` to hold (ADA: 0.6).
      interval: with `p="auto"`, G updates between adjustments.
      ramp_images: with `p="auto"`, the real samples over which p can go from 0 to 1.
      held_out: with `p="auto"`, None to follow ADA's `E[sign(D(real))]`, or real images D
        never trains on (an array of samples, or their number when they come with saved
        weights): p then follows `P(D(real) > D(held_out))`, D's memory of its real samples
        (`target` that share, e.g. 0.6).

    Raises:
      ValueError: an unknown name, or a value out of range.
    """

    #: It draws a seed every step (from a stream of its own in `FusedPropGAN`).
    seeded = True

    def __init__(
        self, policy="color,translation,cutout", p=1.0, target=0.6, interval=4, ramp_images=500_000, held_out=None
    ):
        if not isinstance(policy, str):
            raise ValueError(f"DiffAugment takes a comma-separated policy string. Received: policy={policy!r}")
        names = [name.strip() for name in policy.split(",") if name.strip()]
        unknown = sorted(set(names) - set(POLICIES))
        if unknown:
            raise ValueError(
                f"Unknown DiffAugment policy {unknown}. Received: policy={policy!r}; valid: {', '.join(POLICIES)}."
            )
        self.policy = ",".join(name for name in POLICIES if name in names)
        self.adaptive = AdaptiveProbability(target, interval, ramp_images, held_out) if p == "auto" else None
        if self.adaptive is None and (isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1):
            raise ValueError(f'DiffAugment\'s p must be a number in [0, 1] or "auto". Received: p={p!r}')
        if self.adaptive is None and held_out is not None:
            raise ValueError(
                f'DiffAugment\'s held_out is the signal of an adaptive p: pass p="auto". Received: p={p!r}'
            )
        self._fixed_p = None if self.adaptive is not None else float(p)

    @property
    def p(self):
        """The probability each operation applies with: a float, or for `p="auto"` the current
        value (a float32 scalar tensor)."""
        return self._fixed_p if self.adaptive is None else self.adaptive.p

    def attach(self, sample_shape=None):
        """The state variables of an adaptive probability, created (see
        `AdaptiveProbability.attach`: `sample_shape` is D's sample's); [] for a fixed one.
        `FusedPropGAN` calls it."""
        return [] if self.adaptive is None else self.adaptive.attach(sample_shape)

    def __call__(self, images, seed):
        """Transforms NHWC `images` with per-sample parameters drawn from the `[2]` int `seed`.

        Raises:
          ValueError: `images` is not a batch of images with static height and width.
        """
        if images.shape.rank != 4 or images.shape[1] is None or images.shape[2] is None:
            raise ValueError(
                f"DiffAugment transforms NHWC images with static height and width. Received: shape {images.shape}"
            )
        seed = tf.cast(seed, tf.int64)
        p = self.p
        for i, name in enumerate(self.policy.split(",") if self.policy else []):
            transformed = _OPERATIONS[name](images, tf.random.experimental.stateless_fold_in(seed, i))
            if isinstance(p, float) and p == 1.0:
                images = transformed
            else:  # a draw of its own per operation, apart from the operations' seeds (0, 1, 2)
                draw_seed = tf.random.experimental.stateless_fold_in(seed, len(POLICIES) + i)
                applies = _uniform(draw_seed, images) < tf.cast(p, images.dtype)
                images = tf.where(applies, transformed, images)
        return images

    def bind(self, seed):
        """`lambda images: self(images, seed)`, for `StepOptions.augment`."""
        return lambda images: self(images, seed)

    def get_config(self):
        """Constructor arguments."""
        config = {"policy": self.policy}
        if self.adaptive is None:
            return config if self._fixed_p == 1.0 else {**config, "p": self._fixed_p}
        return {**config, "p": "auto", **self.adaptive.get_config()}

    @classmethod
    def from_config(cls, config):
        """Inverse of `get_config`."""
        return cls(**config)

    def __repr__(self):
        extra = "".join(f", {key}={value!r}" for key, value in list(self.get_config().items())[1:])
        return f"DiffAugment({self.policy!r}{extra})"
