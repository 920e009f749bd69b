"""The training forms: the gradients of one step of each, for both players.

| form | passes | what one step back-propagates |
|---|---|---|
| `fused` | 1 fwd + 1 bwd | FusedProp: D's loss; a `scale_gradient` between G and D turns each fake sample's gradient into G's by `lambda` |
| `inverse` | 1 fwd + 1 bwd | InvFusedProp: real samples' D loss plus G's loss; inside D's layers each fake sample's parameter gradient is scaled by `lambda_inv` |
| `adaptive` | 1 fwd + 1 bwd | per fake sample, whichever of the two has a factor of magnitude <= 1 |
| `simultaneous` | 1 fwd + 2 bwd | two-pass SimGD, the reference |
| `alternating` | 2 fwd + 2 bwd | conventional AltGD: `discriminator_step`, then `generator_step` with fresh latents |

The three single-pass forms are one code path (`single_pass_step`): after D's forward pass a
boolean per fake sample says whether that sample is back-propagated through D's fake loss (fused)
or through G's loss (inverse); both factors and the back-propagated term follow from it. A form
is only the rule that picks it (`SinglePassRule`: `FUSED`, `INVERSE` or `ADAPTIVE`): all fused,
all inverse, or `loss.prefers_fused`. The forms by name, and the name-taking `simgd_step` and
`compute_gradients`, are `tf_fusedprop.forms`'s: this module knows rules, not names.
"""

import collections
import contextlib
import weakref

import keras
import tensorflow as tf

from tf_fusedprop import layers as fp_layers
from tf_fusedprop import losses as fp_losses
from tf_fusedprop import ops
from tf_fusedprop.batch import Batch

__all__ = [
    "ADAPTIVE",
    "FUSED",
    "INVERSE",
    "SINGLE_PASS_RULES",
    "Batch",
    "DiscriminatorStep",
    "GeneratorStep",
    "SinglePassRule",
    "StepOptions",
    "StepResult",
    "check_discriminator",
    "check_sample_independence",
    "coverage",
    "discriminator_logits",
    "discriminator_probe",
    "discriminator_step",
    "generator_step",
    "layers_of",
    "probe_batch",
    "single_pass_step",
    "spread",
    "spread_ratio",
    "two_pass_step",
]


StepResult = collections.namedtuple(
    "StepResult",
    ["d_grads", "g_grads", "d_loss", "g_loss", "real_logits", "fake_logits", "fake_spread", "fake_coverage"],
)
StepResult.__doc__ = """Gradients and diagnostics of one simultaneous step.

`d_grads`/`g_grads` align with the players' `trainable_variables`; `d_loss` is
`mean(d_real) + mean(d_fake)`, `g_loss` is `mean(g)`; logits are D's outputs (at least float32);
`fake_spread` is `spread_ratio(fake, real)` and `fake_coverage` `coverage(fake, real)` of the
step's samples."""

DiscriminatorStep = collections.namedtuple(
    "DiscriminatorStep", ["d_grads", "d_loss", "real_logits", "fake_logits", "fake_spread", "fake_coverage"]
)
DiscriminatorStep.__doc__ = """D's gradients of a conventional D step, its loss, D's logits,
`spread_ratio(fake, real)` and `coverage(fake, real)` of the step's samples."""

GeneratorStep = collections.namedtuple("GeneratorStep", ["g_grads", "g_loss", "d_grads"])
GeneratorStep.__doc__ = """G's gradients of a conventional G step and its loss; `d_grads` are D's
parameter gradients of G's loss when asked for (paper-style baseline), else None."""


def _children(layer):
    """The layers directly inside `layer`, found by public means: a model's `layers`, else the
    layers (and lists, tuples and dicts of layers) among its attributes."""
    if isinstance(layer, keras.Model):
        return list(layer.layers)
    found = []
    for value in vars(layer).values():
        items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else [value]
        found.extend(item for item in items if isinstance(item, keras.layers.Layer))
    return found


def layers_of(model):
    """`model` and every layer nested in it, each once, parents before children."""
    seen, order, pending = set(), [], [model]
    while pending:
        layer = pending.pop(0)
        if id(layer) not in seen:
            seen.add(id(layer))
            order.append(layer)
            pending.extend(_children(layer))
    return order


def _own_trainable_weights(layer):
    nested = {id(w) for child in _children(layer) for w in child.trainable_weights}
    return [w for w in layer.trainable_weights if id(w) not in nested]


def check_discriminator(discriminator, rule):
    """Raises ValueError if `discriminator` cannot be trained exactly with the single-pass `rule`.

    Single-pass forms need D to treat samples independently (no BatchNormalization: the
    per-sample factors would not give the SimGD gradients). The inverse and adaptive forms also
    need every layer that owns trainable weights to be InvFusedProp-capable
    (`tf_fusedprop.layers`), otherwise its gradients would silently be wrong.
    """
    form, scales_parameters = rule.name, rule.may_invert
    for layer in layers_of(discriminator):
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
            kind = type(layer).__name__
            replacement = (
                f"use tf_fusedprop.layers.{kind} instead"
                if hasattr(fp_layers, kind) and kind in fp_layers.__all__
                else "build D from tf_fusedprop.layers.Dense / Conv2D / Embedding"
            )
            raise ValueError(
                f"form={form!r} needs every trainable layer of the discriminator to be "
                f"InvFusedProp-capable, but layer {layer.name!r} is a {_public_name(type(layer))}: "
                f"{replacement}, or use form='fused' (not with hinge) or form='simultaneous'."
            )


def _public_name(kind):
    """`keras.layers.Dense` for Keras's own layer classes (not `keras.src....`), else `module.Class`."""
    if getattr(keras.layers, kind.__name__, None) is kind:
        return f"keras.layers.{kind.__name__}"
    return f"{kind.__module__}.{kind.__name__}"


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
    if _independent.get(discriminator):
        return
    with tf.init_scope():  # eager, also when called while tracing a tf.function
        coupling = sample_coupling(discriminator, x)
    if coupling > INDEPENDENCE_TOLERANCE:
        raise ValueError(
            f"form={form!r} needs a discriminator that treats samples independently, but "
            f"{discriminator.name!r} mixes them: its output for one sample moves when another "
            f"sample changes (relative coupling {coupling:.2g}; a batch-statistics layer, batch "
            "mean or minibatch std?). Make D per-sample, use form='simultaneous' or "
            "'alternating', or pass check_independence=False (compute_gradients, forms.SinglePass) if you "
            "know better."
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
        inputs = latents if labels is None else [latents, tf.zeros([4], labels.dtype)]
    return discriminator_probe(generator, inputs)


@tf.autograph.experimental.do_not_convert  # eager Python, also when called while tracing
def discriminator_probe(generator, generator_inputs):
    """D's inputs made by G (inference mode) from `generator_inputs` (`z`, or `[z, labels]`):
    samples, or `[samples, labels]`; at least float32."""
    with tf.init_scope():
        conditional = isinstance(generator_inputs, (list, tuple))
        samples = generator(generator_inputs, training=False)
        samples = tf.cast(samples, tf.float32) if samples.dtype.size < 4 else samples
        return [samples, generator_inputs[1]] if conditional else samples


def discriminator_logits(discriminator, x):
    """D's training-mode output as a `[batch]` vector, cast up to float32 if narrower."""
    y = tf.reshape(discriminator(x, training=True), [-1])
    # Loss and factor arithmetic stays at least float32 under mixed precision.
    return tf.cast(y, tf.float32) if y.dtype.size < 4 else y


class SinglePassRule(
    collections.namedtuple("SinglePassRule", ["name", "may_fuse", "may_invert", "fused", "needs_lambda"])
):
    """How a single-pass form picks, per fake sample, the term it back-propagates.

    `name` is the form's; `fused(loss, y)` is a boolean per fake logit: True back-propagates D's
    fake loss with `lambda` applied between G and D, False back-propagates G's loss with
    `lambda_inv` applied inside D's layers. `may_fuse` / `may_invert` say statically whether any
    sample can take that path, so that a form never pays for the machinery of the other;
    `needs_lambda`: the rule cannot train a loss without `lambda` (hinge).
    """

    def for_loss(self, loss):
        """The rule that trains `loss`: without `lambda` (hinge) no sample can take the fused
        path, so a rule that may invert inverts every sample."""
        return self if loss.has_lambda or not self.may_invert else INVERSE


def _all(value):
    return lambda loss, y: tf.fill(tf.shape(y), value)


#: FusedProp: every fake sample back-propagates D's fake loss, scaled by `lambda` into G.
FUSED = SinglePassRule("fused", may_fuse=True, may_invert=False, fused=_all(True), needs_lambda=True)
#: InvFusedProp: every fake sample back-propagates G's loss, scaled by `lambda_inv` inside D.
INVERSE = SinglePassRule("inverse", may_fuse=False, may_invert=True, fused=_all(False), needs_lambda=False)
#: Per fake sample, the one whose factor cannot overflow (`loss.prefers_fused`).
ADAPTIVE = SinglePassRule(
    "adaptive", may_fuse=True, may_invert=True, fused=lambda loss, y: loss.prefers_fused(y), needs_lambda=False
)
#: The single-pass rules, in the order the forms list them.
SINGLE_PASS_RULES = (FUSED, INVERSE, ADAPTIVE)


class StepOptions(
    collections.namedtuple("StepOptions", ["augment", "regularizers", "scale_loss"], defaults=(None, (), None))
):
    """What a step adds to the plain GAN objectives; every field is optional.

    * `augment`: a differentiable, per-sample map of D's input batch (e.g. a seeded
      `tf_fusedprop.augment.DiffAugment`), applied to real and fake samples alike before D.
    * `regularizers`: D's gradient penalties (`tf_fusedprop.regularizers`), added to D's
      objective in the same pass; rows of their own (interpolates) join D's one call.
    * `scale_loss`: a function applied to the objective before the backward pass, e.g. a
      `keras.optimizers.LossScaleOptimizer`'s `scale_loss` (mixed_float16); the gradients come
      back multiplied by the loss scale.
    """


def _generate(generator, batch):
    z, labels = batch.z, batch.fake_labels
    return generator(z if labels is None else [z, labels], training=True)


def _scaled(objective, options):
    return objective if options.scale_loss is None else options.scale_loss(objective)


def _gradient(tape, objective, sources):
    """`tape.gradient(objective, sources)`, with sparse gradients (`IndexedSlices` of embedding
    lookups) made dense, so that every gradient can be accumulated, checked and scaled alike."""
    grads = tape.gradient(objective, sources)
    return tf.nest.map_structure(
        lambda g: tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g,
        grads,
        expand_composites=False,
    )


def spread(samples):
    """How far apart a batch's samples are: the mean over features of their standard deviation
    across the batch (float32). 0 when every sample is the same."""
    x = tf.cast(samples, tf.float32)
    x = tf.reshape(x, [tf.shape(x)[0], -1])
    return tf.reduce_mean(tf.math.reduce_std(x, axis=0))


def spread_ratio(fake, real):
    """`spread(fake) / spread(real)`, without gradients: near 0 when G draws one sample for
    every latent (the collapse that FusedProp's early stall shows at 64 px, issue 62), near 1
    when G's samples differ as much as the data's. 0 for a real batch without spread."""
    fake, real = tf.stop_gradient(fake), tf.stop_gradient(real)
    return tf.math.divide_no_nan(spread(fake), spread(real))


#: The neighbour whose distance bounds each real row's ball in `coverage` (Naeem et al. 2020's k).
COVERAGE_NEIGHBOURS = 5


def _squared_distances(a, b):
    """`[len(a), len(b)]` squared Euclidean distances between the rows of `a` and `b` (float32)."""
    a2 = tf.reduce_sum(tf.square(a), axis=1)
    b2 = tf.reduce_sum(tf.square(b), axis=1)
    return tf.maximum(a2[:, None] + b2[None, :] - 2.0 * tf.matmul(a, b, transpose_b=True), 0.0)


def coverage(fake, real, k=COVERAGE_NEIGHBOURS):
    """The share of the real rows that have a fake row nearer than their `k`-th nearest other
    real row (Naeem et al. 2020's coverage, within one batch, in input space), without
    gradients: about `1 - 2^-k` (0.97 for k = 5) when the fake rows are drawn as the real ones
    are, lower by about the share of the batch's real rows in modes G no longer draws (G's
    spread does not see that: a G drawing four digits widely reads a spread of 0.6). `k` is
    clipped to the real rows but one; 0 for fewer than two real rows."""
    fake, real = tf.stop_gradient(fake), tf.stop_gradient(real)
    fake, real = (tf.cast(tf.reshape(x, [tf.shape(x)[0], -1]), tf.float32) for x in (fake, real))
    n = tf.shape(real)[0]
    between_real = tf.linalg.set_diag(_squared_distances(real, real), tf.fill([n], float("inf")))
    k = tf.minimum(k, tf.maximum(n - 1, 1))
    radius = tf.gather(tf.sort(between_real, axis=1), k - 1, axis=1)  # a sort: XLA takes no dynamic top_k
    nearest_fake = tf.reduce_min(_squared_distances(real, fake), axis=1)
    covered = tf.reduce_mean(tf.cast(nearest_fake < radius, tf.float32))
    return tf.where(n > 1, covered, 0.0)


class _Discriminated(
    collections.namedtuple(
        "_Discriminated", ["real_logits", "fake_logits", "logits", "penalty", "fake_spread", "fake_coverage"]
    )
):
    """D's logits on one call (`logits`: all rows, for the parameter-scaling factor), a
    zero-argument `penalty` that forms the regularizers' value (call it after the factors of
    the backward pass are set: it back-propagates to D's input) and the fake samples'
    `spread_ratio` and `coverage` (before augmentation)."""


def _row_blocks(batch, fake, regularizers):
    """D's input blocks `[real, fake, rows of the regularizers...]`, their labels, and for each
    regularizer the index of the block it penalizes (a regularizer that penalizes the real or
    fake samples reuses their rows; its own rows are labelled as the real samples)."""
    blocks, labels, targets = [batch.real, fake], [batch.real_labels, batch.fake_labels], []
    for regularizer in regularizers:
        rows = regularizer.inputs(batch.real, fake)
        index = next((i for i, block in enumerate(blocks) if block is rows), None)
        if index is None:
            blocks.append(rows)
            labels.append(batch.real_labels)
            index = len(blocks) - 1
        targets.append(index)
    return blocks, labels, targets


def _discriminate(discriminator, batch, fake, options):
    """D once on `concat(real, fake[, rows of the regularizers])`, augmented; see `_Discriminated`."""
    n = tf.shape(batch.real)[0]
    regularizers = tuple(options.regularizers)
    blocks, labels, targets = _row_blocks(batch, fake, regularizers)
    x = tf.concat(blocks, axis=0)
    labels = None if batch.real_labels is None else tf.concat(labels, axis=0)
    inner = tf.GradientTape() if regularizers else contextlib.nullcontext()
    with inner:
        if regularizers:
            inner.watch(x)
        seen = x if options.augment is None else options.augment(x)
        logits = discriminator_logits(discriminator, seen if labels is None else [seen, labels])
        target = (
            tf.add_n([tf.reduce_sum(logits[i * n : (i + 1) * n]) for i in sorted(set(targets))]) if targets else None
        )

    def penalty():
        if not regularizers:
            return tf.zeros([], logits.dtype)
        grads = inner.gradient(target, x)
        values = [r(grads[i * n : (i + 1) * n]) for r, i in zip(regularizers, targets)]
        return tf.add_n([tf.cast(value, logits.dtype) for value in values])

    return _Discriminated(
        logits[:n], logits[n : 2 * n], logits, penalty, spread_ratio(fake, batch.real), coverage(fake, batch.real)
    )


def single_pass_step(generator, discriminator, batch, loss, rule, *, options=None):
    """Both players' gradients of one simultaneous step from one forward and one backward pass,
    by the single-pass `rule` (`FUSED`, `INVERSE`, `ADAPTIVE`); returns a `StepResult`.

    `loss` is a `GANLoss` the rule supports (`tf_fusedprop.forms` checks it, and D, once);
    `options` a `StepOptions`. `d_loss` includes the regularizers' penalty; the reported losses
    are never loss-scaled.
    """
    options = StepOptions() if options is None else options
    rule = rule.for_loss(loss)
    to_generator = ops.DeferredFactor()
    scaling = ops.ParameterGradientScaling() if rule.may_invert else contextlib.nullcontext()
    with tf.GradientTape() as tape:
        # Cast first: under mixed precision the factor then meets D's float32 input gradient,
        # and only the product (G's own gradient) is rounded to G's narrower dtype.
        fake = tf.cast(_generate(generator, batch), batch.real.dtype)
        if rule.may_fuse:
            fake = ops.scale_gradient(fake, to_generator)
        with scaling:
            d = _discriminate(discriminator, batch, fake, options)
        y = tf.stop_gradient(d.fake_logits)
        fused = rule.fused(loss, y)
        ones = tf.ones_like(y)
        if rule.may_fuse:
            to_generator.set(tf.where(fused, loss.lambda_(y), ones))
        if rule.may_invert:  # 1 for real samples (and the regularizers' rows), lambda_inv for inverse fake ones
            n = tf.shape(batch.real)[0]
            rest = tf.ones_like(d.logits[2 * n :])
            scaling.set(
                tf.concat([tf.ones_like(d.real_logits), tf.where(fused, ones, loss.lambda_inv(y)), rest], axis=0)
            )
        real_term = tf.reduce_mean(loss.d_real(d.real_logits)) + d.penalty()
        d_fake_values, g_values = loss.d_fake(d.fake_logits), loss.g(d.fake_logits)
        objective = _scaled(real_term + tf.reduce_mean(tf.where(fused, d_fake_values, g_values)), options)
    variables = (discriminator.trainable_variables, generator.trainable_variables)
    d_grads, g_grads = _gradient(tape, objective, variables)
    d_loss = real_term + tf.reduce_mean(d_fake_values)
    return StepResult(
        d_grads, g_grads, d_loss, tf.reduce_mean(g_values), d.real_logits, d.fake_logits, d.fake_spread, d.fake_coverage
    )


def two_pass_step(generator, discriminator, batch, loss, *, options=None):
    """Both players' gradients of one simultaneous step from one forward and two backward passes
    (two-pass SimGD, the reference); returns a `StepResult`, as `single_pass_step`."""
    options = StepOptions() if options is None else options
    with tf.GradientTape(persistent=True) as tape:
        fake = tf.cast(_generate(generator, batch), batch.real.dtype)
        d = _discriminate(discriminator, batch, fake, options)
        d_loss = tf.reduce_mean(loss.d_real(d.real_logits)) + d.penalty() + tf.reduce_mean(loss.d_fake(d.fake_logits))
        g_loss = tf.reduce_mean(loss.g(d.fake_logits))
        scaled_d_loss, scaled_g_loss = _scaled(d_loss, options), _scaled(g_loss, options)
    d_grads = _gradient(tape, scaled_d_loss, discriminator.trainable_variables)
    g_grads = _gradient(tape, scaled_g_loss, generator.trainable_variables)
    del tape
    return StepResult(d_grads, g_grads, d_loss, g_loss, d.real_logits, d.fake_logits, d.fake_spread, d.fake_coverage)


def discriminator_step(generator, discriminator, batch, loss="nonsaturating", *, options=None):
    """D's gradients of a conventional (alternating) D step on a `Batch`; returns a `DiscriminatorStep`.

    G runs forward only (no tape records it); D runs once on `concat(real, G(z)[, rows of the
    regularizers])` and its loss `mean(d_real) + mean(d_fake)` plus the regularizers' penalty
    is differentiated with respect to D's variables. `options`: a `StepOptions`.
    """
    loss = fp_losses.get(loss)
    options = StepOptions() if options is None else options
    fake = tf.stop_gradient(tf.cast(_generate(generator, batch), batch.real.dtype))
    with tf.GradientTape() as tape:
        d = _discriminate(discriminator, batch, fake, options)
        d_loss = tf.reduce_mean(loss.d_real(d.real_logits)) + d.penalty() + tf.reduce_mean(loss.d_fake(d.fake_logits))
        objective = _scaled(d_loss, options)
    d_grads = _gradient(tape, objective, discriminator.trainable_variables)
    return DiscriminatorStep(d_grads, d_loss, d.real_logits, d.fake_logits, d.fake_spread, d.fake_coverage)


def generator_step(
    generator, discriminator, batch, loss="nonsaturating", discriminator_gradients=False, *, options=None
):
    """G's gradients of a conventional (alternating) G step on a `Batch`; returns a `GeneratorStep`.

    Only the batch's `z` and `fake_labels` are read. By default only G's variables are
    differentiated, so TensorFlow forms D's input gradients but not its parameter gradients
    (the efficient baseline). With `discriminator_gradients=True` D's parameter gradients of
    G's loss are formed and returned too, as a conventional step in PyTorch does (the paper's
    baseline); a caller that wants their cost must consume them, since a graph prunes
    gradients nobody reads. `options`: a `StepOptions` (its `augment` and `scale_loss` apply;
    G's loss has no regularizer).
    """
    loss = fp_losses.get(loss)
    options = StepOptions() if options is None else options
    with tf.GradientTape() as tape:
        fake = _generate(generator, batch)
        seen = fake if options.augment is None else options.augment(fake)
        inputs = seen if batch.fake_labels is None else [seen, batch.fake_labels]
        g_loss = tf.reduce_mean(loss.g(discriminator_logits(discriminator, inputs)))
        objective = _scaled(g_loss, options)
    g_vars = generator.trainable_variables
    if not discriminator_gradients:
        return GeneratorStep(_gradient(tape, objective, g_vars), g_loss, None)
    grads = _gradient(tape, objective, g_vars + discriminator.trainable_variables)
    return GeneratorStep(grads[: len(g_vars)], g_loss, grads[len(g_vars) :])
