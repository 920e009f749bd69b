"""One simultaneous (SimGD) step's gradients for both players, by every form.

All single-pass forms run G once, D once on `concat(real, fake)`, and ONE backward pass:

* `fused` (FusedProp): backpropagate `mean(L_D^R) + mean(L_D)`; a `scale_gradient` identity
  between G and D multiplies the gradient reaching each fake sample by `lambda`.
* `inverse` (InvFusedProp): backpropagate `mean(L_D^R) + mean(L_G)`; inside D's layers the
  upstream gradient of each fake sample is multiplied by `lambda_inv` before the parameter
  gradients are formed.
* `adaptive`: per fake sample, the fused form where `|lambda| <= 1`, the inverse form elsewhere.

The three are one mechanism: a per-sample mask `fused` selects, for each fake sample, which
loss term is backpropagated and which factor is applied where. `simultaneous` is the two-pass
reference (same forward, one backward per player).
"""

import collections

import keras
import tensorflow as tf

from tf_fusedprop import layers as fp_layers
from tf_fusedprop import losses as fp_losses
from tf_fusedprop import ops

__all__ = ["StepResult", "check_discriminator", "compute_gradients", "discriminator_logits", "simgd_step"]

SINGLE_PASS_FORMS = ("fused", "inverse", "adaptive")


StepResult = collections.namedtuple(
    "StepResult", ["d_grads", "g_grads", "d_loss", "g_loss", "real_logits", "fake_logits"]
)
StepResult.__doc__ = """Gradients and diagnostics of one simultaneous step.

`d_grads`/`g_grads` align with the players' `trainable_variables`; `d_loss` is
`mean(d_real) + mean(d_fake)`, `g_loss` is `mean(g)`; logits are D's outputs (at least float32)."""


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
    for layer in discriminator._flatten_layers(include_self=True):
        if isinstance(layer, keras.layers.BatchNormalization):
            raise ValueError(
                f"form={form!r} needs a discriminator that treats samples independently, but "
                f"it contains the BatchNormalization layer {layer.name!r}. Remove it (use "
                "spectral_norm=True in tf_fusedprop.layers instead) or use "
                "form='simultaneous' or form='alternating'."
            )
        if form != "fused" and _own_trainable_weights(layer) and not fp_layers.supports_parameter_gradient_scaling(layer):
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


def simgd_step(generator, discriminator, real, z, loss="nonsaturating", form="fused"):
    """Runs one simultaneous step's forward and backward passes; returns a `StepResult`.

    Same contract as `compute_gradients`, with the losses and logits returned as well.
    """
    loss = fp_losses.check_form(loss, form)
    if form == "alternating":
        raise ValueError(
            "compute_gradients computes one simultaneous step; form='alternating' alternates "
            "updates and is a training loop: use tf_fusedprop.FusedPropGAN(form='alternating')."
        )
    if form == "adaptive" and not loss.has_lambda:
        form = "inverse"  # no sample can prefer the fused form
    check_discriminator(discriminator, form)
    d_vars = discriminator.trainable_variables
    g_vars = generator.trainable_variables
    n = tf.shape(real)[0]

    if form == "simultaneous":
        with tf.GradientTape(persistent=True) as tape:
            fake = generator(z, training=True)
            logits = discriminator_logits(discriminator, tf.concat([real, tf.cast(fake, real.dtype)], axis=0))
            real_logits, fake_logits = logits[:n], logits[n:]
            d_loss = tf.reduce_mean(loss.d_real(real_logits)) + tf.reduce_mean(loss.d_fake(fake_logits))
            g_loss = tf.reduce_mean(loss.g(fake_logits))
        d_grads = tape.gradient(d_loss, d_vars)
        g_grads = tape.gradient(g_loss, g_vars)
        del tape
        return StepResult(d_grads, g_grads, d_loss, g_loss, real_logits, fake_logits)

    # `fused` holds, per fake sample, whether the fused form is used; it is known only after
    # D's forward, so the factors are handed to the backward pass through callables.
    masks = {}

    def fake_input_scale():  # lambda where fused, 1 where inverse
        y = masks["fake_logits"]
        return tf.where(masks["fused"], loss.lambda_(y), tf.ones_like(y)) if form == "adaptive" else loss.lambda_(y)

    def d_parameter_scale():  # 1 for real samples and fused fake samples, lambda_inv elsewhere
        y = masks["fake_logits"]
        inv = loss.lambda_inv(y)
        if form == "adaptive":
            inv = tf.where(masks["fused"], tf.ones_like(y), inv)
        return tf.concat([tf.ones_like(masks["real_logits"]), inv], axis=0)

    with tf.GradientTape() as tape:
        fake = generator(z, training=True)
        if form != "inverse":
            fake = ops.scale_gradient(fake, fake_input_scale)
        x = tf.concat([real, tf.cast(fake, real.dtype)], axis=0)
        if form == "fused":
            logits = discriminator_logits(discriminator, x)
        else:
            with ops.parameter_gradient_scaling() as holder:
                logits = discriminator_logits(discriminator, x)
            holder.set(d_parameter_scale)
        real_logits, fake_logits = logits[:n], logits[n:]
        y = tf.stop_gradient(fake_logits)
        masks.update(real_logits=real_logits, fake_logits=y)
        real_term = tf.reduce_mean(loss.d_real(real_logits))
        d_fake_values, g_values = loss.d_fake(fake_logits), loss.g(fake_logits)
        if form == "fused":
            fake_values = d_fake_values
        elif form == "inverse":
            fake_values = g_values
        else:
            masks["fused"] = loss.prefers_fused(y)
            fake_values = tf.where(masks["fused"], d_fake_values, g_values)
        objective = real_term + tf.reduce_mean(fake_values)
    d_grads, g_grads = tape.gradient(objective, (d_vars, g_vars))
    d_loss = real_term + tf.reduce_mean(d_fake_values)
    g_loss = tf.reduce_mean(g_values)
    return StepResult(d_grads, g_grads, d_loss, g_loss, real_logits, fake_logits)


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
