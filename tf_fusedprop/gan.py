"""`FusedPropGAN`: a Keras model whose `train_step` updates both players, by every form."""

import keras
import tensorflow as tf

from tf_fusedprop import export as fp_export
from tf_fusedprop import regularizers as fp_regularizers
from tf_fusedprop import replicas, schedules, seeds, steps, train_functions
from tf_fusedprop._checks import positive_int
from tf_fusedprop.accumulation import accumulate, accumulators
from tf_fusedprop.augment import DiffAugment
from tf_fusedprop.batch import Sampler, unpack
from tf_fusedprop.ema import EMA
from tf_fusedprop.lookahead import Lookahead
from tf_fusedprop.seeds import SeedStream
from tf_fusedprop.stray_probe import LOGS as PROBE_LOGS
from tf_fusedprop.stray_probe import StrayProbe
from tf_fusedprop.update import DivergenceRecord, Updater

__all__ = ["FusedPropGAN"]

LOGS = ("d_loss", "g_loss", "real_logit", "fake_logit", "fake_spread", "fake_coverage")
D, G = "discriminator", "generator"


def _latent_dim(generator, latent_dim):
    """The size of z: given, else from G's inputs (functional) or build shape (subclassed)."""
    if latent_dim is not None:
        return positive_int("latent_dim", latent_dim)
    inputs = getattr(generator, "inputs", None) if isinstance(generator, keras.Model) else None
    if inputs:
        return int(inputs[0].shape[-1])
    shape = (generator.get_build_config() or {}).get("input_shape") if generator.built else None
    if shape and shape[-1] is not None:
        return int(shape[-1])
    raise ValueError(
        f"Cannot tell the latent size of generator {getattr(generator, 'name', generator)!r}: it has no "
        "`inputs` (a subclassed model) and no build shape. Pass FusedPropGAN(..., latent_dim=...)."
    )


def _plugin(argument, value, kind):
    if not isinstance(value, kind):
        raise ValueError(
            f"FusedPropGAN's {argument} takes tf_fusedprop.{kind.__name__} objects (e.g. {_EXAMPLES[kind.__name__]}). "
            f"Received: {argument}={value!r}"
        )
    return value


_EXAMPLES = {
    "Regularizer": "regularizers=[tf_fusedprop.R1(0.1, every=16)]",
    "DiffAugment": "augment=tf_fusedprop.DiffAugment('translation,cutout,color')",
    "EMA": "ema=tf_fusedprop.EMA(0.999)",
    "Lookahead": "lookahead=tf_fusedprop.Lookahead(every=10, alpha=0.5)",
    "StrayProbe": "probe=tf_fusedprop.StrayProbe(every=10)",
}


def _trainable(models):
    return [v for model in models.values() for v in model.trainable_variables]


def _sample_shape(discriminator):
    """The shape of one sample D takes (its first input), or None if D has no symbolic inputs."""
    inputs = getattr(discriminator, "inputs", None) if isinstance(discriminator, keras.Model) else None
    return tuple(inputs[0].shape[1:]) if inputs else None


def _check_sample_shapes(generator, discriminator, generator_inputs):
    """Raises ValueError (one line) if G's samples do not have the shape D takes."""
    expected = _sample_shape(discriminator)
    made = tuple(generator(generator_inputs, training=False).shape[1:])
    if expected is not None and not tf.TensorShape(made).is_compatible_with(expected):
        raise ValueError(
            f"The generator makes samples of shape {made} but the discriminator takes samples of shape {expected}: "
            "build them for the same sample shape."
        )
    return expected or made


def _seed_streams(seed, sampler, regularizers, augment):
    """The seed stream of each source of randomness, by name: the sampler's, then a stream for
    DiffAugment and for each seeded regularizer."""
    plugins = {f"regularizer_{i}": r for i, r in enumerate(regularizers)}
    plugins.update({} if augment is None else {"augment": augment})
    return {"latents": sampler.stream, **{name: SeedStream(seed, name) for name, p in plugins.items() if p.seeded}}


def _serialized(objects):
    return [keras.saving.serialize_keras_object(o) for o in objects]


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class FusedPropGAN(keras.Model):
    """A GAN trained with `fit`; one `train_step` is one update of both players.

    A step reads like Keras's own: unpack the batch, then for each phase of the form (`forms`:
    D updates, G updates, or one update of both) draw the latents (`batch.Sampler`), form the
    gradients over the micro-batches (`accumulation`) with the step plugins bound to this step,
    and apply them (`update.Updater`: loss scaling, the non-finite skip, the divergence
    record); around the phases, the Lookahead cycle, then the EMA update; then the metrics.

    With `iter_size=k` each batch is split into k micro-batches processed one after another,
    both players' gradients accumulated and each optimizer applied once (`optimizer.iterations`
    counts updates); uneven splits are weighted by size. A phase's latents are drawn for the
    whole batch and split with it, so the update does not depend on `iter_size` (without
    BatchNorm, and without spectral norm, whose power iteration advances per D forward).

    Randomness: the latents (and fake labels), DiffAugment and each seeded regularizer draw
    from seed streams of their own (`seeds`, saved with the weights). Under `tf.distribute`
    the latents are drawn for the global batch and each replica takes its rows, so N replicas
    train like one device with the global batch (without batch statistics); augmentation and
    interpolation seeds are folded with the replica id. Mixed float16: wrap both optimizers in
    `keras.optimizers.LossScaleOptimizer` with the same settings (one backward pass, one scale).

    Args:
      generator: a built Keras model from latents `(latent_dim,)` (and int labels, when
        conditional) to samples.
      discriminator: a built Keras model from samples (and labels) to one logit per sample.
      loss: a loss name (`tf_fusedprop.losses.names()`) or `GANLoss` (the attribute `gan_loss`).
      form: a `forms.Form` (e.g. `Alternating(n_dis=5)`, `SinglePass("fused",
        check_independence=False)`), a name of `forms.FORMS`, or a schedule of forms
        (`schedules.Warmup("fused", updates=500)`: AltGD for the first 500 G updates, then fused;
        `schedules.Periodic("fused", every=4)`; `schedules.Auto("fused")`, which alternates where
        the stray probe finds fused updates close to alternating ones), which `fit` follows by
        itself (`schedule`).
      iter_size: micro-batches per update (gradient accumulation).
      seed: seed of the latents and of the plugins' seed streams; None: random.
      num_classes: for a class-conditional GAN, the number of classes K: fit on `(samples,
        labels)`; fake labels are drawn uniformly from [0, K); G is called on `[z, labels]`
        and D on `[samples, labels]`.
      latent_dim: the size of z; None to read it from G's inputs or build shape.
      regularizers: D's gradient penalties (`R1(gamma, every=16)`, `GradientPenalty(weight)`).
      augment: a `DiffAugment` applied to D's real and fake inputs, or None; with `p="auto"` its
        probability adapts to D's outputs on the real samples, in the graph, after every step
        (its state is saved with the model).
      ema: an `EMA(decay, start)`: keep `ema_generator`, an exponential moving average of G,
        which `sampling_generator` and `export_generator` use; None: off.
      lookahead: a `Lookahead(every, alpha)`: both players' weights jump back jointly towards
        slow copies every `every` steps (Lookahead-minmax); None: off.
      probe: a `StrayProbe(every)`: every `every` G updates of a simultaneous phase, measure how
        far G's gradient at D's old weights strays from the one at D's updated weights (what
        alternating would use); logged as `stray` and `stray_cosine`; training is unchanged. A
        schedule that follows the probe (`schedules.Auto`) makes its own.

    Metrics: `d_loss` (with the penalties), `g_loss`, `real_logit` (mean D(real)), `fake_logit`,
    `fake_spread` (how far apart G's samples are across a batch, against the real batch's: near 0
    when G draws one sample for every latent; `steps.spread_ratio`), `fake_coverage` (the share
    of a batch's real samples with a generated one among their nearest neighbours: ~0.97 when G
    covers the data, lower as G leaves modes; `steps.coverage`);
    with an adaptive augmentation (`DiffAugment(..., p="auto")`) also `real_sign` (the epoch's
    mean of sign(D(real)), ADA's signal), with `held_out` images `real_above_held_out` (the mean
    of `P(D(real) > D(held_out))` over the epoch's adjustments, the signal it then follows), and
    `augment_p` (its probability now); with a `probe`, `stray` and `stray_cosine` (means over
    the epoch's probed updates); with `schedules.Auto`, `alternated` (its alternating updates so far).
    """

    def __init__(
        self,
        generator,
        discriminator,
        loss="nonsaturating",
        form="fused",
        iter_size=1,
        seed=None,
        num_classes=None,
        latent_dim=None,
        regularizers=(),
        augment=None,
        ema=None,
        lookahead=None,
        probe=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.generator, self.discriminator = generator, discriminator
        models = {D: discriminator, G: generator}
        self.schedule = schedules.get(form)
        # What was asked for: the form itself, or the schedule of forms.
        self.form = self.schedule.form if isinstance(self.schedule, schedules.Constant) else self.schedule
        self._active_form = self.schedule.forms[0]  # the form a train function being traced trains
        self.iter_size = positive_int("iter_size", iter_size)
        self.seed = seed
        self.num_classes = None if num_classes is None else positive_int("num_classes", num_classes)
        self.latent_dim = _latent_dim(generator, latent_dim)
        self.sampler = Sampler(self.latent_dim, self.num_classes, seed)
        self.sample_shape = _check_sample_shapes(generator, discriminator, self.sampler.example_inputs(2))
        self.gan_loss = self.schedule.check(loss, generator, discriminator, self.sampler.example_inputs())
        self.regularizers = tuple(_plugin("regularizers", r, fp_regularizers.Regularizer) for r in regularizers)
        self.augment = None if augment is None else _plugin("augment", augment, DiffAugment)
        self.ema = None if ema is None else _plugin("ema", ema, EMA)
        self.lookahead = None if lookahead is None else _plugin("lookahead", lookahead, Lookahead)
        self.probe = None if probe is None else _plugin("probe", probe, StrayProbe)
        if self.schedule.probe_every is not None:  # the schedule follows the probe
            if self.probe is None:
                self.probe = StrayProbe(self.schedule.probe_every)
            elif self.probe.every != self.schedule.probe_every:
                raise ValueError(
                    f"{self.schedule!r} follows a probe every {self.schedule.probe_every} G updates; "
                    f"received probe={self.probe!r}. Leave probe=None (the schedule makes its own)."
                )
        # Tracked, so that a schedule's state (what an adaptive one decided) is saved and restored.
        self.schedule_state = self.schedule.attach()
        self._streams = _seed_streams(seed, self.sampler, self.regularizers, self.augment)
        # Tracked, so that `variables` (and snapshots of them) include the streams' states.
        self.seed_generators = [stream.generator for stream in self._streams.values()]
        self.ema_generator = None if ema is None else ema.attach(generator, self.sampler.example_inputs(1))
        # Tracked, so that an adaptive augmentation's probability is saved and restored.
        self.augment_state = [] if augment is None else self.augment.attach(self.sample_shape)
        if self.num_classes is not None and self._held_out:
            raise ValueError(
                "DiffAugment's held_out signal scores unconditional samples; a conditional FusedPropGAN "
                "(num_classes) adapts p with held_out=None."
            )
        divergence = DivergenceRecord()
        self.first_nonfinite = divergence.variable
        # Tracked, so that the slow weights are saved and restored with the model.
        self.lookahead_weights = [] if lookahead is None else lookahead.attach(_trainable(models))
        self.updater = Updater(models, divergence, self.ema, self.lookahead)
        self._accumulators = accumulators(models, self.iter_size)
        # A schedule without a simultaneous phase (alternating alone) has nothing to probe.
        simultaneous = any(schedules.simultaneous(form) for form in self.schedule.forms)
        self._probing = self.probe is not None and simultaneous
        if self._probing:
            self.probe.attach(generator, discriminator, self.iter_size)
        probe_logs = PROBE_LOGS if self._probing else ()
        self._trackers = {name: keras.metrics.Mean(name=name) for name in LOGS + self._adaptive_logs + probe_logs}
        self.d_optimizer = self.g_optimizer = None
        self.built = True

    def compile(self, d_optimizer, g_optimizer, **kwargs):
        """Sets (and builds) the two players' optimizers; other kwargs go to `Model.compile`.

        Raises:
          ValueError: only one optimizer is a `LossScaleOptimizer`, or the two have different
            loss-scale settings, with a form whose backward pass carries both players' losses.
        """
        super().compile(optimizer=None, **kwargs)
        self.d_optimizer = keras.optimizers.get(d_optimizer)
        self.g_optimizer = keras.optimizers.get(g_optimizer)
        # Built here, inside any strategy scope, so that fit never creates variables in a
        # replica context and saved optimizer state has somewhere to load into.
        self.updater.compile(self.schedule, {D: self.d_optimizer, G: self.g_optimizer})

    @property
    def _held_out(self):
        """Whether an adaptive augmentation follows D's order of real and held-out samples."""
        return bool(self.augment_state) and self.augment.adaptive.held_out is not None

    @property
    def _adaptive_logs(self):
        """The signals an adaptive augmentation logs: `real_sign`, and with held-out images
        `real_above_held_out` (at each adjustment); () without one."""
        return (("real_sign",) + (("real_above_held_out",) if self._held_out else ())) if self.augment_state else ()

    @property
    def metrics(self):
        """The trackers (`LOGS`, and those of an adaptive augmentation and a probe), so that
        Keras resets them every epoch."""
        return list(self._trackers.values())

    @property
    def sampling_generator(self):
        """The generator to sample, evaluate and export: the EMA copy if `ema` is set."""
        return self.generator if self.ema_generator is None else self.ema_generator

    def call(self, z, training=False):
        """Generates samples from latents `z` (`[z, labels]` when conditional) with G."""
        return self.generator(z, training=training)

    def divergence(self):
        """None, or `{"step": s, "players": [...]}` for the first update (1-based G update
        count) whose losses or gradients were not finite, naming "discriminator" and/or
        "generator"."""
        return self.updater.record.read()

    def train_step(self, data):
        """One step of the form: each phase's gradients applied in turn, then the metrics."""
        if self.d_optimizer is None:
            raise ValueError(
                "FusedPropGAN must be compiled with compile(d_optimizer=..., g_optimizer=...) before training."
            )
        real, real_labels = unpack(data, self.num_classes)
        if not real.shape[1:].is_compatible_with(self.sample_shape):
            raise ValueError(
                f"FusedPropGAN trains on samples of shape {self.sample_shape} (what G makes and D takes); "
                f"fit received a batch of shape {tuple(real.shape)}."
            )
        logs, real_signs = {}, []
        before = tf.identity(self.updater.step)  # G updates before this step (a skipped one makes none)
        self.updater.start_step()
        for phase in self._active_form.phases:
            batch = self.sampler.batch(real, real_labels)
            plugins = self._bound_plugins(phase)
            grads, phase_logs = self._gradients(phase, batch, *plugins)
            self.updater.apply(grads, phase_logs, self._probe(phase, batch, plugins))
            if "real_sign" in phase_logs:
                real_signs.append(phase_logs.pop("real_sign"))
            logs.update(phase_logs)
        self.updater.finish_step()
        self.schedule.observe_logs(self._active_form, logs, before)
        if self.augment_state and real_signs:
            seen = tf.cast(tf.shape(real)[0], tf.float32)
            step = self.updater.step
            measured = self.augment.adaptive.observe(
                tf.add_n(real_signs) * seen, len(real_signs) * seen, step, self.discriminator, real
            )
            logs["real_sign"] = tf.add_n(real_signs) / len(real_signs)
            if measured is not None:  # counted in the epoch's mean only where it was measured
                due = tf.cast(self.augment.adaptive.due(step), tf.float32)
                self._trackers["real_above_held_out"].update_state(measured, sample_weight=due)
        for name, value in logs.items():
            self._trackers[name].update_state(value)
        results = {m.name: m.result() for m in self.metrics}
        results.update(self.schedule.trained(self._active_form, self.updater.step - before))
        if self.augment_state:
            results["augment_p"] = self.augment.p
        # Across workers Keras reduces each step's results over axis 0, which fails on scalars
        # (tensorflow/tensorflow#72388): one element each, whose mean is the mean over workers.
        return {name: tf.reshape(value, [1]) for name, value in results.items()} if replicas.multi_worker() else results

    def make_train_function(self, force=False):
        """Keras's train function; under a schedule of forms, the one of `train_functions`:
        whole periods traced as one function for a schedule that repeats a period
        (`schedules.Periodic`), else one compiled function per form, each call running the one
        of the form that trains the next G update (a switch logged once where a schedule says so).

        Raises:
          ValueError: a switch of the schedule that `steps_per_execution` does not divide.
        """
        forms = self.schedule.forms
        if len(forms) == 1 or (self.train_function is not None and not force):
            return super().make_train_function(force)
        if self.schedule.repeats is not None:
            self.train_function = train_functions.periodic(self)
            return self.train_function
        misaligned = self.schedule.misaligned(self.steps_per_execution)
        if misaligned is not None:
            raise ValueError(misaligned)

        def keras_train_function():
            super(FusedPropGAN, self).make_train_function(force=True)
            return self.train_function

        self.train_function = train_functions.per_call(self, keras_train_function)
        return self.train_function

    def _bound_plugins(self, phase):
        """`(augment, regularizers, scale_loss)` of `phase`: the plugins bound to this step's
        seeds (the regularizers in D's phases only) and its loss scaling."""
        streams = self._streams
        augment = None if self.augment is None else self.augment.bind(streams["augment"].next_per_replica())
        regularizers = () if D not in phase.players else self.regularizers
        regularizers = [
            r.bind(streams[f"regularizer_{i}"].next_per_replica()) if r.seeded else r
            for i, r in enumerate(regularizers)
        ]
        return augment, regularizers, self.updater.scale_loss(phase.players)

    def _probe(self, phase, batch, plugins):
        """The `Updater.apply` hook that probes a phase updating both players (None otherwise):
        it measures G's gradient at the updated D and puts the epoch's weighted statistics in
        the trackers."""
        if not self._probing or len(phase.players) < 2:
            return None
        augment, _, scale_loss = plugins

        def between(grads):
            options = steps.StepOptions(augment, (), scale_loss)
            sums, weight = self.probe.measure(self.updater.step, batch, self.gan_loss, options, grads[G])
            statistics = self.probe.statistics(sums)
            for name, value in statistics.items():
                self._trackers[name].update_state(value, sample_weight=weight)
            self.schedule.observe(statistics["stray"], weight, self.updater.step)

        return between

    def _gradients(self, phase, batch, augment, regularizers, scale_loss):
        """`phase`'s gradients and logs on `batch` with the bound plugins, the regularizers as
        their intervals say, over the micro-batches."""
        accumulators = {p: self._accumulators[p] for p in phase.players if self._accumulators}

        def compute(due):
            options = steps.StepOptions(augment, due, scale_loss)

            def micro_batch(micro):
                return phase.gradients(self.generator, self.discriminator, micro, self.gan_loss, options)

            return accumulate(micro_batch, batch, self.iter_size, accumulators, phase.logs)

        return fp_regularizers.when_due(compute, regularizers, self.d_optimizer.iterations)

    # Keras does not save a SeedGenerator's state; without it a resumed run would replay the
    # seeds of the first steps instead of continuing their streams.
    def save_own_variables(self, store):
        """Saves the seed streams' states with the model's own variables."""
        super().save_own_variables(store)
        seeds.save_states(self._streams, store)

    def load_own_variables(self, store):
        """Restores what `save_own_variables` saved."""
        super().load_own_variables(seeds.load_states(self._streams, store))

    def export_generator(self, directory):
        """Writes the sampling generator (the EMA copy if on) as a SavedModel.

        Load it into a variable that you keep (`generator = tf.saved_model.load(directory)`),
        then `generator.serve(z)` (`serve(z, labels)` when conditional) returns its samples in
        inference mode; `fusedprop_export.json` beside it says which weights were exported
        (`"weights": "ema"` or `"trained"`) and at which step.
        """
        info = {
            "weights": "trained" if self.ema_generator is None else "ema",
            "ema_decay": None if self.ema is None else self.ema.decay,
            "step": int(self.g_optimizer.iterations.numpy()) if self.g_optimizer is not None else 0,
        }
        inputs = getattr(self.generator, "inputs", None)
        dtype = inputs[0].dtype if inputs else "float32"
        fp_export.export_generator(self.sampling_generator, directory, self.latent_dim, self.num_classes, info, dtype)

    def get_config(self):
        """Constructor arguments, with both networks and the plugins serialized."""
        return {
            **super().get_config(),
            "generator": keras.saving.serialize_keras_object(self.generator),
            "discriminator": keras.saving.serialize_keras_object(self.discriminator),
            "loss": self.gan_loss.name,
            "form": self.form.get_config(),
            "iter_size": self.iter_size,
            "seed": self.seed,
            "num_classes": self.num_classes,
            "latent_dim": self.latent_dim,
            "regularizers": _serialized(self.regularizers),
            "augment": _serialized([self.augment])[0] if self.augment is not None else None,
            "ema": _serialized([self.ema])[0] if self.ema is not None else None,
            "lookahead": _serialized([self.lookahead])[0] if self.lookahead is not None else None,
            "probe": _serialized([self.probe])[0] if self.probe is not None else None,
        }

    @classmethod
    def from_config(cls, config):
        """Inverse of `get_config`."""
        config = dict(config)
        for key in ("generator", "discriminator", "augment", "ema", "lookahead", "probe"):
            config[key] = keras.saving.deserialize_keras_object(config.get(key))
        config["regularizers"] = [keras.saving.deserialize_keras_object(r) for r in config.get("regularizers", [])]
        return cls(**config)

    def get_compile_config(self):
        """Both optimizers, serialized (so `load_model` can restore their state)."""
        if self.d_optimizer is None:
            return {}
        return {"d_optimizer": _serialized([self.d_optimizer])[0], "g_optimizer": _serialized([self.g_optimizer])[0]}

    def compile_from_config(self, config):
        """Inverse of `get_compile_config`."""
        if config:
            optimizers = {
                key: keras.saving.deserialize_keras_object(config[key]) for key in ("d_optimizer", "g_optimizer")
            }
            self.compile(**optimizers)
