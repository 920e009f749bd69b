"""The training forms: the gradients of one step of each, for both players.

| form | passes | what one step back-propagates |
|---|---|---|
| `fused` | 1 fwd + 1 bwd | FusedProp: D's loss; a `scale_gradient` between G and D turns each fake sample's gradient into G's by `lambda` |
| `inverse` | 1 fwd + 1 bwd | InvFusedProp: real samples' D loss plus G's loss; inside D's layers each fake sample's parameter gradient is scaled by `lambda_inv` |
| `adaptive` | 1 fwd + 1 bwd | per fake sample, whichever of the two has a factor of magnitude <= 1 |
| `simultaneous` | 1 fwd + 2 bwd | two-pass SimGD, the reference |
| `alternating` | 2 fwd + 2 bwd | conventional AltGD: `discriminator_step`, then `generator_step` with fresh latents |

The three single-pass forms are one code path (`simgd_step`): after D's forward pass a boolean
per fake sample says whether that sample is back-propagated through D's fake loss (fused) or
through G's loss (inverse); both factors and the back-propagated term follow from it. A form is
only the rule that picks it (`SinglePassRule`): all fused, all inverse, or `loss.prefers_fused`.
"""

import collections
import contextlib
import weakref

import keras
import tensorflow as tf

from tf_fusedprop import layers as fp_layers
from tf_fusedprop import losses as fp_losses
from tf_fusedprop import ops

__all__ = [
    "FORMS",
    "SINGLE_PASS_FORMS",
    "DiscriminatorStep",
    "GeneratorStep",
    "StepOptions",
    "StepResult",
    "check_discriminator",
    "check_form",
    "check_sample_independence",
    "compute_gradients",
    "discriminator_logits",
    "discriminator_step",
    "generator_step",
    "simgd_step",
    "supports",
]

#: Training forms. `fused`, `inverse` and `adaptive` are single-pass FusedProp forms;
#: `simultaneous` is two-pass SimGD and `alternating` the conventional AltGD baseline.
FORMS = ("fused", "inverse", "adaptive", "simultaneous", "alternating")
#: The forms that run one forward and one backward pass per step.
SINGLE_PASS_FORMS = ("fused", "inverse", "adaptive")


def supports(loss, form):
    """Whether `loss` (a name or `GANLoss`) can be trained with `form` (one of `FORMS`).

    Only `fused` needs FusedProp's factor `lambda`, which the hinge loss does not have.
    """
    return form in FORMS and (form != "fused" or fp_losses.get(loss).has_lambda)


def check_form(loss, form):
    """Validates a (loss, form) pair; returns the `GANLoss`.

    Raises:
      ValueError: an unknown loss or form, or a pair the loss does not support; the message
        says what to use instead.
    """
    loss = fp_losses.get(loss)
    if form not in FORMS:
        raise ValueError(f"Unknown training form. Received: form={form!r}. Valid forms: {', '.join(FORMS)}.")
    if not supports(loss, form):
        valid = [f for f in FORMS if supports(loss, f)]
        raise ValueError(f"The {loss.name} loss does not support form={form!r}. Use one of: {', '.join(valid)}.")
    return loss


StepResult = collections.namedtuple(
    "StepResult", ["d_grads", "g_grads", "d_loss", "g_loss", "real_logits", "fake_logits"]
)
StepResult.__doc__ = """Gradients and diagnostics of one simultaneous step.

`d_grads`/`g_grads` align with the players' `trainable_variables`; `d_loss` is
`mean(d_real) + mean(d_fake)`, `g_loss` is `mean(g)`; logits are D's outputs (at least float32)."""

DiscriminatorStep = collections.namedtuple("DiscriminatorStep", ["d_grads", "d_loss", "real_logits", "fake_logits"])
DiscriminatorStep.__doc__ = """D's gradients of a conventional D step, its loss and D's logits."""

GeneratorStep = collections.namedtuple("GeneratorStep", ["g_grads", "g_loss", "d_grads"])
GeneratorStep.__doc__ = """G's gradients of a conventional G step and its loss; `d_grads` are D's
parameter gradients of G's loss when asked for (paper-style baseline), else None."""


def _own_trainable_weights(layer):
    nested = {id(w) for sub in layer._flatten_layers(include_self=False) for w in sub.trainable_weights}
    return [w for w in layer.trainable_weights if id(w) not in nested]


def check_discriminator(discriminator, form):
    """Raises ValueError if `discriminator` cannot be trained exactly with `form`.

    Single-pass forms need D to treat samples independently (no BatchNormalization: the
    per-sample factors would not give the SimGD gradients). The inverse and adaptive forms also
    need every layer that owns trainable weights to be InvFusedProp-capable
    (`tf_fusedprop.layers`), otherwise its gradients would silently be wrong.
    """
    if form not in SINGLE_PASS_FORMS:
        return
    scales_parameters = _rule(form).may_invert
    for layer in discriminator._flatten_layers(include_self=True):
        if isinstance(layer, keras.layers.BatchNormalization):
            raise ValueError(
                f"form={form!r} needs a discriminator that treats samples independently, but "
                f"it contains the BatchNormalization layer {layer.name!r}. Remove it (use "
                "spectral_norm=True in tf_fusedprop.layers instead) or use "
                "form='simultaneous' or form='alternating'."
            )
        if (
            scales_parameters
            and _own_trainable_weights(layer)
            and not fp_layers.supports_parameter_gradient_scaling(layer)
        ):
            raise ValueError(
                f"form={form!r} needs every trainable layer of the discriminator to be "
                f"InvFusedProp-capable, but layer {layer.name!r} is a "
                f"{type(layer).__module__}.{type(layer).__name__}. Build D from "
                "tf_fusedprop.layers.Dense / Conv2D, or use form='fused' (not with hinge) "
                "or form='simultaneous'."
            )


#: Largest |d D(x)_j / d x_i| (j != i) relative to |d D(x)_i / d x_i| accepted as independent.
INDEPENDENCE_TOLERANCE = 1e-4


@tf.autograph.experimental.do_not_convert  # eager Python, also when called while tracing
def sample_coupling(discriminator, x):
    """How much D's outputs for the other samples move when sample 0 of `x` changes.

    Two training-mode forward passes of D, on `x` (at least 2 samples; or `[x, labels]` for a
    conditional D) and on `x` with its first sample replaced by noise, from the same state (spectral-norm vectors, batch
    statistics and random-seed states are restored before each pass and after, so dropout
    masks repeat): the largest change of the other samples' outputs relative to the change of
    sample 0's. It is 0 for a D that treats samples independently, and clearly positive for
    any cross-sample layer (batch statistics, a subtracted batch mean, minibatch std...).
    """
    extra = []
    if isinstance(x, (list, tuple)):  # a conditional D's [samples, labels]: labels stay as they are
        x, extra = x[0], list(x[1:])
    x = tf.convert_to_tensor(x)
    state = [(v, tf.identity(v)) for v in discriminator.non_trainable_variables]

    def restore():
        for variable, value in state:
            variable.assign(value)

    def outputs(inputs):
        restore()
        logits = discriminator([inputs] + extra if extra else inputs, training=True)
        return tf.cast(tf.reshape(logits, [-1]), tf.float64)

    noise = tf.random.stateless_normal(tf.shape(x[:1]), seed=[7, 11], dtype=x.dtype)
    try:
        before = outputs(x)
        after = outputs(tf.concat([noise, x[1:]], axis=0))
    finally:
        restore()
    own = float(tf.abs(after[0] - before[0]))
    others = float(tf.reduce_max(tf.abs(after[1:] - before[1:])))
    return others / own if own > 0 else (float("inf") if others > 0 else 0.0)


_independent = weakref.WeakKeyDictionary()


@tf.autograph.experimental.do_not_convert  # eager Python, also when called while tracing
def check_sample_independence(discriminator, x, form):
    """Raises ValueError if D's outputs for one sample depend on the other samples of `x`.

    The single-pass forms are exact only for a D that treats samples independently; this is
    the numerical probe behind that requirement (`sample_coupling`), run eagerly once per
    discriminator (later calls return at once). `x` is a batch of at least 2 inputs of D.
    """
    if form not in SINGLE_PASS_FORMS or _independent.get(discriminator):
        return
    with tf.init_scope():  # eager, also when called while tracing a tf.function
        coupling = sample_coupling(discriminator, x)
    if coupling > INDEPENDENCE_TOLERANCE:
        raise ValueError(
            f"form={form!r} needs a discriminator that treats samples independently, but "
            f"{discriminator.name!r} mixes them: its output for one sample moves when another "
            f"sample changes (relative coupling {coupling:.2g}; a batch-statistics layer, batch "
            "mean or minibatch std?). Make D per-sample, use form='simultaneous' or "
            "'alternating', or pass check_independence=False if you know better."
        )
    _independent[discriminator] = True


@tf.autograph.experimental.do_not_convert  # eager Python, also when called while tracing
def probe_batch(generator, latent_shape, dtype=tf.float32, labels=None):
    """A small batch of D inputs for `check_sample_independence`: G's inference-mode output
    on 4 random latents of `latent_shape` (None when that shape is not fully known). For a
    conditional G (`labels` given, any int tensor) it returns `[samples, labels]` with labels 0.
    """
    latent_shape = tf.TensorShape(latent_shape)
    if not latent_shape.is_fully_defined():
        return None
    with tf.init_scope():
        latents = tf.random.stateless_normal([4] + latent_shape.as_list(), seed=[3, 5], dtype=dtype)
        classes = None if labels is None else tf.zeros([4], labels.dtype)
        samples = generator(latents if classes is None else [latents, classes], training=False)
        samples = tf.cast(samples, tf.float32) if samples.dtype.size < 4 else samples
        return samples if classes is None else [samples, classes]


def discriminator_logits(discriminator, x):
    """D's training-mode output as a `[batch]` vector, cast up to float32 if narrower."""
    y = tf.reshape(discriminator(x, training=True), [-1])
    # Loss and factor arithmetic stays at least float32 under mixed precision.
    return tf.cast(y, tf.float32) if y.dtype.size < 4 else y


class SinglePassRule(collections.namedtuple("SinglePassRule", ["may_fuse", "may_invert", "fused"])):
    """How a single-pass form picks, per fake sample, the term it back-propagates.

    `fused(loss, y)` is a boolean per fake logit: True back-propagates D's fake loss with
    `lambda` applied between G and D, False back-propagates G's loss with `lambda_inv` applied
    inside D's layers. `may_fuse` / `may_invert` say statically whether any sample can take
    that path, so that a form never pays for the machinery of the other.
    """


def _all(value):
    return lambda loss, y: tf.fill(tf.shape(y), value)


_RULES = {
    "fused": SinglePassRule(may_fuse=True, may_invert=False, fused=_all(True)),
    "inverse": SinglePassRule(may_fuse=False, may_invert=True, fused=_all(False)),
    "adaptive": SinglePassRule(may_fuse=True, may_invert=True, fused=lambda loss, y: loss.prefers_fused(y)),
}


def _rule(form, loss=None):
    # Without lambda (hinge) no sample can take the fused path: adaptive is inverse.
    if loss is not None and not loss.has_lambda:
        return _RULES["inverse"]
    return _RULES[form]


class StepOptions(
    collections.namedtuple(
        "StepOptions",
        ["real_labels", "fake_labels", "augment", "regularizers", "seed", "loss_scale"],
        defaults=(None, None, None, (), None, None),
    )
):
    """What a step adds to the plain GAN objectives; every field is optional.

    * `real_labels`, `fake_labels`: `[batch]` int class labels of a conditional GAN. G is then
      called as `generator([z, fake_labels])` and D as `discriminator([x, labels])`.
    * `augment`: a differentiable, per-sample map of D's input batch (e.g. a seeded
      `tf_fusedprop.augment.DiffAugment`), applied to real and fake samples alike before D.
    * `regularizers`: D's gradient penalties (`tf_fusedprop.regularizers`), added to D's
      objective in the same pass: penalties on interpolates add `[batch]` rows to D's call.
    * `seed`: a `[2]` int seed of the step's own randomness (the interpolation weights).
    * `loss_scale`: a float32 scalar multiplying the objectives before the backward pass
      (mixed_float16 loss scaling); the gradients come back multiplied by it.
    """


def _generate(generator, z, labels):
    return generator(z if labels is None else [z, labels], training=True)


def _gradient(tape, objective, sources, loss_scale):
    """`tape.gradient(objective * loss_scale, sources)`: the scale seeds the backward pass.

    Sparse gradients (`IndexedSlices` of embedding lookups) come back dense, so that every
    gradient can be accumulated, checked and scaled alike.
    """
    seed = None if loss_scale is None else tf.cast(loss_scale, objective.dtype)
    grads = tape.gradient(objective, sources, output_gradients=seed)
    return tf.nest.map_structure(
        lambda g: tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g,
        grads,
        expand_composites=False,
    )


def _interpolates(real, fake, seed):
    shape = tf.concat([tf.shape(real)[:1], tf.ones([tf.rank(real) - 1], tf.int32)], axis=0)
    if seed is None:
        weights = tf.random.uniform(shape, dtype=real.dtype)
    else:
        weights = tf.random.stateless_uniform(shape, seed=seed, dtype=real.dtype)
    return weights * real + (1 - weights) * tf.stop_gradient(fake)


class _Discriminated(collections.namedtuple("_Discriminated", ["real_logits", "fake_logits", "logits", "penalty"])):
    """D's logits on one call (`logits`: all rows, for the parameter-scaling factor) and a
    zero-argument `penalty` that forms the regularizers' value (call it after the factors of
    the backward pass are set: it back-propagates to D's input)."""


def _discriminate(discriminator, real, fake, options):
    """D once on `concat(real, fake[, interpolates])`, augmented; see `_Discriminated`."""
    n = tf.shape(real)[0]
    regularizers = tuple(options.regularizers)
    samples, labels = [real, fake], [options.real_labels, options.fake_labels]
    if any(r.rows == "interpolates" for r in regularizers):
        samples.append(_interpolates(real, fake, options.seed))
        labels.append(options.real_labels)
    x = tf.concat(samples, axis=0)
    labels = None if options.real_labels is None else tf.concat(labels, axis=0)
    inner = tf.GradientTape() if regularizers else contextlib.nullcontext()
    with inner:
        if regularizers:
            inner.watch(x)
        seen = x if options.augment is None else options.augment(x)
        logits = discriminator_logits(discriminator, seen if labels is None else [seen, labels])
        rows = {"real": logits[:n], "interpolates": logits[2 * n :]}
        target = tf.add_n([tf.reduce_sum(rows[r.rows]) for r in regularizers]) if regularizers else None

    def penalty():
        if not regularizers:
            return tf.zeros([], logits.dtype)
        grads = inner.gradient(target, x)
        grads = {"real": grads[:n], "interpolates": grads[2 * n :]}
        return tf.add_n([tf.cast(r(grads[r.rows]), logits.dtype) for r in regularizers])

    return _Discriminated(logits[:n], logits[n : 2 * n], logits, penalty)


def _single_pass(generator, discriminator, real, z, loss, rule, options):
    to_generator = ops.DeferredFactor()
    scaling = ops.ParameterGradientScaling() if rule.may_invert else contextlib.nullcontext()
    with tf.GradientTape() as tape:
        # Cast first: under mixed precision the factor then meets D's float32 input gradient,
        # and only the product (G's own gradient) is rounded to G's narrower dtype.
        fake = tf.cast(_generate(generator, z, options.fake_labels), real.dtype)
        if rule.may_fuse:
            fake = ops.scale_gradient(fake, to_generator)
        with scaling:
            d = _discriminate(discriminator, real, fake, options)
        y = tf.stop_gradient(d.fake_logits)
        fused = rule.fused(loss, y)
        ones = tf.ones_like(y)
        if rule.may_fuse:
            to_generator.set(tf.where(fused, loss.lambda_(y), ones))
        if rule.may_invert:  # 1 for real samples (and interpolates), lambda_inv for inverse fake ones
            n = tf.shape(real)[0]
            rest = tf.ones_like(d.logits[2 * n :])
            scaling.set(
                tf.concat([tf.ones_like(d.real_logits), tf.where(fused, ones, loss.lambda_inv(y)), rest], axis=0)
            )
        real_term = tf.reduce_mean(loss.d_real(d.real_logits)) + d.penalty()
        d_fake_values, g_values = loss.d_fake(d.fake_logits), loss.g(d.fake_logits)
        objective = real_term + tf.reduce_mean(tf.where(fused, d_fake_values, g_values))
    variables = (discriminator.trainable_variables, generator.trainable_variables)
    d_grads, g_grads = _gradient(tape, objective, variables, options.loss_scale)
    d_loss = real_term + tf.reduce_mean(d_fake_values)
    return StepResult(d_grads, g_grads, d_loss, tf.reduce_mean(g_values), d.real_logits, d.fake_logits)


def _two_pass(generator, discriminator, real, z, loss, options):
    with tf.GradientTape(persistent=True) as tape:
        fake = tf.cast(_generate(generator, z, options.fake_labels), real.dtype)
        d = _discriminate(discriminator, real, fake, options)
        d_loss = tf.reduce_mean(loss.d_real(d.real_logits)) + d.penalty() + tf.reduce_mean(loss.d_fake(d.fake_logits))
        g_loss = tf.reduce_mean(loss.g(d.fake_logits))
    d_grads = _gradient(tape, d_loss, discriminator.trainable_variables, options.loss_scale)
    g_grads = _gradient(tape, g_loss, generator.trainable_variables, options.loss_scale)
    del tape
    return StepResult(d_grads, g_grads, d_loss, g_loss, d.real_logits, d.fake_logits)


def simgd_step(
    generator, discriminator, real, z, loss="nonsaturating", form="fused", *, options=None, check_independence=True
):
    """Runs one simultaneous step's forward and backward passes; returns a `StepResult`.

    Same contract as `compute_gradients`, with the losses and logits returned as well;
    `options` is a `StepOptions` (labels, augmentation, regularizers, loss scale). `d_loss`
    includes the regularizers' penalty; the reported losses are never loss-scaled.
    """
    loss = check_form(loss, form)
    options = StepOptions() if options is None else options
    if form == "alternating":
        raise ValueError(
            "compute_gradients computes one simultaneous step; form='alternating' alternates "
            "updates and is a training loop: use tf_fusedprop.FusedPropGAN(form='alternating') "
            "or discriminator_step and generator_step."
        )
    check_discriminator(discriminator, form)
    if check_independence and form in SINGLE_PASS_FORMS:
        probe = probe_batch(generator, z.shape[1:], z.dtype, labels=options.fake_labels)
        if probe is not None:
            check_sample_independence(discriminator, probe, form)
    if form == "simultaneous":
        return _two_pass(generator, discriminator, real, z, loss, options)
    return _single_pass(generator, discriminator, real, z, loss, _rule(form, loss), options)


def compute_gradients(
    generator,
    discriminator,
    real,
    z,
    loss="nonsaturating",
    form="fused",
    *,
    real_labels=None,
    fake_labels=None,
    augment=None,
    regularizers=(),
    seed=None,
    check_independence=True,
):
    """Both players' gradients for one simultaneous gradient-descent (SimGD) step.

    D's objective is `mean(d_real(D(real))) + mean(d_fake(D(G(z))))` plus the regularizers'
    penalties, G's is `mean(g(D(G(z))))`, both at the current parameters; G and D are called
    with `training=True`. D is called once on `concat(real, G(z)[, interpolates])`.

    Args:
      generator: a Keras model mapping latents `z` (and labels) to samples.
      discriminator: a Keras model mapping samples (and labels) to one logit per sample.
      real: a batch of real samples, same batch size as `z`.
      z: a batch of latents.
      loss: a loss name (`tf_fusedprop.losses.names()`) or `GANLoss`.
      form: "fused", "inverse", "adaptive" (single pass) or "simultaneous" (two backward
        passes, the reference).
      real_labels, fake_labels: `[batch]` int labels for a conditional G and D (both or none):
        G gets `[z, fake_labels]`, D gets `[samples, labels]`.
      augment: a differentiable per-sample map applied to D's whole input batch (DiffAugment).
      regularizers: D's gradient penalties (`tf_fusedprop.regularizers.R1`, `GradientPenalty`).
      seed: a `[2]` int seed of the interpolation weights of `GradientPenalty`.
      check_independence: for the single-pass forms, probe D once (per discriminator object)
        for cross-sample coupling (`check_sample_independence`), which would make their
        gradients wrong. Pass False only for a D you know to be per-sample.

    Returns:
      `(d_grads, g_grads)`, lists aligned with `discriminator.trainable_variables` and
      `generator.trainable_variables`.

    Raises:
      ValueError: unknown loss or form, a (loss, form) pair the loss does not support
        (hinge with "fused"), or a discriminator the form cannot handle exactly.
    """
    options = StepOptions(real_labels, fake_labels, augment, tuple(regularizers), seed)
    result = simgd_step(
        generator, discriminator, real, z, loss=loss, form=form, options=options, check_independence=check_independence
    )
    return result.d_grads, result.g_grads


def discriminator_step(generator, discriminator, real, z, loss="nonsaturating", *, options=None):
    """D's gradients of a conventional (alternating) D step; returns a `DiscriminatorStep`.

    G runs forward only (no tape records it); D runs once on `concat(real, G(z)[,
    interpolates])` and its loss `mean(d_real) + mean(d_fake)` plus the regularizers' penalty
    is differentiated with respect to D's variables. `options`: a `StepOptions`.
    """
    loss = fp_losses.get(loss)
    options = StepOptions() if options is None else options
    fake = tf.stop_gradient(tf.cast(_generate(generator, z, options.fake_labels), real.dtype))
    with tf.GradientTape() as tape:
        d = _discriminate(discriminator, real, fake, options)
        d_loss = tf.reduce_mean(loss.d_real(d.real_logits)) + d.penalty() + tf.reduce_mean(loss.d_fake(d.fake_logits))
    d_grads = _gradient(tape, d_loss, discriminator.trainable_variables, options.loss_scale)
    return DiscriminatorStep(d_grads, d_loss, d.real_logits, d.fake_logits)


def generator_step(generator, discriminator, z, loss="nonsaturating", discriminator_gradients=False, *, options=None):
    """G's gradients of a conventional (alternating) G step; returns a `GeneratorStep`.

    By default only G's variables are differentiated, so TensorFlow forms D's input gradients
    but not its parameter gradients (the efficient baseline). With
    `discriminator_gradients=True` D's parameter gradients of G's loss are formed and returned
    too, as a conventional step in PyTorch does (the paper's baseline); a caller that wants
    their cost must consume them, since a graph prunes gradients nobody reads. `options`: a
    `StepOptions` (its `fake_labels`, `augment` and `loss_scale` apply; G's loss has no
    regularizer).
    """
    loss = fp_losses.get(loss)
    options = StepOptions() if options is None else options
    with tf.GradientTape() as tape:
        fake = _generate(generator, z, options.fake_labels)
        seen = fake if options.augment is None else options.augment(fake)
        inputs = seen if options.fake_labels is None else [seen, options.fake_labels]
        g_loss = tf.reduce_mean(loss.g(discriminator_logits(discriminator, inputs)))
    g_vars = generator.trainable_variables
    if not discriminator_gradients:
        return GeneratorStep(_gradient(tape, g_loss, g_vars, options.loss_scale), g_loss, None)
    grads = _gradient(tape, g_loss, g_vars + discriminator.trainable_variables, options.loss_scale)
    return GeneratorStep(grads[: len(g_vars)], g_loss, grads[len(g_vars) :])
