"""`FusedPropGAN`: a Keras model whose `train_step` updates both players, by every form."""

import keras
import tensorflow as tf

from tf_fusedprop import steps
from tf_fusedprop._checks import positive_int
from tf_fusedprop.accumulation import GradientAccumulator

__all__ = ["FusedPropGAN"]


def _num_replicas():
    return tf.distribute.get_strategy().num_replicas_in_sync


@keras.saving.register_keras_serializable(package="tf_fusedprop")
class FusedPropGAN(keras.Model):
    """A GAN trained with `fit`; one `train_step` is one update of both players.

    The model orchestrates: it samples latents, runs the form's step (`tf_fusedprop.steps`),
    accumulates micro-batches, applies both optimizers and tracks the metrics. Forms:
    "fused", "inverse", "adaptive" run one forward and one backward pass per step
    (`steps.simgd_step`); "simultaneous" is two-pass SimGD; "alternating" is the conventional
    baseline: `n_dis` D updates (`steps.discriminator_step`, each with a fresh z, the same real
    batch), then one G update with a fresh z (`steps.generator_step`, efficient: TF forms D's
    input gradients only).

    With `iter_size=k` each batch is split into k micro-batches that are processed one after
    another in a sequential loop; both players' gradients are accumulated
    (`GradientAccumulator`) and each optimizer applies once, so `optimizer.iterations` counts
    updates. The latents of a step are drawn once for the whole batch and split with it, so
    the update does not depend on `iter_size` (without BatchNorm, and without spectral norm,
    whose power iteration advances once per D forward, i.e. per micro-batch).

    Latents come from the model's `keras.random.SeedGenerator`, folded with the replica id so
    that replicas of a `tf.distribute` strategy draw different latents.

    Args:
      generator: a built Keras model from latents `(latent_dim,)` to samples.
      discriminator: a built Keras model from samples to one logit per sample.
      loss: a loss name (`tf_fusedprop.losses.names()`) or `GANLoss`; the loss object is the
        attribute `gan_loss` (`loss` belongs to Keras's `compile`).
      form: one of `tf_fusedprop.steps.FORMS`.
      n_dis: D updates per G update; only with form="alternating".
      iter_size: micro-batches per update (gradient accumulation).
      seed: seed of the latent sampler.

    Fit on batches of real samples, or `(samples, labels)` pairs whose labels are ignored.
    Metrics: `d_loss`, `g_loss`, `real_logit` (mean D(real)), `fake_logit` (mean D(fake)).
    """

    def __init__(self, generator, discriminator, loss="nonsaturating", form="fused", n_dis=1,
                 iter_size=1, seed=None, **kwargs):
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
        steps.check_discriminator(discriminator, form)
        self.generator = generator
        self.discriminator = discriminator
        self.latent_dim = int(generator.inputs[0].shape[-1])
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.d_loss_tracker = keras.metrics.Mean(name="d_loss")
        self.g_loss_tracker = keras.metrics.Mean(name="g_loss")
        self.real_logit_tracker = keras.metrics.Mean(name="real_logit")
        self.fake_logit_tracker = keras.metrics.Mean(name="fake_logit")
        self.d_optimizer = None
        self.g_optimizer = None
        self._d_accumulator = self._g_accumulator = None
        if iter_size > 1:
            self._d_accumulator = GradientAccumulator(discriminator.trainable_variables, iter_size, "d_accumulator")
            self._g_accumulator = GradientAccumulator(generator.trainable_variables, iter_size, "g_accumulator")
        self.built = True

    def compile(self, d_optimizer, g_optimizer, **kwargs):
        """Sets (and builds) the two players' optimizers; other kwargs go to `Model.compile`."""
        super().compile(optimizer=None, **kwargs)
        self.d_optimizer = keras.optimizers.get(d_optimizer)
        self.g_optimizer = keras.optimizers.get(g_optimizer)
        # Built here, inside any strategy scope, so that fit never creates variables in a
        # replica context and saved optimizer state has somewhere to load into.
        self.d_optimizer.build(self.discriminator.trainable_variables)
        self.g_optimizer.build(self.generator.trainable_variables)

    @property
    def metrics(self):
        """The four trackers, so that Keras resets them every epoch."""
        return [self.d_loss_tracker, self.g_loss_tracker, self.real_logit_tracker, self.fake_logit_tracker]

    def call(self, z, training=False):
        """Generates samples from latents `z`."""
        return self.generator(z, training=training)

    def sample_latents(self, n):
        """`n` latents from the model's seed generator (distinct per replica)."""
        seed = tf.cast(self.seed_generator.next(), tf.int64)
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            seed = tf.random.experimental.stateless_fold_in(seed, context.replica_id_in_sync_group)
        return tf.random.stateless_normal([n, self.latent_dim], seed=seed)

    def train_step(self, data):
        real = data[0] if isinstance(data, (tuple, list)) else data
        self._check_batch(real)
        if self.form == "alternating":
            d_loss, g_loss, real_logit, fake_logit = self._alternating_step(real)
        else:
            d_loss, g_loss, real_logit, fake_logit = self._simultaneous_step(real)
        self.d_loss_tracker.update_state(d_loss)
        self.g_loss_tracker.update_state(g_loss)
        self.real_logit_tracker.update_state(real_logit)
        self.fake_logit_tracker.update_state(fake_logit)
        return {m.name: m.result() for m in self.metrics}

    def _check_batch(self, real):
        size = real.shape[0]
        message = f"The batch size (per replica) must be divisible by iter_size={self.iter_size}"
        if size is not None:
            if size % self.iter_size:
                raise ValueError(f"{message}. Received: batch size {size}.")
        elif self.iter_size > 1:
            tf.debugging.assert_equal(tf.shape(real)[0] % self.iter_size, 0, message=message)

    def _simultaneous_step(self, real):
        def micro_step(real, z):
            r = steps.simgd_step(self.generator, self.discriminator, real, z, self.gan_loss, self.form)
            means = (r.d_loss, r.g_loss, tf.reduce_mean(r.real_logits), tf.reduce_mean(r.fake_logits))
            return (r.d_grads, r.g_grads), means

        z = self.sample_latents(tf.shape(real)[0])
        (d_grads, g_grads), means = self._accumulate(
            micro_step, (real, z), (self._d_accumulator, self._g_accumulator), num_means=4
        )
        self._apply(self.d_optimizer, d_grads, self.discriminator)
        self._apply(self.g_optimizer, g_grads, self.generator)
        return means

    def _alternating_step(self, real):
        def d_micro_step(real, z):
            r = steps.discriminator_step(self.generator, self.discriminator, real, z, self.gan_loss)
            return (r.d_grads,), (r.d_loss, tf.reduce_mean(r.real_logits), tf.reduce_mean(r.fake_logits))

        def g_micro_step(z):
            r = steps.generator_step(self.generator, self.discriminator, z, self.gan_loss)
            return (r.g_grads,), (r.g_loss,)

        n = tf.shape(real)[0]
        for _ in range(self.n_dis):
            (d_grads,), (d_loss, real_logit, fake_logit) = self._accumulate(
                d_micro_step, (real, self.sample_latents(n)), (self._d_accumulator,), num_means=3
            )
            self._apply(self.d_optimizer, d_grads, self.discriminator)
        (g_grads,), (g_loss,) = self._accumulate(g_micro_step, (self.sample_latents(n),), (self._g_accumulator,), num_means=1)
        self._apply(self.g_optimizer, g_grads, self.generator)
        return d_loss, g_loss, real_logit, fake_logit

    def _accumulate(self, step, inputs, accumulators, num_means):
        """Runs `step` on the whole batch, or on `iter_size` micro-batches one after another.

        `step(*inputs) -> (grads per accumulator, means)`; returns the (averaged) gradients
        and the means averaged over micro-batches.
        """
        k = self.iter_size
        if k == 1:
            return step(*inputs)
        micro = [tf.reshape(x, tf.concat([[k, -1], tf.shape(x)[1:]], 0)) for x in inputs]
        for accumulator in accumulators:
            accumulator.reset()

        def body(i, sums):
            grads, means = step(*[m[i] for m in micro])
            for accumulator, g in zip(accumulators, grads):
                accumulator.accumulate(g)
            return i + 1, [s + tf.cast(m, tf.float32) for s, m in zip(sums, means)]

        # parallel_iterations=1: micro-batches run strictly one after another, so only one
        # micro-batch's activations are alive at a time.
        _, sums = tf.while_loop(
            lambda i, _: i < k, body, (tf.constant(0), [tf.zeros([])] * num_means), parallel_iterations=1
        )
        return tuple(a.gradients() for a in accumulators), [s / k for s in sums]

    def _apply(self, optimizer, grads, model):
        if optimizer is None:
            raise ValueError("FusedPropGAN must be compiled with compile(d_optimizer=..., g_optimizer=...) before training.")
        replicas = _num_replicas()
        if replicas > 1:  # the optimizer sums gradients over replicas; we want their mean
            grads = [g / replicas for g in grads]
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

    # Keras does not save a SeedGenerator's state; without it a resumed run would replay the
    # latents of the first steps instead of continuing the sequence.
    def save_own_variables(self, store):
        """Saves the latent sampler's state (the model owns no other variables)."""
        super().save_own_variables(store)
        store["latent_seed_state"] = self.seed_generator.state

    def load_own_variables(self, store):
        """Restores what `save_own_variables` saved."""
        self.seed_generator.state.assign(store["latent_seed_state"])
        super().load_own_variables({key: store[key] for key in store.keys() if key != "latent_seed_state"})

    def export_generator(self, directory):
        """Writes G as a SavedModel whose `serve(z)` returns `generator(z, training=False)`."""
        self.generator.export(directory, verbose=False)

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
