"""`FusedPropGAN`: a Keras model whose `train_step` updates both players, by every form."""

import keras
import tensorflow as tf

from tf_fusedprop import augment as fp_augment
from tf_fusedprop import export as fp_export
from tf_fusedprop import regularizers as fp_regularizers
from tf_fusedprop import steps
from tf_fusedprop._checks import positive_int
from tf_fusedprop.accumulation import GradientAccumulator
from tf_fusedprop.ema import ExponentialMovingAverage

__all__ = ["FusedPropGAN"]


def _num_replicas():
    return tf.distribute.get_strategy().num_replicas_in_sync


def _latent_dim(generator, latent_dim):
    """The size of z: given, else from G's inputs (functional) or build shape (subclassed)."""
    if latent_dim is not None:
        return positive_int("latent_dim", latent_dim)
    try:
        inputs = generator.inputs
    except AttributeError:  # a subclassed model has no symbolic inputs
        inputs = None
    if inputs:
        return int(inputs[0].shape[-1])
    shapes = list((getattr(generator, "_build_shapes_dict", None) or {}).values())
    if shapes and shapes[0] and shapes[0][-1] is not None:
        return int(shapes[0][-1])
    raise ValueError(
        f"Cannot tell the latent size of generator {getattr(generator, 'name', generator)!r}: it has no "
        "`inputs` (a subclassed model) and no build shape. Pass FusedPropGAN(..., latent_dim=...)."
    )


def _all_finite(tensors):
    return tf.reduce_all([tf.reduce_all(tf.math.is_finite(t)) for t in tensors if t is not None])


def _in_all_replicas(flag):
    """`flag` (a boolean scalar) AND-ed over the replicas of the current strategy."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return flag
    failures = context.all_reduce("sum", tf.cast(tf.logical_not(flag), tf.float32))
    return tf.equal(failures, 0.0)


def _loss_scale_optimizer(optimizer):
    return isinstance(optimizer, keras.optimizers.LossScaleOptimizer)


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class FusedPropGAN(keras.Model):
    """A GAN trained with `fit`; one `train_step` is one update of both players.

    The model orchestrates: it samples latents (and labels), runs the form's step
    (`tf_fusedprop.steps`), accumulates micro-batches, applies both optimizers, updates the
    EMA generator and tracks the metrics. Forms: "fused", "inverse", "adaptive" run one
    forward and one backward pass per step (`steps.simgd_step`); "simultaneous" is two-pass
    SimGD; "alternating" is the conventional baseline: `n_dis` D updates
    (`steps.discriminator_step`, each with a fresh z, the same real batch), then one G update
    with a fresh z (`steps.generator_step`, efficient: TF forms D's input gradients only).

    With `iter_size=k` each batch is split into k micro-batches that are processed one after
    another in a sequential loop; both players' gradients are accumulated
    (`GradientAccumulator`) and each optimizer applies once, so `optimizer.iterations` counts
    updates. A batch whose size is not a multiple of k (e.g. the last, partial batch of an
    epoch) is split into micro-batches that differ by at most one sample, each weighted by its
    size, so the update is still the whole batch's. The latents of a step are drawn once for
    the whole batch and split with it, so the update does not depend on `iter_size` (without
    BatchNorm, and without spectral norm, whose power iteration advances once per D forward,
    i.e. per micro-batch).

    Randomness comes from the model's `keras.random.SeedGenerator`. Under a `tf.distribute`
    strategy the latents (and fake labels) of a step are drawn for the global batch and each
    replica takes its own rows, so replicas differ and N replicas train like one device with
    the global batch, up to the order of float sums, as long as no layer uses batch
    statistics (Keras's BatchNormalization in G normalizes each replica's share on its own,
    as micro-batches do; spectral norm with `iter_size` > 1 advances its power iteration per
    micro-batch, and replicas split the rows differently); augmentation and interpolation
    seeds are folded with the replica id.

    Mixed float16: compile with both optimizers wrapped in `keras.optimizers.LossScaleOptimizer`
    (same `initial_scale` and `dynamic_growth_steps`). A single-pass step back-propagates once,
    so it carries one loss scale for both players, and a step whose gradients are not finite
    skips both players' updates together (both scales halve).

    Divergence: the first step whose losses or gradients are not finite (without loss scaling;
    with it, whose losses are not finite) is recorded, see `divergence()`.

    Args:
      generator: a built Keras model from latents `(latent_dim,)` (and int labels, when
        conditional) to samples.
      discriminator: a built Keras model from samples (and labels) to one logit per sample.
      loss: a loss name (`tf_fusedprop.losses.names()`) or `GANLoss`; the loss object is the
        attribute `gan_loss` (`loss` belongs to Keras's `compile`).
      form: one of `tf_fusedprop.steps.FORMS`.
      n_dis: D updates per G update; only with form="alternating".
      iter_size: micro-batches per update (gradient accumulation).
      seed: seed of the latent sampler.
      latent_dim: the size of z; None to read it from G's inputs or build shape.
      check_independence: for the single-pass forms, probe D once here for cross-sample
        coupling (`steps.check_sample_independence`), which would make their gradients wrong;
        False skips the probe (for a D you know to be per-sample).
      num_classes: for a class-conditional GAN, the number of classes K: fit on `(samples,
        labels)`; fake labels are drawn uniformly from [0, K) every step (the same ones for D's
        and G's terms); G is called on `[z, labels]` and D on `[samples, labels]`.
      ema_decay: if set (e.g. 0.999), keep `ema_generator`, an exponential moving average of
        G's weights (`tf_fusedprop.ema`), which `sampling_generator` and `export_generator` use.
      ema_start: G updates before the average starts (the EMA copies G until then).
      augment: a DiffAugment policy (e.g. "translation,cutout,color"; `tf_fusedprop.augment`)
        applied to D's real and fake inputs; None for none.
      r1_gamma: weight of the R1 penalty on real data (0: off).
      gp_weight: weight of the WGAN-GP penalty on interpolates (0: off).
      reg_every: apply the penalties every this many D updates, with their weights multiplied
        by it (StyleGAN2's lazy regularization); 1: every update.

    Fit on batches of real samples, or `(samples, labels)` pairs (labels are ignored unless
    `num_classes` is set). Metrics: `d_loss` (with the penalties), `g_loss`, `real_logit` (mean
    D(real)), `fake_logit` (mean D(fake)).
    """

    def __init__(
        self,
        generator,
        discriminator,
        loss="nonsaturating",
        form="fused",
        n_dis=1,
        iter_size=1,
        seed=None,
        latent_dim=None,
        check_independence=True,
        num_classes=None,
        ema_decay=None,
        ema_start=0,
        augment=None,
        r1_gamma=0.0,
        gp_weight=0.0,
        reg_every=1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.gan_loss = steps.check_form(loss, form)
        self.form = form
        self.n_dis = positive_int("n_dis", n_dis)
        if n_dis != 1 and form != "alternating":
            raise ValueError(
                f"n_dis applies to form='alternating' only (a simultaneous step updates both "
                f"players once). Received: n_dis={n_dis}, form={form!r}."
            )
        self.iter_size = positive_int("iter_size", iter_size)
        self.latent_dim = _latent_dim(generator, latent_dim)
        self.num_classes = None if num_classes is None else positive_int("num_classes", num_classes)
        steps.check_discriminator(discriminator, form)
        self.check_independence = bool(check_independence)
        if self.check_independence and form in steps.SINGLE_PASS_FORMS:
            labels = None if self.num_classes is None else tf.zeros([1], tf.int32)
            steps.check_sample_independence(
                discriminator, steps.probe_batch(generator, [self.latent_dim], labels=labels), form
            )
        self.generator = generator
        self.discriminator = discriminator
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self._augment = fp_augment.DiffAugment(augment) if augment else None
        self.augment = None if self._augment is None else self._augment.policy
        self.r1_gamma, self.gp_weight = float(r1_gamma), float(gp_weight)
        self.reg_every = positive_int("reg_every", reg_every)
        self._regularizers = fp_regularizers.from_config(self.r1_gamma, self.gp_weight)
        self.ema_decay, self.ema_start = ema_decay, int(ema_start)
        self._ema = None if ema_decay is None else ExponentialMovingAverage(generator, ema_decay, ema_start)
        self.ema_generator = None if self._ema is None else self._ema.model
        self.d_loss_tracker = keras.metrics.Mean(name="d_loss")
        self.g_loss_tracker = keras.metrics.Mean(name="g_loss")
        self.real_logit_tracker = keras.metrics.Mean(name="real_logit")
        self.fake_logit_tracker = keras.metrics.Mean(name="fake_logit")
        # The first non-finite update as one number, `4 * step + players` (bit 1: D, bit 2: G),
        # -1 for none, so that it is written and read at once. Replicas agree on it (the flags
        # are all-reduced), so the first replica's value is kept.
        self.first_nonfinite = keras.Variable(
            -1, dtype="int64", trainable=False, aggregation="only_first_replica", name="first_nonfinite"
        )
        self.d_optimizer = None
        self.g_optimizer = None
        self._d_accumulator = self._g_accumulator = None
        if iter_size > 1:
            self._d_accumulator = GradientAccumulator(discriminator.trainable_variables, iter_size, "d_accumulator")
            self._g_accumulator = GradientAccumulator(generator.trainable_variables, iter_size, "g_accumulator")
        self.built = True

    def compile(self, d_optimizer, g_optimizer, **kwargs):
        """Sets (and builds) the two players' optimizers; other kwargs go to `Model.compile`.

        Raises:
          ValueError: only one optimizer is a `LossScaleOptimizer`, or the two have different
            loss-scale settings, with a single-pass or simultaneous form (one backward pass
            needs one loss scale).
        """
        super().compile(optimizer=None, **kwargs)
        self.d_optimizer = keras.optimizers.get(d_optimizer)
        self.g_optimizer = keras.optimizers.get(g_optimizer)
        if self.form != "alternating":
            self._check_one_loss_scale()
        # Built here, inside any strategy scope, so that fit never creates variables in a
        # replica context and saved optimizer state has somewhere to load into.
        self.d_optimizer.build(self.discriminator.trainable_variables)
        self.g_optimizer.build(self.generator.trainable_variables)

    def _check_one_loss_scale(self):
        d, g = self.d_optimizer, self.g_optimizer
        if _loss_scale_optimizer(d) != _loss_scale_optimizer(g):
            raise ValueError(
                f"form={self.form!r} back-propagates both players' losses together, so they share one loss "
                "scale: wrap both optimizers in keras.optimizers.LossScaleOptimizer, or neither. Received: "
                f"d_optimizer={type(d).__name__}, g_optimizer={type(g).__name__}."
            )
        if _loss_scale_optimizer(d) and (d.initial_scale, d.dynamic_growth_steps) != (
            g.initial_scale,
            g.dynamic_growth_steps,
        ):
            raise ValueError(
                "The two LossScaleOptimizers must have the same initial_scale and dynamic_growth_steps (one loss "
                f"scale for the one backward pass). Received: D ({d.initial_scale}, {d.dynamic_growth_steps}), "
                f"G ({g.initial_scale}, {g.dynamic_growth_steps})."
            )

    @property
    def metrics(self):
        """The four trackers, so that Keras resets them every epoch."""
        return [self.d_loss_tracker, self.g_loss_tracker, self.real_logit_tracker, self.fake_logit_tracker]

    @property
    def sampling_generator(self):
        """The generator to sample, evaluate and export: the EMA copy if `ema_decay` is set."""
        return self.generator if self.ema_generator is None else self.ema_generator

    def call(self, z, training=False):
        """Generates samples from latents `z` (`[z, labels]` when conditional) with G."""
        return self.generator(z, training=training)

    def _replica_rows(self, draw, n):
        """`draw(rows, seed)` for the global batch; this replica's `n` rows of it."""
        seed = tf.cast(self.seed_generator.next(), tf.int64)
        context = tf.distribute.get_replica_context()
        replicas = 1 if context is None else context.num_replicas_in_sync
        if replicas == 1:
            return draw(n, seed)
        start = tf.cast(context.replica_id_in_sync_group, tf.int32) * n
        return draw(n * replicas, seed)[start : start + n]

    def _replica_seed(self):
        """A fresh `[2]` seed, distinct per replica."""
        seed = tf.cast(self.seed_generator.next(), tf.int64)
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            seed = tf.random.experimental.stateless_fold_in(seed, context.replica_id_in_sync_group)
        return seed

    def sample_latents(self, n):
        """`n` latents from the model's seed generator (this replica's rows of the global batch)."""
        return self._replica_rows(lambda rows, seed: tf.random.stateless_normal([rows, self.latent_dim], seed=seed), n)

    def sample_labels(self, n):
        """`n` uniform class labels in [0, num_classes) (this replica's rows), int32."""
        if self.num_classes is None:
            raise ValueError("sample_labels needs a conditional GAN: pass FusedPropGAN(..., num_classes=K).")
        return self._replica_rows(
            lambda rows, seed: tf.random.stateless_uniform([rows], seed=seed, maxval=self.num_classes, dtype=tf.int32),
            n,
        )

    def divergence(self):
        """None, or `{"step": s, "players": [...]}` for the first update (1-based G update
        count) whose losses or gradients were not finite, naming "discriminator" and/or
        "generator"."""
        record = int(self.first_nonfinite.numpy())
        if record < 0:
            return None
        step, bits = divmod(record, 4)
        return {"step": step, "players": [name for bit, name in ((1, "discriminator"), (2, "generator")) if bits & bit]}

    def train_step(self, data):
        real, labels = self._unpack(data)
        if self.d_optimizer is None:
            raise ValueError(
                "FusedPropGAN must be compiled with compile(d_optimizer=..., g_optimizer=...) before training."
            )
        if self.form == "alternating":
            means = self._alternating_update(real, labels)
        else:
            means = self._simultaneous_update(real, labels)
        for tracker, value in zip(self.metrics, means):
            tracker.update_state(value)
        return {m.name: m.result() for m in self.metrics}

    def _unpack(self, data):
        if isinstance(data, (tuple, list)):
            real, labels = data[0], (data[1] if len(data) > 1 else None)
        else:
            real, labels = data, None
        if self.num_classes is None:
            return real, None
        if labels is None:
            raise ValueError(
                f"A conditional FusedPropGAN (num_classes={self.num_classes}) is fit on (samples, labels) pairs."
            )
        return real, tf.cast(tf.reshape(labels, [-1]), tf.int32)

    def _options(self, n, real_labels, regularize, loss_scale):
        """The `StepOptions` of one D (and G) update on `n` samples."""
        return steps.StepOptions(
            real_labels=real_labels,
            fake_labels=None if self.num_classes is None else self.sample_labels(n),
            augment=None if self._augment is None else self._augment.bind(self._replica_seed()),
            regularizers=tuple(r.scaled(self.reg_every) for r in self._regularizers) if regularize else (),
            seed=self._replica_seed() if any(r.rows == "interpolates" for r in self._regularizers) else None,
            loss_scale=loss_scale,
        )

    def _with_lazy_regularization(self, compute):
        """`compute(regularize)`, with the penalties on every `reg_every`-th D update only."""
        if not self._regularizers:
            return compute(False)
        if self.reg_every == 1:
            return compute(True)
        due = tf.equal(self.d_optimizer.iterations % self.reg_every, 0)
        return tf.cond(due, lambda: compute(True), lambda: compute(False))

    def _simultaneous_update(self, real, labels):
        loss_scale = self._loss_scale(self.d_optimizer)
        n = tf.shape(real)[0]
        z = self.sample_latents(n)

        def compute(regularize):
            options = self._options(n, labels, regularize, loss_scale)

            def micro_step(real, z, *labels):
                micro = options._replace(real_labels=labels[0], fake_labels=labels[1]) if labels else options
                r = steps.simgd_step(
                    self.generator,
                    self.discriminator,
                    real,
                    z,
                    self.gan_loss,
                    self.form,
                    options=micro,
                    check_independence=False,
                )
                means = (r.d_loss, r.g_loss, tf.reduce_mean(r.real_logits), tf.reduce_mean(r.fake_logits))
                return (r.d_grads, r.g_grads), means

            inputs = (real, z) + (() if labels is None else (options.real_labels, options.fake_labels))
            return self._accumulate(micro_step, inputs, (self._d_accumulator, self._g_accumulator), num_means=4)

        (d_grads, g_grads), means = self._with_lazy_regularization(compute)
        self._apply_together(
            [
                (self.d_optimizer, d_grads, self.discriminator, means[0]),
                (self.g_optimizer, g_grads, self.generator, means[1]),
            ]
        )
        self._update_ema()
        return means

    def _alternating_update(self, real, labels):
        d_scale, g_scale = self._loss_scale(self.d_optimizer), self._loss_scale(self.g_optimizer)
        n = tf.shape(real)[0]

        def d_update(regularize):
            options = self._options(n, labels, regularize, d_scale)

            def micro_step(real, z, *labels):
                micro = options._replace(real_labels=labels[0], fake_labels=labels[1]) if labels else options
                r = steps.discriminator_step(self.generator, self.discriminator, real, z, self.gan_loss, options=micro)
                return (r.d_grads,), (r.d_loss, tf.reduce_mean(r.real_logits), tf.reduce_mean(r.fake_logits))

            inputs = (real, self.sample_latents(n)) + (
                () if labels is None else (options.real_labels, options.fake_labels)
            )
            return self._accumulate(micro_step, inputs, (self._d_accumulator,), num_means=3)

        for _ in range(self.n_dis):
            (d_grads,), (d_loss, real_logit, fake_logit) = self._with_lazy_regularization(d_update)
            self._apply_together([(self.d_optimizer, d_grads, self.discriminator, d_loss)])
        options = self._options(n, None, False, g_scale)

        def g_micro_step(z, *labels):
            micro = options._replace(fake_labels=labels[0]) if labels else options
            r = steps.generator_step(self.generator, self.discriminator, z, self.gan_loss, options=micro)
            return (r.g_grads,), (r.g_loss,)

        inputs = (self.sample_latents(n),) + (() if options.fake_labels is None else (options.fake_labels,))
        (g_grads,), (g_loss,) = self._accumulate(g_micro_step, inputs, (self._g_accumulator,), num_means=1)
        self._apply_together([(self.g_optimizer, g_grads, self.generator, g_loss)])
        self._update_ema()
        return d_loss, g_loss, real_logit, fake_logit

    def _accumulate(self, step, inputs, accumulators, num_means):
        """Runs `step` on the whole batch, or on `iter_size` micro-batches one after another.

        `step(*inputs) -> (grads per accumulator, means)`; returns the gradients and the means
        of the whole batch (micro-batches weighted by their sizes).
        """
        k = self.iter_size
        if k == 1:
            return step(*inputs)
        n = tf.shape(inputs[0])[0]
        parts = tf.minimum(k, n)
        bounds = tf.range(parts + 1) * n // parts  # sizes differ by at most one sample
        for accumulator in accumulators:
            accumulator.reset()

        def body(i, sums):
            start, stop = bounds[i], bounds[i + 1]
            grads, means = step(*[x[start:stop] for x in inputs])
            # The accumulators divide by k: weight (size * k / n) makes that the batch mean;
            # exactly 1 when the batch splits evenly.
            weight = tf.cast((stop - start) * k, tf.float32) / tf.cast(n, tf.float32)
            for accumulator, g in zip(accumulators, grads):
                accumulator.accumulate(g, weight=weight)
            return i + 1, [s + weight / k * tf.cast(m, tf.float32) for s, m in zip(sums, means)]

        # parallel_iterations=1: micro-batches run strictly one after another, so only one
        # micro-batch's activations are alive at a time.
        _, sums = tf.while_loop(
            lambda i, _: i < parts, body, (tf.constant(0), [tf.zeros([])] * num_means), parallel_iterations=1
        )
        return tuple(a.gradients() for a in accumulators), sums

    @staticmethod
    def _loss_scale(optimizer):
        return optimizer.dynamic_scale if _loss_scale_optimizer(optimizer) else None

    def _apply_together(self, updates):
        """Applies `(optimizer, grads, model, loss)` updates computed in one backward pass.

        Records the first non-finite update (`divergence()`); with loss scaling, a non-finite
        gradient of any player turns every player's gradients non-finite, so that all their
        LossScaleOptimizers skip the step and halve their (equal) scales together.
        """
        scaled = _loss_scale_optimizer(updates[0][0])
        players_ok = []
        for _, grads, _, loss in updates:
            checked = [loss] if scaled else [loss] + list(grads)
            players_ok.append(_in_all_replicas(_all_finite(checked)))
        self._record_nonfinite(updates, players_ok)
        if scaled:
            grads_ok = _in_all_replicas(_all_finite([g for _, grads, _, _ in updates for g in grads]))
            poison = tf.where(grads_ok, 0.0, float("nan"))
            updates = [
                (opt, [g + tf.cast(poison, g.dtype) for g in grads], model, loss) for opt, grads, model, loss in updates
            ]
        replicas = _num_replicas()
        for optimizer, grads, model, _ in updates:
            if replicas > 1:  # the optimizer sums gradients over replicas; we want their mean
                grads = [g / replicas for g in grads]
            optimizer.apply_gradients(zip(grads, model.trainable_variables))

    def _record_nonfinite(self, updates, players_ok):
        bits = tf.constant(0, tf.int64)
        for (_, _, model, _), ok in zip(updates, players_ok):
            bits += tf.where(ok, tf.constant(0, tf.int64), 1 if model is self.discriminator else 2)
        first = tf.logical_and(bits > 0, self.first_nonfinite < 0)
        record = 4 * (tf.cast(self.g_optimizer.iterations, tf.int64) + 1) + bits
        self.first_nonfinite.assign(tf.where(first, record, self.first_nonfinite))

    def _update_ema(self):
        if self._ema is not None:
            self._ema.update(self.g_optimizer.iterations)

    # Keras does not save a SeedGenerator's state; without it a resumed run would replay the
    # latents of the first steps instead of continuing the sequence.
    def save_own_variables(self, store):
        """Saves the latent sampler's state with the model's own variables."""
        super().save_own_variables(store)
        store["latent_seed_state"] = self.seed_generator.state

    def load_own_variables(self, store):
        """Restores what `save_own_variables` saved."""
        self.seed_generator.state.assign(store["latent_seed_state"])
        super().load_own_variables({key: store[key] for key in store.keys() if key != "latent_seed_state"})

    def export_generator(self, directory):
        """Writes the sampling generator (the EMA copy if on) as a SavedModel.

        `tf.saved_model.load(directory).serve(z)` (`serve(z, labels)` when conditional) returns
        its samples in inference mode; `fusedprop_export.json` beside it says which weights
        were exported (`"weights": "ema"` or `"trained"`) and at which step.
        """
        info = {
            "weights": "trained" if self.ema_generator is None else "ema",
            "ema_decay": self.ema_decay,
            "step": int(self.g_optimizer.iterations.numpy()) if self.g_optimizer is not None else 0,
        }
        try:
            dtype = self.generator.inputs[0].dtype
        except (AttributeError, TypeError, IndexError):
            dtype = "float32"
        fp_export.export_generator(self.sampling_generator, directory, self.latent_dim, self.num_classes, info, dtype)

    def get_config(self):
        """Constructor arguments, with both networks serialized."""
        return {
            **super().get_config(),
            "generator": keras.saving.serialize_keras_object(self.generator),
            "discriminator": keras.saving.serialize_keras_object(self.discriminator),
            "loss": self.gan_loss.name,
            "form": self.form,
            "n_dis": self.n_dis,
            "iter_size": self.iter_size,
            "seed": self.seed,
            "latent_dim": self.latent_dim,
            "check_independence": self.check_independence,
            "num_classes": self.num_classes,
            "ema_decay": self.ema_decay,
            "ema_start": self.ema_start,
            "augment": self.augment,
            "r1_gamma": self.r1_gamma,
            "gp_weight": self.gp_weight,
            "reg_every": self.reg_every,
        }

    @classmethod
    def from_config(cls, config):
        """Inverse of `get_config`."""
        config = dict(config)
        for key in ("generator", "discriminator"):
            config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)

    def get_compile_config(self):
        """Both optimizers, serialized (so `load_model` can restore their state)."""
        if self.d_optimizer is None:
            return {}
        return {
            "d_optimizer": keras.saving.serialize_keras_object(self.d_optimizer),
            "g_optimizer": keras.saving.serialize_keras_object(self.g_optimizer),
        }

    def compile_from_config(self, config):
        """Inverse of `get_compile_config`."""
        if config:
            self.compile(
                d_optimizer=keras.saving.deserialize_keras_object(config["d_optimizer"]),
                g_optimizer=keras.saving.deserialize_keras_object(config["g_optimizer"]),
            )
