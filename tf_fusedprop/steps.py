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


def _single_pass(generator, discriminator, real, z, loss, rule):
    n = tf.shape(real)[0]
    to_generator = ops.DeferredFactor()
    scaling = ops.ParameterGradientScaling() if rule.may_invert else contextlib.nullcontext()
    with tf.GradientTape() as tape:
        fake = generator(z, training=True)
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
    d_grads, g_grads = tape.gradient(objective, (discriminator.trainable_variables, generator.trainable_variables))
    d_loss = real_term + tf.reduce_mean(d_fake_values)
    return StepResult(d_grads, g_grads, d_loss, tf.reduce_mean(g_values), real_logits, fake_logits)


def _two_pass(generator, discriminator, real, z, loss):
    n = tf.shape(real)[0]
    with tf.GradientTape(persistent=True) as tape:
        fake = generator(z, training=True)
        logits = discriminator_logits(discriminator, _concat_samples(real, fake))
        real_logits, fake_logits = logits[:n], logits[n:]
        d_loss = tf.reduce_mean(loss.d_real(real_logits)) + tf.reduce_mean(loss.d_fake(fake_logits))
        g_loss = tf.reduce_mean(loss.g(fake_logits))
    d_grads = tape.gradient(d_loss, discriminator.trainable_variables)
    g_grads = tape.gradient(g_loss, generator.trainable_variables)
    del tape
    return StepResult(d_grads, g_grads, d_loss, g_loss, real_logits, fake_logits)


def simgd_step(generator, discriminator, real, z, loss="nonsaturating", form="fused"):
    """Runs one simultaneous step's forward and backward passes; returns a `StepResult`.

    Same contract as `compute_gradients`, with the losses and logits returned as well.
    """
    loss = check_form(loss, form)
    if form == "alternating":
        raise ValueError(
            "compute_gradients computes one simultaneous step; form='alternating' alternates "
            "updates and is a training loop: use tf_fusedprop.FusedPropGAN(form='alternating') "
            "or discriminator_step and generator_step."
        )
    check_discriminator(discriminator, form)
    if form == "simultaneous":
        return _two_pass(generator, discriminator, real, z, loss)
    return _single_pass(generator, discriminator, real, z, loss, _rule(form, loss))


def compute_gradients(generator, discriminator, real, z, loss="nonsaturating", form="fused"):
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

    Returns:
      `(d_grads, g_grads)`, lists aligned with `discriminator.trainable_variables` and
      `generator.trainable_variables`.

    Raises:
      ValueError: unknown loss or form, a (loss, form) pair the loss does not support
        (hinge with "fused"), or a discriminator the form cannot handle exactly.
    """
    result = simgd_step(generator, discriminator, real, z, loss=loss, form=form)
    return result.d_grads, result.g_grads


def discriminator_step(generator, discriminator, real, z, loss="nonsaturating"):
    """D's gradients of a conventional (alternating) D step; returns a `DiscriminatorStep`.

    G runs forward only (no tape records it); D runs once on `concat(real, G(z))` and its loss
    `mean(d_real) + mean(d_fake)` is differentiated with respect to D's variables.
    """
    loss = fp_losses.get(loss)
    fake = tf.stop_gradient(generator(z, training=True))
    with tf.GradientTape() as tape:
        logits = discriminator_logits(discriminator, _concat_samples(real, fake))
        real_logits, fake_logits = tf.split(logits, 2)
        d_loss = tf.reduce_mean(loss.d_real(real_logits)) + tf.reduce_mean(loss.d_fake(fake_logits))
    return DiscriminatorStep(tape.gradient(d_loss, discriminator.trainable_variables), d_loss, real_logits, fake_logits)


def generator_step(generator, discriminator, z, loss="nonsaturating", discriminator_gradients=False):
    """G's gradients of a conventional (alternating) G step; returns a `GeneratorStep`.

    By default only G's variables are differentiated, so TensorFlow forms D's input gradients
    but not its parameter gradients (the efficient baseline). With
    `discriminator_gradients=True` D's parameter gradients of G's loss are formed and returned
    too, as a conventional step in PyTorch does (the paper's baseline); a caller that wants
    their cost must consume them, since a graph prunes gradients nobody reads.
    """
    loss = fp_losses.get(loss)
    with tf.GradientTape() as tape:
        logits = discriminator_logits(discriminator, generator(z, training=True))
        g_loss = tf.reduce_mean(loss.g(logits))
    g_vars = generator.trainable_variables
    if not discriminator_gradients:
        return GeneratorStep(tape.gradient(g_loss, g_vars), g_loss, None)
    grads = tape.gradient(g_loss, g_vars + discriminator.trainable_variables)
    return GeneratorStep(grads[: len(g_vars)], g_loss, grads[len(g_vars) :])
