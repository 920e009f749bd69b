"""The training forms as objects: what one `FusedPropGAN.train_step` does, phase by phase.

A form is a sequence of `Phase`s, each one optimizer update (of D, of G, or of both from one
computation), with a function that forms the gradients of the players it updates from one
(micro-)batch, through the pure steps of `tf_fusedprop.steps`:

| form | phases of one step |
|---|---|
| `Alternating(n_dis)` | `n_dis` x D (`discriminator_step`, fresh latents each), then G (`generator_step`, fresh latents) |
| `SinglePass("fused" / "inverse" / "adaptive", n_dis)` | `n_dis - 1` x D, then both players from one forward and one backward pass (`steps.single_pass_step`) |
| `Simultaneous(n_dis)` | `n_dis - 1` x D, then both players from one forward and two backward passes (two-pass SimGD, the reference: `steps.two_pass_step`) |

With `n_dis > 1` a simultaneous form's first `n_dis - 1` D updates are conventional D steps
(fresh latents each), and its last one updates both players from one pass: the paper's
limitation (no n_dis for FusedProp) removed, at the cost of one D step per extra D update.

This module is the one place that knows the forms by name: `FORMS` lists them, `get("fused")`
(or any name of `FORMS`, or a `get_config()` dict) gives the form of that name, and everything
else (`FusedPropGAN`, `compute_gradients`, `train.py`'s configs, the benchmarks) asks it. A new
form is a class and an entry of `_REGISTRY`. Which form trains which update of a run (a warm
start, a periodic mix) is `tf_fusedprop.schedules`'.
"""

import collections
import functools

import tensorflow as tf

from tf_fusedprop import losses as fp_losses
from tf_fusedprop import steps
from tf_fusedprop._checks import Registry, positive_int
from tf_fusedprop.batch import Batch

__all__ = [
    "FORMS",
    "SIMULTANEOUS_FORMS",
    "SINGLE_PASS_FORMS",
    "Alternating",
    "Form",
    "Phase",
    "SinglePass",
    "Simultaneous",
    "check_form",
    "compute_gradients",
    "get",
    "names",
    "simgd_step",
    "supports",
]

D, G = "discriminator", "generator"


class Phase(collections.namedtuple("Phase", ["name", "players", "logs", "gradients"])):
    """One optimizer update of a training step.

    Attributes:
      name: "discriminator", "generator" or "both".
      players: the players it updates ("discriminator", "generator").
      logs: the names of the scalar diagnostics it reports (`d_loss`, `g_loss`, `real_logit`,
        `fake_logit`; a phase that updates D also `fake_spread`, `steps.spread_ratio` of G's
        samples to the real batch, `fake_coverage`, their `steps.coverage` of it, and
        `real_sign`, the mean of `sign(D(real))`, which an adaptive `DiffAugment` follows).
      gradients: `(generator, discriminator, batch, loss, options) -> (grads, logs)`: `grads`
        maps each player it updates to gradients aligned with its trainable variables, `logs`
        maps `logs`' names to scalars.
    """


def _d_logs(r):
    """The logs of a phase that updates D, from its `StepResult` or `DiscriminatorStep`."""
    return {
        "d_loss": r.d_loss,
        "real_logit": tf.reduce_mean(r.real_logits),
        "fake_logit": tf.reduce_mean(r.fake_logits),
        "fake_spread": r.fake_spread,
        "fake_coverage": r.fake_coverage,
        "real_sign": tf.reduce_mean(tf.sign(r.real_logits)),
    }


_D_LOGS = ("d_loss", "real_logit", "fake_logit", "fake_spread", "fake_coverage", "real_sign")


def _discriminator_gradients(generator, discriminator, batch, loss, options):
    r = steps.discriminator_step(generator, discriminator, batch, loss, options=options)
    return {D: r.d_grads}, _d_logs(r)


def _generator_gradients(generator, discriminator, batch, loss, options):
    r = steps.generator_step(generator, discriminator, batch, loss, options=options)
    return {G: r.g_grads}, {"g_loss": r.g_loss}


def _simultaneous_phase(step):
    """The phase that updates both players from `step(generator, discriminator, batch, loss,
    options=...)`, a `StepResult` of checked arguments."""

    def gradients(generator, discriminator, batch, loss, options):
        r = step(generator, discriminator, batch, loss, options=options)
        return {D: r.d_grads, G: r.g_grads}, {"g_loss": r.g_loss, **_d_logs(r)}

    return Phase("both", (D, G), ("g_loss",) + _D_LOGS, gradients)


DISCRIMINATOR = Phase("discriminator", (D,), _D_LOGS, _discriminator_gradients)
GENERATOR = Phase("generator", (G,), ("g_loss",), _generator_gradients)


class Form:
    """A training form: a name, its phases, and the checks of what it can train.

    Args:
      n_dis: D updates per G update (per step).
    """

    name = None
    #: Whether one backward pass carries both players' losses, so that they share one loss scale.
    shares_loss_scale = True

    def __init__(self, n_dis=1):
        self.n_dis = positive_int("n_dis", n_dis)

    @property
    def phases(self):
        """The step's `Phase`s, in order."""
        raise NotImplementedError

    def supports(self, loss):
        """Whether this form can train the `GANLoss` `loss`."""
        return True

    def check_loss(self, loss):
        """The `GANLoss` of `loss` (a name or `GANLoss`) if this form can train it.

        Raises:
          ValueError: an unknown loss, or one this form cannot train (naming the forms that can).
        """
        loss = fp_losses.get(loss)
        if not self.supports(loss):
            valid = [name for name in FORMS if get(name).supports(loss)]
            raise ValueError(
                f"The {loss.name} loss does not support form={self.name!r}. Use one of: {', '.join(valid)}."
            )
        return loss

    def check_discriminator(self, discriminator):
        """Raises ValueError if this form cannot train `discriminator` exactly."""

    def check(self, loss, generator, discriminator, generator_inputs=None):
        """Validates the (loss, form) pair and the discriminator; returns the `GANLoss`.

        `generator_inputs` (a few of G's inputs) are for forms that probe D numerically.

        Raises:
          ValueError: a pair the loss does not support, or a D the form cannot train exactly.
        """
        loss = self.check_loss(loss)
        self.check_discriminator(discriminator)
        return loss

    def get_config(self):
        """The form as plain values (`get` rebuilds it)."""
        return {"name": self.name, "n_dis": self.n_dis}

    def __repr__(self):
        arguments = ", ".join(f"{key}={value!r}" for key, value in self.get_config().items() if key != "name")
        return f"{type(self).__name__}({arguments})"


class Alternating(Form):
    """Conventional AltGD: `n_dis` D updates, each with fresh latents and the same real batch,
    then one G update with fresh latents (efficient: TF forms D's input gradients only)."""

    name = "alternating"
    shares_loss_scale = False

    @property
    def phases(self):
        """`n_dis` D phases, then a G phase."""
        return (DISCRIMINATOR,) * self.n_dis + (GENERATOR,)


class SinglePass(Form):
    """FusedProp's single-pass SimGD: one forward and one backward pass update both players.

    Args:
      rule: "fused" (FusedProp), "inverse" (InvFusedProp) or "adaptive" (per sample, the one
        whose factor cannot overflow); see `steps.SinglePassRule`.
      n_dis: D updates per step; the first `n_dis - 1` are D-only (conventional D steps with
        fresh latents), the last updates both players from one pass.
      check_independence: probe D once for cross-sample coupling, which would make the
        single-pass gradients wrong (`steps.check_sample_independence`); False skips it, for
        a D you know to be per-sample.
    """

    def __init__(self, rule="fused", n_dis=1, check_independence=True):
        if rule not in _RULES:
            raise ValueError(f"Unknown single-pass rule. Received: rule={rule!r}. Valid rules: {', '.join(_RULES)}.")
        #: The `steps.SinglePassRule` that picks, per fake sample, the term back-propagated.
        self.rule = _RULES[rule]
        self.name = rule
        super().__init__(n_dis)
        self.check_independence = bool(check_independence)
        self._both = _simultaneous_phase(self.step)

    @property
    def phases(self):
        """`n_dis - 1` D phases, then one phase updating both players."""
        return (DISCRIMINATOR,) * (self.n_dis - 1) + (self._both,)

    def step(self, generator, discriminator, batch, loss, *, options=None):
        """Both players' gradients from one pass (`steps.single_pass_step` by `rule`)."""
        return steps.single_pass_step(generator, discriminator, batch, loss, self.rule, options=options)

    def supports(self, loss):
        """Every loss, except one without `lambda` (hinge) for the fused rule."""
        return loss.has_lambda or not self.rule.needs_lambda

    def check_discriminator(self, discriminator):
        """A D that treats samples independently, InvFusedProp-capable where the rule inverts
        (`steps.check_discriminator`)."""
        steps.check_discriminator(discriminator, self.rule)

    def check(self, loss, generator, discriminator, generator_inputs=None):
        """As `Form.check`, and the numerical independence probe of D on G's samples of
        `generator_inputs`."""
        loss = super().check(loss, generator, discriminator, generator_inputs)
        if self.check_independence and generator_inputs is not None:
            probe = steps.discriminator_probe(generator, generator_inputs)
            steps.check_sample_independence(discriminator, probe, self.name)
        return loss

    def get_config(self):
        """The form as plain values (`get` rebuilds it)."""
        return {**super().get_config(), "check_independence": self.check_independence}

    def __repr__(self):
        return f"SinglePass({self.name!r}, n_dis={self.n_dis}, check_independence={self.check_independence})"


class Simultaneous(Form):
    """Two-pass SimGD, the reference: one forward pass, one backward pass per player's loss.

    Args:
      n_dis: D updates per step; the first `n_dis - 1` are D-only.
    """

    name = "simultaneous"

    def __init__(self, n_dis=1):
        super().__init__(n_dis)
        self._both = _simultaneous_phase(self.step)

    @property
    def phases(self):
        """`n_dis - 1` D phases, then one phase updating both players."""
        return (DISCRIMINATOR,) * (self.n_dis - 1) + (self._both,)

    def step(self, generator, discriminator, batch, loss, *, options=None):
        """Both players' gradients from two backward passes (`steps.two_pass_step`)."""
        return steps.two_pass_step(generator, discriminator, batch, loss, options=options)


_RULES = {rule.name: rule for rule in steps.SINGLE_PASS_RULES}
# The one table of forms by name: name -> constructor of the form (taking its keyword arguments).
_REGISTRY = Registry(
    "training form",
    {
        **{name: functools.partial(SinglePass, name) for name in _RULES},
        Simultaneous.name: Simultaneous,
        Alternating.name: Alternating,
    },
    argument="form",
    plural="forms",
)


def names():
    """The forms' names (`FORMS`)."""
    return _REGISTRY.names()


#: The forms' names: `fused`, `inverse` and `adaptive` are single-pass FusedProp forms;
#: `simultaneous` is two-pass SimGD and `alternating` the conventional AltGD baseline.
FORMS = names()
#: The forms that run one forward and one backward pass per step.
SINGLE_PASS_FORMS = tuple(_RULES)
#: The forms whose step ends with one update of both players from one computation (`step`).
SIMULTANEOUS_FORMS = tuple(name for name, make in _REGISTRY.items() if hasattr(make(), "step"))


def get(form, **kwargs):
    """The `Form` that `form` names: a form itself, a name of `FORMS` (with the form's
    constructor `kwargs`, e.g. `n_dis=5`), or a `get_config()` dict.

    Raises:
      ValueError: an unknown name.
    """
    if isinstance(form, Form):
        if kwargs:
            raise ValueError(f"Pass the arguments to the form's constructor. Received: form={form!r}, {kwargs}")
        return form
    if isinstance(form, dict):
        kwargs = {**{key: value for key, value in form.items() if key != "name"}, **kwargs}
        form = form.get("name")
    return _REGISTRY.get(form)(**kwargs)


def supports(loss, form):
    """Whether `loss` (a name or `GANLoss`) can be trained with `form` (a name of `FORMS`).

    Only `fused` needs FusedProp's factor `lambda`, which the hinge loss does not have.
    """
    return form in FORMS and get(form).supports(fp_losses.get(loss))


def check_form(loss, form):
    """Validates a (loss, form) pair; returns the `GANLoss`.

    Raises:
      ValueError: an unknown loss or form, or a pair the loss does not support; the message
        says what to use instead.
    """
    loss = fp_losses.get(loss)
    return get(form).check_loss(loss)


def simgd_step(
    generator, discriminator, batch, loss="nonsaturating", form="fused", *, options=None, check_independence=True
):
    """Runs one simultaneous step's forward and backward passes on a `Batch`; returns a
    `steps.StepResult`.

    Same contract as `compute_gradients`, with the losses and logits returned as well;
    `options` is a `steps.StepOptions` (augmentation, regularizers, loss scaling). `d_loss`
    includes the regularizers' penalty; the reported losses are never loss-scaled.
    """
    form = get(form)
    loss = form.check_loss(loss)
    if not hasattr(form, "step"):
        raise ValueError(
            f"compute_gradients computes one simultaneous step; form={form.name!r} alternates "
            f"updates and is a training loop: use tf_fusedprop.FusedPropGAN(form={form.name!r}) "
            "or discriminator_step and generator_step."
        )
    form.check_discriminator(discriminator)
    if check_independence and isinstance(form, SinglePass):
        probe = steps.probe_batch(generator, batch.z.shape[1:], batch.z.dtype, labels=batch.fake_labels)
        if probe is not None:
            steps.check_sample_independence(discriminator, probe, form.name)
    return form.step(generator, discriminator, batch, loss, options=options)


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
      generator, discriminator: Keras models from latents `z` (and labels) to samples, and
        from samples (and labels) to one logit per sample.
      real, z: a batch of real samples and one of latents, of the same size.
      loss: a loss name (`tf_fusedprop.losses.names()`) or `GANLoss`.
      form: "fused", "inverse", "adaptive" (single pass) or "simultaneous" (two backward
        passes, the reference).
      real_labels, fake_labels: `[batch]` int labels for a conditional G and D (both or none):
        G gets `[z, fake_labels]`, D gets `[samples, labels]`.
      augment: a differentiable per-sample map applied to D's whole input batch (DiffAugment).
      regularizers: D's gradient penalties (`tf_fusedprop.R1`, `GradientPenalty`).
      seed: a `[2]` int seed of the regularizers' randomness (GradientPenalty's interpolation
        weights); None: TensorFlow's global generator.
      check_independence: for the single-pass forms, probe D once (per discriminator) for
        cross-sample coupling, which would make their gradients wrong (False: you know better).

    Returns:
      `(d_grads, g_grads)`, aligned with the players' `trainable_variables`.

    Raises:
      ValueError: unknown loss or form, a (loss, form) pair the loss does not support
        (hinge with "fused"), or a discriminator the form cannot handle exactly.
    """
    regularizers = tuple(regularizers if seed is None else (r.bind(seed) for r in regularizers))
    batch, options = Batch(real, z, real_labels, fake_labels), steps.StepOptions(augment, regularizers)
    result = simgd_step(
        generator, discriminator, batch, loss, form, options=options, check_independence=check_independence
    )
    return result.d_grads, result.g_grads
