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
        if scales_parameters and _own_trainable_weights(layer) and not fp_layers.supports_parameter_gradient_scaling(layer):
            raise ValueError(
                f"form={form!r} needs every trainable layer of the discriminator to be "
                f"InvFusedProp-capable, but layer {layer.name!r} is a "
                f"{type(layer).__module__}.{type(layer).__name__}. Build D from "
                "tf_fusedprop.layers.Dense / Conv2D, or use form='fused' (not with hinge) "
                "or form='simultaneous'."
            )


#: Largest |d D(x)_j / d x_i| (j != i) relative to |d D(x)_i / d x_i| accepted as independent.
INDEPENDENCE_TOLERANCE = 1e-4


def sample_coupling(discriminator, x):
    """How much D's outputs for the other samples move when sample 0 of `x` changes.

    Two training-mode forward passes of D, on `x` (at least 2 samples) and on `x` with its
    first sample replaced by noise, from the same state (spectral-norm vectors, batch
    statistics and random-seed states are restored before each pass and after, so dropout
    masks repeat): the largest change of the other samples' outputs relative to the change of
    sample 0's. It is 0 for a D that treats samples independently, and clearly positive for
    any cross-sample layer (batch statistics, a subtracted batch mean, minibatch std...).
    """
    x = tf.convert_to_tensor(x)
    state = [(v, tf.identity(v)) for v in discriminator.non_trainable_variables]

    def restore():
        for variable, value in state:
            variable.assign(value)

    def outputs(inputs):
        restore()
        return tf.cast(tf.reshape(discriminator(inputs, training=True), [-1]), tf.float64)

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


def check_sample_independence(discriminator, x, form):
    """Raises ValueError if D's outputs for one sample depend on the other samples of `x`.

    The single-pass forms are exact only for a D that treats samples independently; this is
    the numerical probe behind that requirement (`sample_coupling`), run eagerly once per
    discriminator (later calls return at once). `x` is a batch of at least 2 inputs of D.
    """
    if form not in SINGLE_PASS_FORMS or _independent.get(discriminator):
        return
    with tf.init_scope():  # eager, also when called while tracing a tf.function
        coupling = sample_coupling(discriminator, tf.convert_to_tensor(x))
    if coupling > INDEPENDENCE_TOLERANCE:
        raise ValueError(
            f"form={form!r} needs a discriminator that treats samples independently, but "
            f"{discriminator.name!r} mixes them: its output for one sample moves when another "
            f"sample changes (relative coupling {coupling:.2g}; a batch-statistics layer, batch "
            "mean or minibatch std?). Make D per-sample, use form='simultaneous' or "
            "'alternating', or pass check_independence=False if you know better."
        )
    _independent[discriminator] = True


def probe_batch(generator, latent_shape, dtype=tf.float32):
    """A small batch of D inputs for `check_sample_independence`: G's inference-mode output
    on 4 random latents of `latent_shape` (None when that shape is not fully known)."""
    latent_shape = tf.TensorShape(latent_shape)
    if not latent_shape.is_fully_defined():
        return None
    with tf.init_scope():
        latents = tf.random.stateless_normal([4] + latent_shape.as_list(), seed=[3, 5], dtype=dtype)
        samples = generator(latents, training=False)
        return tf.cast(samples, tf.float32) if samples.dtype.size < 4 else samples


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


def _concat_samples(real, fake):
    return tf.concat([real, tf.cast(fake, real.dtype)], axis=0)


def _gradient(tape, objective, sources, loss_scale):
    """`tape.gradient(objective * loss_scale, sources)`: the scale seeds the backward pass."""
    seed = None if loss_scale is None else tf.cast(loss_scale, objective.dtype)
    return tape.gradient(objective, sources, output_gradients=seed)


def _single_pass(generator, discriminator, real, z, loss, rule, loss_scale):
    n = tf.shape(real)[0]
    to_generator = ops.DeferredFactor()
    scaling = ops.ParameterGradientScaling() if rule.may_invert else contextlib.nullcontext()
    with tf.GradientTape() as tape:
        # Cast first: under mixed precision the factor then meets D's float32 input gradient,
        # and only the product (G's own gradient) is rounded to G's narrower dtype.
        fake = tf.cast(generator(z, training=True), real.dtype)
        if rule.may_fuse:
            fake = ops.scale_gradient(fake, to_generator)
        with scaling:
            logits = discriminator_logits(discriminator, _concat_samples(real, fake))
        real_logits, fake_logits = logits[:n], logits[n:]
        y = tf.stop_gradient(fake_logits)
        fused = rule.fused(loss, y)
        ones = tf.ones_like(y)
        if rule.may_fuse:
            to_generator.set(tf.where(fused, loss.lambda_(y), ones))
        if rule.may_invert:
            scaling.set(tf.concat([tf.ones_like(real_logits), tf.where(fused, ones, loss.lambda_inv(y))], axis=0))
        real_term = tf.reduce_mean(loss.d_real(real_logits))
        d_fake_values, g_values = loss.d_fake(fake_logits), loss.g(fake_logits)
        objective = real_term + tf.reduce_mean(tf.where(fused, d_fake_values, g_values))
    d_grads, g_grads = _gradient(tape, objective, (discriminator.trainable_variables, generator.trainable_variables), loss_scale)
    d_loss = real_term + tf.reduce_mean(d_fake_values)
    return StepResult(d_grads, g_grads, d_loss, tf.reduce_mean(g_values), real_logits, fake_logits)


def _two_pass(generator, discriminator, real, z, loss, loss_scale):
    n = tf.shape(real)[0]
    with tf.GradientTape(persistent=True) as tape:
        fake = generator(z, training=True)
        logits = discriminator_logits(discriminator, _concat_samples(real, fake))
        real_logits, fake_logits = logits[:n], logits[n:]
        d_loss = tf.reduce_mean(loss.d_real(real_logits)) + tf.reduce_mean(loss.d_fake(fake_logits))
        g_loss = tf.reduce_mean(loss.g(fake_logits))
    d_grads = _gradient(tape, d_loss, discriminator.trainable_variables, loss_scale)
    g_grads = _gradient(tape, g_loss, generator.trainable_variables, loss_scale)
    del tape
    return StepResult(d_grads, g_grads, d_loss, g_loss, real_logits, fake_logits)


def simgd_step(generator, discriminator, real, z, loss="nonsaturating", form="fused", *, check_independence=True,
               loss_scale=None):
    """Runs one simultaneous step's forward and backward passes; returns a `StepResult`.

    Same contract as `compute_gradients`, with the losses and logits returned as well. With a
    `loss_scale` (a float32 scalar, for mixed_float16's loss scaling) the objectives are
    multiplied by it before the backward pass, so the gradients come back multiplied by it;
    the reported losses are not scaled.
    """
    loss = check_form(loss, form)
    if form == "alternating":
        raise ValueError(
            "compute_gradients computes one simultaneous step; form='alternating' alternates "
            "updates and is a training loop: use tf_fusedprop.FusedPropGAN(form='alternating') "
            "or discriminator_step and generator_step."
        )
    check_discriminator(discriminator, form)
    if check_independence and form in SINGLE_PASS_FORMS:
        probe = probe_batch(generator, z.shape[1:], z.dtype)
        if probe is not None:
            check_sample_independence(discriminator, probe, form)
    if form == "simultaneous":
        return _two_pass(generator, discriminator, real, z, loss, loss_scale)
    return _single_pass(generator, discriminator, real, z, loss, _rule(form, loss), loss_scale)


def compute_gradients(generator, discriminator, real, z, loss="nonsaturating", form="fused", *, check_independence=True):
    """Both players' gradients for one simultaneous gradient-descent (SimGD) step.

    D's objective is `mean(d_real(D(real))) + mean(d_fake(D(G(z))))`, G's is
    `mean(g(D(G(z))))`, both at the current parameters; G and D are called with
    `training=True`. D is called once on `concat(real, G(z))`.

    Args:
      generator: a Keras model mapping latents `z` to samples.
      discriminator: a Keras model mapping samples to one logit per sample.
      real: a batch of real samples, same batch size as `z`.
      z: a batch of latents.
      loss: a loss name (`tf_fusedprop.losses.names()`) or `GANLoss`.
      form: "fused", "inverse", "adaptive" (single pass) or "simultaneous" (two backward
        passes, the reference).
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
    result = simgd_step(generator, discriminator, real, z, loss=loss, form=form, check_independence=check_independence)
    return result.d_grads, result.g_grads


def discriminator_step(generator, discriminator, real, z, loss="nonsaturating", *, loss_scale=None):
    """D's gradients of a conventional (alternating) D step; returns a `DiscriminatorStep`.

    G runs forward only (no tape records it); D runs once on `concat(real, G(z))` and its loss
    `mean(d_real) + mean(d_fake)` is differentiated with respect to D's variables (multiplied
    by `loss_scale` first, if given).
    """
    loss = fp_losses.get(loss)
    fake = tf.stop_gradient(generator(z, training=True))
    with tf.GradientTape() as tape:
        logits = discriminator_logits(discriminator, _concat_samples(real, fake))
        real_logits, fake_logits = tf.split(logits, 2)
        d_loss = tf.reduce_mean(loss.d_real(real_logits)) + tf.reduce_mean(loss.d_fake(fake_logits))
    d_grads = _gradient(tape, d_loss, discriminator.trainable_variables, loss_scale)
    return DiscriminatorStep(d_grads, d_loss, real_logits, fake_logits)


def generator_step(generator, discriminator, z, loss="nonsaturating", discriminator_gradients=False, *,
                   loss_scale=None):
    """G's gradients of a conventional (alternating) G step; returns a `GeneratorStep`.

    By default only G's variables are differentiated, so TensorFlow forms D's input gradients
    but not its parameter gradients (the efficient baseline). With
    `discriminator_gradients=True` D's parameter gradients of G's loss are formed and returned
    too, as a conventional step in PyTorch does (the paper's baseline); a caller that wants
    their cost must consume them, since a graph prunes gradients nobody reads. `loss_scale`
    multiplies G's loss before the backward pass.
    """
    loss = fp_losses.get(loss)
    with tf.GradientTape() as tape:
        logits = discriminator_logits(discriminator, generator(z, training=True))
        g_loss = tf.reduce_mean(loss.g(logits))
    g_vars = generator.trainable_variables
    if not discriminator_gradients:
        return GeneratorStep(_gradient(tape, g_loss, g_vars, loss_scale), g_loss, None)
    grads = _gradient(tape, g_loss, g_vars + discriminator.trainable_variables, loss_scale)
    return GeneratorStep(grads[: len(g_vars)], g_loss, grads[len(g_vars) :])
